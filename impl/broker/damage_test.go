package broker_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/storage"
)

// lostWarnings are the LOST COMMITTED DATA warnings among events.
func lostWarnings(events []broker.Event) []string {
	var lost []string
	for _, e := range events {
		if e.Kind == "warning" && strings.Contains(e.Detail, "LOST COMMITTED DATA") {
			lost = append(lost, e.String())
		}
	}
	return lost
}

// A start trusts the segments below the recovery point, as Kafka does, so
// damage there is not found at open; the read that meets it fails its CRC
// check, and the broker crashes rather than serve it, leaving a marker so
// that its next start reads every segment: that one cuts the log at the
// damage and reports the lost data, as for damage found at open.
func TestDamageInATrustedSegmentIsFoundByTheReadThatMeetsIt(t *testing.T) {
	// Producer snapshots every second, so that a start does not replay
	// the whole log to rebuild the producer state.
	c, leader := newTopic(t, opts{flush: true, segmentBytes: 400, checkpointMs: 1000})
	// 1.6 MiB: the first batches are no longer among the newest a log
	// keeps in memory, so a read of them goes to the file.
	big := strings.Repeat("x", 40<<10)
	for i := range 40 {
		c.produceOK(leader, tp0, fmt.Sprint("value-", i, big))
	}
	c.tick(2000)
	n := c.nodes[leader]
	segs, err := n.disk.List(tp0Dir + "/")
	require.NoError(t, err)
	segs = slices.DeleteFunc(segs, func(s string) bool { return !storage.IsSegmentFile(s) })
	require.Greater(t, len(segs), 3, "small segments: most are below the recovery point")
	first := tp0Dir + "/" + storage.LogFile
	flipMiddle(t, n.disk, first)

	_, err = handleDirect(c, leader, broker.FetchRequest{Correlation: c.nextCorr(), TopicPartition: tp0, Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1})
	var fe *broker.FailpointError
	require.ErrorAs(t, err, &fe, "the damaged batch must not be served")
	assert.Equal(t, "storage", fe.Name)
	assert.Equal(t, broker.ActionCrash, fe.Action)
	c.crash(leader)
	const marker = "verify-logs-at-start"
	data, err := n.disk.ReadFile(marker)
	require.NoError(t, err, "the failed read leaves the marker")

	// Without the marker the next start would trust the damaged segment.
	require.NoError(t, n.disk.Remove(marker))
	probe, err := broker.Open(n.cfg, n.disk, 98, c.now, nil)
	require.NoError(t, err)
	assert.Empty(t, lostWarnings(probe.TakeEvents()), "below the recovery point nothing is read at a start")

	require.NoError(t, n.disk.WriteFileAtomic(marker, data))
	b, err := broker.Open(n.cfg, n.disk, 99, c.now, nil)
	require.NoError(t, err)
	lost := lostWarnings(b.TakeEvents())
	require.Len(t, lost, 1, "the marked start reads every segment and finds the damage")
	assert.Contains(t, lost[0], first)
	_, err = n.disk.ReadFile(marker)
	assert.Error(t, err, "the marker is gone once the logs are verified")

	// log_verify_on_start does the same without a marker: on a follower,
	// whose log is intact so far.
	f := c.nodes[leader%3+1]
	c.crash(f.id)
	flipMiddle(t, f.disk, first)
	probe, err = broker.Open(f.cfg, f.disk, 100, c.now, nil)
	require.NoError(t, err)
	assert.Empty(t, lostWarnings(probe.TakeEvents()))
	f.cfg.LogVerifyOnStart = true
	b, err = broker.Open(f.cfg, f.disk, 101, c.now, nil)
	require.NoError(t, err)
	assert.Len(t, lostWarnings(b.TakeEvents()), 1)
}

// Without a producer snapshot a start replays the whole log to rebuild the
// producer state; a replay that meets damage in a trusted segment makes
// the start read every segment, which cuts the log before the damage,
// rather than fail the broker.
func TestReplayMeetingDamageVerifiesTheLog(t *testing.T) {
	c, leader := newTopic(t, opts{flush: true, segmentBytes: 400})
	for i := range 40 {
		c.produceOK(leader, tp0, fmt.Sprint("value-", i))
	}
	c.tick(2 * fetchWaitMs)
	c.crash(2)
	n := c.nodes[2]
	flipMiddle(t, n.disk, tp0Dir+"/"+storage.LogFile)
	b, err := broker.Open(n.cfg, n.disk, 99, c.now, nil)
	require.NoError(t, err)
	assert.Len(t, lostWarnings(b.TakeEvents()), 1)
}

// Damage faults look for the oldest segment left: retention deletes the
// first ones.
func TestFirstSegmentIsTheOldestLeft(t *testing.T) {
	dir := tp0Dir + "/"
	names := []string{dir + "hw-checkpoint", storage.SegmentName(tp0Dir, 2000), storage.SegmentName(tp0Dir, 150), "p/t/1/" + storage.LogFile}
	assert.Equal(t, storage.SegmentName(tp0Dir, 150), broker.FirstSegment(tp0, names))
	assert.Equal(t, broker.LogFile(tp0), broker.FirstSegment(tp0, nil), "none: the first a log has")
}

// A start that finds lost data keeps the finding on disk until the loss is
// made good: a process stopped cleanly before the controller heard of it
// leaves a log that no longer shows the loss (its clean stop checkpoints
// an HW clamped to the cut log), and its successor reports it all the
// same; once a leader has added the replica back to the ISR, the next
// start reports nothing. `check --random 2000` found the first (a damaged
// last ISR member stopped cleanly before it registered, then led).
// Reference: spec/SEMANTICS.md, Durability ("Lost data").
func TestLostDataOutlivesACleanStopUntilBackInTheISR(t *testing.T) {
	c, leader := newTopic(t, opts{flush: true})
	for i := range 20 {
		c.produceOK(leader, tp0, fmt.Sprint("value-", i))
	}
	c.tick(2 * fetchWaitMs)
	f := leader%3 + 1
	c.crash(f)
	n := c.nodes[f]
	flipMiddle(t, n.disk, tp0Dir+"/"+storage.LogFile)

	b, err := broker.Open(n.cfg, n.disk, 90, c.now, nil)
	require.NoError(t, err)
	require.Len(t, lostWarnings(b.TakeEvents()), 1, "the damage is found")
	b.BeginShutdown(c.now)
	require.True(t, b.ShutdownApproved(), "not registered: it may stop at once")
	require.NoError(t, b.Shutdown())

	b, err = broker.Open(n.cfg, n.disk, 91, c.now, nil)
	require.NoError(t, err)
	lost := lostWarnings(b.TakeEvents())
	require.Len(t, lost, 1, "the clean successor still reports the loss")
	assert.Contains(t, lost[0], "an earlier start found it lost committed data")

	// Back in the cluster: it copies the partition from the leader, which
	// adds it back to the ISR; the marker goes with the loss.
	c.start(f)
	c.tickUntil(10_000, func() bool { return slices.Contains(c.state(tp0).ISR, int32(f)) }, "back in the ISR")
	c.tick(500)
	c.crash(f)
	b, err = broker.Open(n.cfg, n.disk, 92, c.now, nil)
	require.NoError(t, err)
	assert.Empty(t, lostWarnings(b.TakeEvents()), "made good: nothing to report")
}
