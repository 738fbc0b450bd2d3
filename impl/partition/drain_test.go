package partition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/storage"
)

// drain is Ready then Advance: a test's driver carries out each Ready at
// once (kafka.Handover).
func drain(c *Replica) Ready {
	rd := c.Ready()
	c.Advance()
	return rd
}

func TestReadyIsHandedOverOnceUntilAdvanced(t *testing.T) {
	r, err := New(DefaultConfig(1), kafka.TopicPartition{Topic: "t"}, nil, 0, storage.EpochCache{}, nil)
	require.NoError(t, err)
	r.Ready()
	assert.Panics(t, func() { r.Ready() }, "a second Ready before Advance")
	r.Advance()
	assert.NotPanics(t, func() { r.Ready() })
}
