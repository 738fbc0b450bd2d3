package storage

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/record"
)

// timedBatches appends n one-record batches whose timestamps are 1000 ms
// apart from 0, and returns them as the log gives them back.
func timedBatches(t *testing.T, l *Log, n int) []record.Batch {
	t.Helper()
	var out []record.Batch
	for i := range n {
		b := record.Batch{BaseOffset: l.LEO(), LeaderEpoch: 1, ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
			Records: []record.Record{{Timestamp: int64(i) * 1000, Value: []byte("a value of some length")}}}
		require.NoError(t, l.Append(b))
		out = append(out, stored(t, b))
	}
	return out
}

// checkStart checks that l holds exactly written from its start offset
// on, its start a segment's base, and nothing below it.
func checkStart(t *testing.T, l *Log, written []record.Batch) {
	t.Helper()
	start := l.StartOffset()
	got := mustReadAll(t, l)
	require.NotEmpty(t, got)
	assert.Equal(t, start, got[0].BaseOffset)
	assert.Equal(t, written[record.Search(written, start):], got)
	below, err := l.Read(start-1, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, below, "nothing is read below the log start offset")
}

func TestRetentionByBytesKeepsTheNewestSegments(t *testing.T) {
	cfg := small
	cfg.RetentionBytes = 2000
	d := NewSimDisk()
	l, _ := openWith(t, d, cfg)
	written := appendN(t, l, rand.New(rand.NewPCG(61, 62)), 80)
	before := len(l.Segments())
	n, err := l.DeleteRetained(0, l.LEO())
	require.NoError(t, err)
	require.Positive(t, n)
	assert.Len(t, l.Segments(), before-n)
	assert.GreaterOrEqual(t, l.size(), cfg.RetentionBytes, "what stays holds at least retention.bytes")
	assert.Less(t, l.size()-l.segs[0].size, cfg.RetentionBytes, "and one segment fewer would not")
	checkStart(t, l, written)

	l2, _ := openWith(t, d, cfg)
	assert.Equal(t, l.StartOffset(), l2.StartOffset(), "the start offset is the first segment's base after a restart")
	checkStart(t, l2, written)
}

func TestRetentionByTimeUsesRecordTimestamps(t *testing.T) {
	cfg := small
	cfg.RetentionMs = 10_000
	now := int64(40_000) // records at 30 s and later stay
	// Once from what appends kept, once from a reopened log that reads
	// the trusted segments' timestamps from their files: the same cut.
	var starts []int64
	for _, reopen := range []bool{false, true} {
		d := NewSimDisk()
		l, _ := openWith(t, d, cfg)
		written := timedBatches(t, l, 60)
		require.NoError(t, l.Sync())
		if reopen {
			l, _ = openWith(t, d, cfg)
		}
		_, err := l.DeleteRetained(now, l.LEO())
		require.NoError(t, err)
		checkStart(t, l, written)
		assert.Greater(t, l.segs[0].next, int64(30), "a segment with a record at 30 s or later stays")
		assert.LessOrEqual(t, l.segs[0].base, int64(30))
		starts = append(starts, l.StartOffset())
	}
	assert.Equal(t, starts[0], starts[1])
	assert.Positive(t, starts[0])
}

// Only segments wholly below the limit (the HW) go, and never the active
// one, however strict retention is.
func TestRetentionStopsAtTheLimitAndTheActiveSegment(t *testing.T) {
	cfg := small
	cfg.RetentionBytes = 1
	cfg.RetentionMs = 1
	l, _ := openWith(t, NewSimDisk(), cfg)
	written := timedBatches(t, l, 60)
	limit := int64(25)
	_, err := l.DeleteRetained(1<<40, limit)
	require.NoError(t, err)
	assert.LessOrEqual(t, l.StartOffset(), limit)
	assert.Greater(t, l.segs[0].next, limit, "the first kept segment holds the limit")
	checkStart(t, l, written)

	_, err = l.DeleteRetained(1<<40, l.LEO())
	require.NoError(t, err)
	assert.Len(t, l.Segments(), 1, "the active segment stays")
	checkStart(t, l, written)

	quiet := small
	quiet.RetentionMs, quiet.RetentionBytes = -1, -1
	lq, _ := openWith(t, NewSimDisk(), quiet)
	timedBatches(t, lq, 60)
	n, err := lq.DeleteRetained(1<<40, lq.LEO())
	require.NoError(t, err)
	assert.Zero(t, n, "-1 keeps everything")
}

// failingRemoveDisk fails every Remove after the first allow.
type failingRemoveDisk struct {
	*SimDisk
	allow int
}

func (d *failingRemoveDisk) Remove(name string) error {
	if d.allow == 0 {
		return errors.New("disk gone")
	}
	d.allow--
	return d.SimDisk.Remove(name)
}

// A deletion cut short leaves a suffix of the log: no gap, and a start
// offset that moved less far.
func TestRetentionCutShortLeavesASuffix(t *testing.T) {
	cfg := small
	cfg.RetentionBytes = 1
	for allow := range 6 {
		sim := NewSimDisk()
		l, _ := openWith(t, sim, cfg)
		written := appendN(t, l, rand.New(rand.NewPCG(63, uint64(allow))), 60)
		require.NoError(t, l.Sync())
		fd := &failingRemoveDisk{SimDisk: sim, allow: allow}
		lf, _ := openWith(t, fd, cfg)
		_, err := lf.DeleteRetained(0, lf.LEO())
		require.Error(t, err)
		sim.Crash()
		l2, rec := openWith(t, sim, cfg)
		assert.True(t, rec.Clean(), rec.String())
		assert.Equal(t, l.LEO(), l2.LEO())
		checkStart(t, l2, written)
	}
}

func TestResetStartsAnEmptyLogAtAnOffset(t *testing.T) {
	d := NewSimDisk()
	l, _ := openWith(t, d, small)
	appendN(t, l, rand.New(rand.NewPCG(65, 66)), 30)
	require.NoError(t, l.ResetTo(1000))
	assert.Equal(t, int64(1000), l.StartOffset())
	assert.Equal(t, int64(1000), l.LEO())
	assert.Empty(t, l.Segments())
	d.PowerLossWorst()
	l2, rec := openWith(t, d, small)
	assert.True(t, rec.Clean())
	assert.Equal(t, int64(1000), l2.StartOffset(), "the reset survives a power loss")
	assert.Equal(t, int64(1000), l2.LEO())
	written := appendN(t, l2, rand.New(rand.NewPCG(67, 68)), 30)
	require.NoError(t, l2.Sync())
	l3, _ := openWith(t, d, small)
	assert.Equal(t, int64(1000), l3.StartOffset())
	assert.Equal(t, written, mustReadAll(t, l3))
	err := l3.Append(genBatch(rand.New(rand.NewPCG(1, 2)), 5, 1))
	assert.ErrorIs(t, err, ErrNonContiguous)
}

// A log that starts past 0 keeps its start when a truncation or a
// recovery cut takes its last segment, across a restart.
func TestAnEmptiedLogKeepsItsStart(t *testing.T) {
	cfg := small
	cfg.RetentionBytes = 1
	d := NewSimDisk()
	l, _ := openWith(t, d, cfg)
	appendN(t, l, rand.New(rand.NewPCG(91, 92)), 40)
	_, err := l.DeleteRetained(0, l.LEO())
	require.NoError(t, err)
	start := l.StartOffset()
	require.Positive(t, start)
	_, err = l.TruncateTo(start)
	require.NoError(t, err)
	assert.Empty(t, l.Segments())
	l2, _ := openWith(t, d, cfg)
	assert.Equal(t, start, l2.StartOffset())
	assert.Equal(t, start, l2.LEO())

	// A recovery cut that keeps nothing of the only segment.
	written := appendN(t, l2, rand.New(rand.NewPCG(93, 94)), 1)
	require.NoError(t, l2.Sync())
	corruptFile(t, d, l2.Segments()[0], func(b []byte) { b[len(b)/2] ^= 0x40 })
	l3, rec := openWith(t, d, cfg)
	assert.False(t, rec.Clean())
	assert.Equal(t, written[0].BaseOffset, l3.StartOffset())
	l4, _ := openWith(t, d, cfg)
	assert.Equal(t, written[0].BaseOffset, l4.StartOffset(), "and after the next restart")
}
