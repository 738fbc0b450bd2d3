package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// A commit whose append timed out after it was written is answered
// COORDINATOR_NOT_AVAILABLE, yet its record may commit: it takes effect,
// in log order, when a later append of the term commits (the HW passed
// it then), as Kafka 4.x's coordinator shows it once the HW passes it.
// One refused before it was written (a lost leadership) never does.
// `check --random 2000` found the coordinator answering the overwritten
// offset while its log held the commit (seed 1565).
// Reference: spec/SEMANTICS.md, Committed offsets and coordinator failover.
func TestWrittenCommitTakesEffectWithTheNextAppend(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	t0 := kafka.TopicPartition{Topic: "t", Partition: 0}
	t1 := kafka.TopicPartition{Topic: "t", Partition: 1}
	offsetOf := func(tp kafka.TopicPartition) int64 { return h.fetch("g", tp).Partitions[0].Offset }

	h.finishAppends(nil)
	late := h.commit("g", ids[0], gen, off("t", 0, 5))
	h.finishAppends(kafka.ErrRequestTimedOut)
	assert.Equal(t, kafka.ErrCoordinatorNotAvailable, h.commitErr(late))
	assert.Equal(t, int64(-1), offsetOf(t0), "not visible until an append shows the HW passed it")

	refused := h.commit("g", ids[0], gen, off("t", 1, 9))
	h.finishAppends(errLostLeadership)
	assert.Equal(t, kafka.ErrNotCoordinator, h.commitErr(refused))

	next := h.commit("g", ids[0], gen, off("t", 1, 7))
	h.finishAppends(nil)
	require.NoError(t, h.commitErr(next))
	assert.Equal(t, int64(5), offsetOf(t0), "the written commit took effect")
	assert.Equal(t, int64(7), offsetOf(t1))

	// Log order: a written commit of a partition is overwritten by a
	// later commit of it, never the other way round.
	old := h.commit("g", ids[0], gen, off("t", 0, 6))
	h.finishAppends(kafka.ErrNotEnoughReplicasAfterAppend)
	newer := h.commit("g", ids[0], gen, off("t", 0, 8))
	h.finishAppends(nil)
	assert.Equal(t, kafka.ErrCoordinatorNotAvailable, h.commitErr(old))
	require.NoError(t, h.commitErr(newer))
	assert.Equal(t, int64(8), offsetOf(t0))
}
