package storage

import (
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// small rolls every few batches and indexes every couple of frames.
var small = LogConfig{SegmentBytes: 600, IndexIntervalBytes: 150, RollMs: 1 << 62}

func openWith(t testing.TB, d Disk, cfg LogConfig) (*Log, Recovery) {
	l, rec, err := OpenLog(d, "p", cfg)
	require.NoError(t, err)
	return l, rec
}

// holding returns the batch of written that holds offset.
func holding(written []record.Batch, offset int64) record.Batch {
	for _, b := range written {
		if b.BaseOffset <= offset && offset < b.NextOffset() {
			return b
		}
	}
	panic("no batch holds the offset")
}

// A log rolls by size into segments named by their base offsets, each
// with a sparse index; a read at any offset, through the index, returns
// the batch that holds it, and a read across segments keeps going.
func TestSegmentsRollAndIndex(t *testing.T) {
	d := NewSimDisk()
	l, _ := openWith(t, d, small)
	rng := rand.New(rand.NewPCG(31, 32))
	written := appendN(t, l, rng, 60)
	segs := l.Segments()
	require.Greater(t, len(segs), 5, "600-byte segments roll")
	for i, name := range segs {
		base, ok := parseSegmentName(name)
		require.True(t, ok, name)
		size, err := d.FileSize(name)
		require.NoError(t, err)
		assert.LessOrEqual(t, size, small.SegmentBytes+maxFrameBytes(written), "%s is over its size", name)
		if i > 0 {
			prev, _ := parseSegmentName(segs[i-1])
			assert.Less(t, prev, base)
		}
	}
	indexes := 0
	for _, name := range segs {
		base, _ := parseSegmentName(name)
		if sz, err := d.FileSize(indexName("p", base)); err == nil {
			indexes++
			assert.Zero(t, sz%indexEntrySize)
		}
	}
	assert.Positive(t, indexes, "150-byte intervals leave index entries")

	for offset := int64(0); offset < l.LEO(); offset++ {
		got := mustRead(t, l, offset, 0)
		require.Len(t, got, 1, "offset %d", offset)
		require.Equal(t, holding(written, offset), got[0], "offset %d", offset)
	}
	assert.Equal(t, written, mustRead(t, l, 0, 1<<30), "one read crosses every segment")
	assert.Equal(t, written, mustReadAll(t, l))
	assert.Empty(t, mustRead(t, l, l.LEO(), 1<<20))
}

func maxFrameBytes(bs []record.Batch) int64 {
	m := 0
	for i := range bs {
		m = max(m, frameSize(&bs[i]))
	}
	return int64(m)
}

// A segment rolls when a batch's largest timestamp is RollMs past that of
// the segment's first batch, whatever its size.
func TestSegmentsRollByTime(t *testing.T) {
	l, _ := openWith(t, NewSimDisk(), LogConfig{RollMs: 1000})
	at := func(ts int64) record.Batch {
		return record.Batch{BaseOffset: l.LEO(), ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
			Records: []record.Record{{Value: []byte("v"), Timestamp: ts}}}
	}
	for _, ts := range []int64{5000, 5400, 5999} {
		require.NoError(t, l.Append(at(ts)))
	}
	assert.Len(t, l.Segments(), 1)
	require.NoError(t, l.Append(at(6000)))
	assert.Len(t, l.Segments(), 2, "1000 ms past the first batch")
	require.NoError(t, l.Append(at(100)), "an older timestamp does not roll")
	assert.Len(t, l.Segments(), 2)
}

// A bad index file costs a scan of its segment, never a wrong answer.
func TestSegmentIndexDamageIsHarmless(t *testing.T) {
	d := NewSimDisk()
	l, _ := openWith(t, d, small)
	written := appendN(t, l, rand.New(rand.NewPCG(33, 34)), 40)
	require.NoError(t, l.Sync())
	first, _ := parseSegmentName(l.Segments()[0])
	idx := indexName("p", first)
	require.NoError(t, d.WriteFileAtomic(idx, []byte{0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff, 1, 2, 3}))
	l2, _ := openWith(t, d, small)
	for offset := int64(0); offset < l2.LEO(); offset++ {
		require.Equal(t, holding(written, offset), mustRead(t, l2, offset, 0)[0], "offset %d", offset)
	}
}

// countingDisk counts the bytes read from segment files.
type countingDisk struct {
	*SimDisk
	read int64
}

func (c *countingDisk) ReadFile(name string) ([]byte, error) {
	b, err := c.SimDisk.ReadFile(name)
	if path.Ext(name) == segmentSuffix {
		c.read += int64(len(b))
	}
	return b, err
}

func (c *countingDisk) ReadAt(name string, p []byte, off int64) (int, error) {
	n, err := c.SimDisk.ReadAt(name, p, off)
	if path.Ext(name) == segmentSuffix {
		c.read += int64(n)
	}
	return n, err
}

// Reopening a synced log scans only the segment holding the recovery
// point; what lies before it is trusted, and still reads back.
func TestRecoveryScansFromTheRecoveryPoint(t *testing.T) {
	d := &countingDisk{SimDisk: NewSimDisk()}
	l, _ := openWith(t, d, small)
	rng := rand.New(rand.NewPCG(35, 36))
	written := appendN(t, l, rng, 80)
	require.NoError(t, l.Sync())
	assert.Equal(t, l.LEO(), l.RecoveryPoint(), "a sync into a new segment moves the recovery point")
	active, err := d.FileSize(l.File())
	require.NoError(t, err)

	d.read = 0
	l2, rec := openWith(t, d, small)
	assert.Equal(t, active+record.HeaderLen, d.read, "only the active segment is read, and the first batch header of the log (its format)")
	assert.Equal(t, active, rec.ScannedBytes)
	assert.Equal(t, l.LEO(), l2.LEO())
	assert.Equal(t, len(l.Segments()), rec.Segments)
	assert.True(t, rec.Clean(), rec.String())
	assert.Equal(t, written, mustReadAll(t, l2))

	// Appends since the sync are scanned too: the recovery point has not
	// moved past them.
	more := appendN(t, l2, rng, 30)
	_, rec = openWith(t, d, small)
	assert.Greater(t, rec.ScannedBytes, active)
	assert.Less(t, rec.ScannedBytes, l2.size(), "the synced segments are still trusted")
	l3, _ := openWith(t, d, small)
	assert.Equal(t, append(written, more...), mustReadAll(t, l3))
}

// Truncation across segments removes the later ones, lowers the recovery
// point below the cut, and leaves a log that appends and reopens.
func TestTruncateAcrossSegments(t *testing.T) {
	d := NewSimDisk()
	l, _ := openWith(t, d, small)
	rng := rand.New(rand.NewPCG(37, 38))
	written := appendN(t, l, rng, 60)
	require.NoError(t, l.Sync())
	n := len(l.Segments())
	cut := written[20]
	leo, err := l.TruncateTo(cut.BaseOffset + 1)
	require.NoError(t, err)
	assert.Equal(t, cut.BaseOffset, leo, "the batch holding the offset goes whole")
	assert.Less(t, len(l.Segments()), n)
	assert.LessOrEqual(t, l.RecoveryPoint(), leo)
	require.NoError(t, l.Sync())
	assert.Equal(t, written[:20], mustReadAll(t, l))

	written = append(written[:20], appendN(t, l, rng, 15)...)
	require.NoError(t, l.Sync())
	l2, rec := openWith(t, d, small)
	assert.True(t, rec.Clean(), rec.String())
	assert.Equal(t, written, mustReadAll(t, l2))

	// To the start of a segment, and to nothing.
	second, _ := parseSegmentName(l2.Segments()[1])
	leo, err = l2.TruncateTo(second)
	require.NoError(t, err)
	assert.Equal(t, second, leo)
	assert.Len(t, l2.Segments(), 1)
	leo, err = l2.TruncateTo(0)
	require.NoError(t, err)
	assert.Zero(t, leo)
	assert.Empty(t, l2.Segments())
	require.NoError(t, l2.Append(genBatch(rng, 0, 2)))
	names, err := d.List("p/")
	require.NoError(t, err)
	assert.NotContains(t, names, SegmentName("p", second), "removed segments leave no files")
}

// A power loss while segments roll loses the unsynced tail of a segment,
// and may keep a newer segment, never synced, whose predecessor lost its
// end: recovery keeps a prefix of what was written holding all that was
// synced, and never a segment past a gap.
func TestPowerLossAcrossARoll(t *testing.T) {
	sawGap := false
	for seed := range uint64(300) {
		d := NewSimDisk()
		l, _ := openWith(t, d, small)
		rng := rand.New(rand.NewPCG(seed, 3))
		written := appendN(t, l, rng, 10+rng.IntN(20))
		require.NoError(t, l.Sync())
		synced := len(written)
		written = append(written, appendN(t, l, rng, 5+rng.IntN(20))...)
		d.PowerLoss(rand.New(rand.NewPCG(seed, 4)))

		l2, rec := openWith(t, d, small)
		got := l2.Batches()
		require.GreaterOrEqual(t, len(got), synced, "seed %d: a synced batch was lost", seed)
		require.Equal(t, written[:len(got)], got, "seed %d: not a prefix", seed)
		require.Equal(t, l2.LEO(), got[len(got)-1].NextOffset())
		sawGap = sawGap || strings.Contains(rec.Reason, "starts at offset")
		l3, rec3 := openWith(t, d, small)
		require.True(t, rec3.Clean(), "seed %d: %s", seed, rec3)
		require.Equal(t, got, l3.Batches())
		require.NoError(t, l3.Append(genBatch(rng, l3.LEO(), 2)), "seed %d", seed)
	}
	assert.True(t, sawGap, "some power loss kept a segment past a gap")
}

// A file system may keep a new segment whose predecessor lost its tail
// (the simulated disk loses never-synced files whole; a real one may
// not): recovery ends the log where the older segment ends, and removes
// the newer one, which would leave a gap.
func TestRecoveryDropsASegmentPastAGap(t *testing.T) {
	d := NewSimDisk()
	l, _ := openWith(t, d, small)
	written := appendN(t, l, rand.New(rand.NewPCG(41, 42)), 30)
	segs := l.Segments()
	older := segs[len(segs)-2]
	data, err := d.ReadFile(older)
	require.NoError(t, err)
	base, _ := parseSegmentName(older)
	frames, stop := scanSegment(data, base)
	require.Empty(t, stop)
	require.NoError(t, d.Truncate(older, frames[len(frames)-1].pos), "its last frame lost whole")

	l2, rec := openWith(t, d, small)
	assert.Contains(t, rec.Reason, "starts at offset")
	assert.Equal(t, segs[:len(segs)-1], l2.Segments())
	got := mustReadAll(t, l2)
	assert.Equal(t, written[:len(got)], got)
	newer, _ := parseSegmentName(segs[len(segs)-1])
	assert.Less(t, l2.LEO(), newer)
	assert.Positive(t, rec.DroppedBatches, "the newer segment's batches were intact")
}

// Damage below the recovery point is not scanned at open; Load finds it,
// cuts the log there as recovery would, and reports the intact batches
// it had to drop.
func TestLoadFindsDamageBelowTheRecoveryPoint(t *testing.T) {
	d := NewSimDisk()
	l, _ := openWith(t, d, small)
	written := appendN(t, l, rand.New(rand.NewPCG(39, 40)), 60)
	require.NoError(t, l.Sync())
	second := l.Segments()[1]
	corruptFile(t, d, second, func(b []byte) { b[len(b)/2] ^= 0x10 })

	l2, rec := openWith(t, d, small)
	assert.True(t, rec.Clean(), "not scanned: %s", rec)
	got := loadAll(t, l2)
	base, _ := parseSegmentName(second)
	require.Less(t, got[len(got)-1].NextOffset(), written[len(written)-1].NextOffset())
	assert.Equal(t, written[:len(got)], got)
	assert.GreaterOrEqual(t, got[len(got)-1].NextOffset(), base, "the first segment is whole")
	rec = l2.Recovery()
	assert.False(t, rec.Clean())
	assert.Positive(t, rec.DroppedBatches, "intact batches after the damage")
	assert.Contains(t, rec.Reason, second)
	assert.LessOrEqual(t, l2.RecoveryPoint(), l2.LEO())

	l3, rec3 := openWith(t, d, small)
	assert.True(t, rec3.Clean(), rec3.String())
	assert.Equal(t, got, mustReadAll(t, l3))
}

// A directory in the single-file format is refused with what to do.
func TestOldFormatIsRefused(t *testing.T) {
	d := NewSimDisk()
	require.NoError(t, d.WriteFileAtomic("p/log", []byte("old")))
	_, _, err := OpenLog(d, "p", LogConfig{})
	require.ErrorIs(t, err, ErrOldFormat)
	assert.Contains(t, err.Error(), "move the directory away")
}

func TestLogConfigValidate(t *testing.T) {
	require.NoError(t, LogConfig{}.Validate())
	assert.ErrorContains(t, LogConfig{SegmentBytes: 1 << 40}.Validate(), "log.segment.bytes")
	assert.ErrorContains(t, LogConfig{IndexIntervalBytes: -1}.Validate(), "log.index.interval.bytes")
	assert.ErrorContains(t, LogConfig{RollMs: -5}.Validate(), "log.roll.ms")
}

// scanSegment decodes the frames of a segment file's bytes from its
// start, for as long as they are valid and contiguous from base; stop
// says why it stopped before the end.
func scanSegment(data []byte, base int64) ([]frame, string) {
	var out []frame
	pos, next := 0, base
	for pos < len(data) {
		b, n, err := decodeFrame(data[pos:])
		if err == nil && b.BaseOffset != next {
			err = fmt.Errorf("%w: batch at offset %d, want %d", ErrNonContiguous, b.BaseOffset, next)
		}
		if err != nil {
			return out, err.Error()
		}
		out = append(out, frame{batch: b, pos: int64(pos), size: int64(n)})
		pos += n
		next = b.NextOffset()
	}
	return out, ""
}

// loadAll scans the whole log as a broker does at startup.
// decodeAll decodes the records of batches a scan handed over undecoded.
func decodeAll(t testing.TB, bs []record.Batch) {
	for i := range bs {
		require.Nil(t, bs[i].Records, "a scan does not decode records")
		require.NoError(t, bs[i].Decode(nil))
	}
}

func loadAll(t testing.TB, l *Log) []record.Batch {
	var out []record.Batch
	require.NoError(t, l.Scan(func(b *record.Batch) { out = append(out, *b) }))
	decodeAll(t, out)
	return out
}

// A mirrored log's copy in memory is what its files hold, through
// appends, truncations and reopening.
func TestMirrorMatchesTheFiles(t *testing.T) {
	cfg := small
	cfg.Mirror = true
	d := NewSimDisk()
	l, _ := openWith(t, d, cfg)
	rng := rand.New(rand.NewPCG(45, 46))
	appendN(t, l, rng, 10)
	check := func(l *Log) {
		t.Helper()
		m, ok := l.Mirrored()
		require.True(t, ok)
		require.Equal(t, mustReadAll(t, l), m)
	}
	check(l)
	appendN(t, l, rng, 10)
	check(l)
	_, err := l.TruncateTo(5)
	require.NoError(t, err)
	check(l)
	appendN(t, l, rng, 3)
	check(l)
	l2, _ := openWith(t, d, cfg)
	check(l2)
	_, ok := l2.Mirrored()
	require.True(t, ok)
	plain, _ := openWith(t, d, small)
	_, ok = plain.Mirrored()
	assert.False(t, ok, "no mirror unless asked")
}

// OpenLogVerify reads every segment once, below the recovery point too:
// damage there is cut at open, and fn sees exactly the batches kept.
func TestOpenLogVerifyTrustsNothing(t *testing.T) {
	d := &countingDisk{SimDisk: NewSimDisk()}
	l, _ := openWith(t, d, small)
	written := appendN(t, l, rand.New(rand.NewPCG(47, 48)), 60)
	require.NoError(t, l.Sync())
	total := l.size()

	d.read = 0
	var seen []record.Batch
	l2, rec, err := OpenLogVerify(d, "p", small, func(b *record.Batch) { seen = append(seen, *b) })
	require.NoError(t, err)
	assert.True(t, rec.Clean(), rec.String())
	decodeAll(t, seen)
	assert.Equal(t, written, seen)
	assert.Equal(t, total+record.HeaderLen, d.read, "one pass, every segment once")
	assert.Equal(t, l.LEO(), l2.LEO())

	second := l.Segments()[1]
	corruptFile(t, d.SimDisk, second, func(b []byte) { b[len(b)/2] ^= 0x10 })
	seen = nil
	l3, rec, err := OpenLogVerify(d, "p", small, func(b *record.Batch) { seen = append(seen, *b) })
	require.NoError(t, err)
	assert.False(t, rec.Clean())
	assert.Positive(t, rec.DroppedBatches)
	assert.Contains(t, rec.Reason, second)
	decodeAll(t, seen)
	assert.Equal(t, written[:len(seen)], seen)
	assert.Equal(t, seen, mustReadAll(t, l3), "fn saw what the log kept")
}

// OpenLogScan reads only from the recovery point's segment: fn sees the
// batches from Recovery().ScannedFrom on, and damage below it is not found
// at open but fails the read that meets it (KAFKA_STORAGE_ERROR), so a
// flipped bit is never served.
func TestOpenLogScanTrustsTheRecoveryPoint(t *testing.T) {
	d := &countingDisk{SimDisk: NewSimDisk()}
	l, _ := openWith(t, d, small)
	written := appendN(t, l, rand.New(rand.NewPCG(49, 50)), 60)
	require.NoError(t, l.Sync())
	segs := l.Segments()
	require.Greater(t, len(segs), 3)
	last, err := d.FileSize(segs[len(segs)-1])
	require.NoError(t, err)

	d.read = 0
	var seen []record.Batch
	l2, rec, err := OpenLogScan(d, "p", small, func(b *record.Batch) { seen = append(seen, *b) })
	require.NoError(t, err)
	assert.True(t, rec.Clean(), rec.String())
	require.NotEmpty(t, seen)
	assert.Equal(t, rec.ScannedFrom, seen[0].BaseOffset)
	assert.Positive(t, rec.ScannedFrom, "the synced segments are trusted")
	i := record.Search(written, rec.ScannedFrom)
	decodeAll(t, seen)
	assert.Equal(t, written[i:], seen)
	assert.Equal(t, last+record.HeaderLen, d.read, "only the segment holding the recovery point is read")
	assert.Equal(t, l.LEO(), l2.LEO())

	corruptFile(t, d.SimDisk, segs[1], func(b []byte) { b[len(b)/2] ^= 0x10 })
	l3, rec, err := OpenLogScan(d, "p", small, nil)
	require.NoError(t, err)
	assert.True(t, rec.Clean(), "damage below the recovery point is not looked for at open")
	_, err = l3.ReadAll()
	require.ErrorIs(t, err, kafka.ErrStorage)
}

// SyncRolled makes the rolled segments durable and moves the recovery
// point to the active segment, without syncing the active one: a power
// loss then takes only the active segment's unsynced tail, and a reopen
// scans only it.
func TestSyncRolledTrustsTheRolledSegments(t *testing.T) {
	d := NewSimDisk()
	l, _ := openWith(t, d, small)
	written := appendN(t, l, rand.New(rand.NewPCG(71, 72)), 40)
	require.Greater(t, len(l.Segments()), 3)
	require.NoError(t, l.SyncRolled())
	active, lastRolled := l.active().base, l.segs[len(l.segs)-2].base
	assert.Equal(t, active, l.RecoveryPoint())
	d.PowerLossWorst()
	l2, rec := openWith(t, d, small)
	// The active segment, never synced, is gone: the scan starts at the
	// last segment there is, the last one rolled.
	assert.Equal(t, lastRolled, rec.ScannedFrom, "only the last segment is scanned")
	assert.Equal(t, active, l2.LEO(), "its unsynced batches are gone; the rolled ones stay")
	assert.Equal(t, written[:record.Search(written, active)], mustReadAll(t, l2))
}
