package broker_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// retentionOpts: 400-byte segments, logs kept to 1200 bytes, checked
// every second.
func retentionOpts() opts {
	return opts{segmentBytes: 400, tweak: func(c *broker.Config) {
		c.LogRetentionBytes = 1200
		c.LogRetentionCheckIntervalMs = 1000
	}}
}

// Retention deletes a leader's oldest segments once they are committed:
// ListOffsets' earliest offset is the new log start offset, a fetch below
// it is OFFSET_OUT_OF_RANGE naming it, and one from it reads on.
func TestRetentionMovesTheLogStartOffset(t *testing.T) {
	c, leader := newTopic(t, retentionOpts())
	for i := range 60 {
		c.produceOK(leader, tp0, fmt.Sprint("value-", i))
	}
	c.tick(1500)
	start := c.replica(leader, tp0).LogStart()
	require.Positive(t, start, "retention deleted the oldest segments")
	assert.LessOrEqual(t, start, c.replica(leader, tp0).HW())
	assert.Equal(t, start, c.listOffset(leader, tp0, false).Offset, "earliest is the log start offset")

	c.fetch(leader, tp0, start-1, 0, 0)
	resp := takeOne[broker.FetchResponse](c)
	require.ErrorIs(t, resp.Err, kafka.ErrOffsetOutOfRange)
	assert.Equal(t, start, resp.LogStart)
	got := c.read(leader, tp0, start)
	require.NotEmpty(t, got.Batches)
	assert.Equal(t, start, got.LogStart)
	assert.Equal(t, fmt.Sprint("value-", start), values(got.Batches)[0])
}

// A follower down while the leader's retention passed its log end comes
// back below the leader's log start: it starts again there, empty, and
// copies the rest; nothing it then holds differs from the leader.
func TestFollowerBelowTheLeaderLogStartStartsAgainThere(t *testing.T) {
	o := retentionOpts()
	o.lagMs = 2000
	c, leader := newTopic(t, o)
	f := broker.NodeID(leader%3 + 1)
	c.produceOK(leader, tp0, "first")
	c.tick(2 * fetchWaitMs)
	c.crash(f)
	c.tick(3000) // out of the ISR
	for i := range 60 {
		c.produceOK(leader, tp0, fmt.Sprint("value-", i))
	}
	c.tick(1500)
	start := c.replica(leader, tp0).LogStart()
	require.Greater(t, start, int64(1), "the leader deleted past the follower's end")
	c.start(f)
	c.tick(2000)
	r := c.replica(f, tp0)
	assert.Equal(t, c.replica(leader, tp0).LEO(), r.LEO(), "caught up")
	assert.GreaterOrEqual(t, r.LogStart(), start, "it starts at the leader's log start or later (its own retention)")
	want := storedValues(t, c.nodes[leader].disk, tp0)
	got := storedValues(t, c.nodes[f].disk, tp0)
	require.NotEmpty(t, got)
	assert.Equal(t, want[len(want)-len(got):], got, "the follower holds a suffix of the leader's log")
}

// Retention deletes only below the HW: records a follower has yet to copy
// stay, however far past retention.bytes the log grows.
func TestRetentionKeepsWhatIsNotCommitted(t *testing.T) {
	c, leader := newTopic(t, retentionOpts())
	for i := range 10 {
		c.produceOK(leader, tp0, fmt.Sprint("committed-", i))
	}
	f := broker.NodeID(leader%3 + 1)
	c.pause(f) // still in the ISR: the HW waits for it
	for i := range 60 {
		c.produce(leader, tp0, partition.AcksLeader, fmt.Sprint("pending-", i))
	}
	c.tick(1500)
	r := c.replica(leader, tp0)
	require.Greater(t, r.LEO(), r.HW()+40, "most of the log is above the HW")
	assert.LessOrEqual(t, r.LogStart(), r.HW(), "nothing above the HW is deleted")
}
