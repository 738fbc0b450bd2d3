package partition

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// brokenLog is a Log whose reads fail once broken is set.
type brokenLog struct {
	durable
	broken bool
}

var errDisk = errors.New("disk gone")

func (b *brokenLog) Read(offset int64, maxBytes int) ([]record.Batch, error) {
	if b.broken {
		return nil, errDisk
	}
	return b.durable.Read(offset, maxBytes)
}

// A replica on a Log reads its batches from it and holds only what it
// appended since its last Ready; a read that fails reaches the caller in
// Ready, never as batches that are not there.
func TestReplicaOnALog(t *testing.T) {
	st := &brokenLog{durable: durable{log: stored([]int32{1, 1, 1}, "a", "b", "c")}}
	r, err := NewOnLog(testConfig(1), testTP, st, 3, epochCache(t, entry(1, 0)), nil)
	require.NoError(t, err)
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 1}, 0)
	res := r.Read(1, 0, -1)
	require.NoError(t, res.Err)
	require.Len(t, res.Batches, 1)
	assert.Equal(t, "b", string(res.Batches[0].Records[0].Value), "read from the Log")

	require.NoError(t, r.Produce(ProduceRequest{Acks: AcksLeader, Batch: batch("d")}, 0).Err)
	assert.Equal(t, int64(4), r.LEO(), "the append waits in Ready, and counts")
	assert.Len(t, r.Log(), 4)
	rd := r.Ready()
	require.Len(t, rd.Append, 1)
	st.log = append(st.log, rd.Append[0])

	st.broken = true
	res = r.Read(0, 1<<20, -1)
	assert.Empty(t, res.Batches)
	rd = r.Ready()
	require.ErrorIs(t, rd.ReadErr, errDisk)
	assert.Nil(t, r.Ready().ReadErr, "handed over once")
}

// NewOnLog reads the whole Log to rebuild producer state without a
// snapshot, and a failed read fails the build.
func TestNewOnLogRebuildsProducers(t *testing.T) {
	idem := batch("x")
	idem.ProducerID, idem.ProducerEpoch, idem.BaseSequence = 7, 0, 0
	st := &brokenLog{durable: durable{log: []record.Batch{idem}}}
	r, err := NewOnLog(testConfig(1), testTP, st, 1, epochCache(t), nil)
	require.NoError(t, err)
	snap := r.ProducerSnapshot()
	require.Len(t, snap.Producers, 1)
	assert.Equal(t, int64(7), snap.Producers[0].ProducerID, "rebuilt from the Log")

	st.broken = true
	_, err = NewOnLog(testConfig(1), testTP, st, 1, storage.EpochCache{}, nil)
	require.ErrorIs(t, err, errDisk)
}

// Within one step, a truncation the Log has yet to apply hides what the
// Log holds past it, and appends after it follow it: every read of the
// replica sees its own log, not the Log's.
func TestLogReadsSeeAPendingTruncation(t *testing.T) {
	st := &brokenLog{durable: durable{log: stored([]int32{1, 1, 1, 1}, "a", "b", "c", "d")}}
	r, err := NewOnLog(testConfig(1), testTP, st, 1, epochCache(t, entry(1, 0)), nil)
	require.NoError(t, err)
	require.Equal(t, int64(2), r.truncate(2))
	b := batch("x")
	b.BaseOffset, b.LeaderEpoch = 2, 2
	r.append(b)
	var got []string
	for _, b := range r.Log() {
		got = append(got, string(b.Records[0].Value))
	}
	assert.Equal(t, []string{"a", "b", "x"}, got)
	assert.Equal(t, int64(3), r.LEO())
	rd := r.Ready()
	assert.Equal(t, int64(2), rd.Truncate)
	require.Len(t, rd.Append, 1)
}
