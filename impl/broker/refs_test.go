package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/partition"
)

// Every answer a replica gives goes to what registered its ref, once: a
// second answer under the same ref, one under a ref nothing waits for and
// one of the wrong type are errors (the broker crashes loudly), never
// delivered to the wrong waiter.
func TestAnswersReachTheirRefOnce(t *testing.T) {
	b := &Broker{waiting: map[uint64]func(partition.Reply) error{}}
	var got []int64
	ref := await(b, func(a partition.ProduceAnswer) error { got = append(got, a.BaseOffset); return nil })
	require.NoError(t, b.deliver(partition.Answer{Ref: ref, Reply: partition.ProduceAnswer{BaseOffset: 7}}))
	assert.Equal(t, []int64{7}, got)
	assert.Error(t, b.deliver(partition.Answer{Ref: ref, Reply: partition.ProduceAnswer{BaseOffset: 8}}), "answered twice")
	assert.Error(t, b.deliver(partition.Answer{Ref: ref + 1, Reply: partition.ProduceAnswer{}}), "never asked")
	read := await(b, func(partition.ReadResult) error { t.Fatal("a produce's answer reached a read"); return nil })
	assert.Error(t, b.deliver(partition.Answer{Ref: read, Reply: partition.ProduceAnswer{}}), "the wrong kind of answer")
	assert.Equal(t, []int64{7}, got)
	assert.Empty(t, b.waiting, "every ref answered or refused is forgotten")
}
