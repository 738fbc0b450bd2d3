package storage

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/record"
)

// FuzzRecoverSegments lays arbitrary bytes out as up to three segments
// with an arbitrary recovery point and index files, then opens and loads
// the log. The first segment is named by the first batch's base offset
// when the bytes start with one, so a log that retention shortened (or a
// reset started past 0) is recovered too; with no bytes at all, a
// log-start-offset checkpoint says where the empty log starts. Whatever
// the files hold, recovery must not fail, must leave contiguous batches
// from the log start offset that every read agrees with, and must leave
// files that reopen clean to the same log.
func FuzzRecoverSegments(f *testing.F) {
	rng := rand.New(rand.NewPCG(43, 44))
	d := NewSimDisk()
	l, _ := openWith(f, d, small)
	appendN(f, l, rng, 12)
	require.NoError(f, l.Sync())
	var valid []byte
	for _, name := range l.Segments() {
		b, err := d.ReadFile(name)
		require.NoError(f, err)
		valid = append(valid, b...)
	}
	for _, cut := range [][3]uint16{{0, 0, 0}, {200, 400, 300}, {150, 151, 0}, {600, 900, 5}} {
		f.Add(valid, cut[0], cut[1], cut[2], false, false)
		f.Add(valid[:len(valid)-7], cut[0], cut[1], cut[2], true, false)
		f.Add(valid, cut[0], cut[1], cut[2], false, true)
	}
	f.Add([]byte("no frames here"), uint16(3), uint16(9), uint16(1), true, true)
	f.Add([]byte{}, uint16(0), uint16(0), uint16(700), false, false)
	// A log whose first batch is at offset 1000: what retention leaves.
	ds := NewSimDisk()
	ls, _ := openWith(f, ds, small)
	require.NoError(f, ls.ResetTo(1000))
	appendN(f, ls, rng, 12)
	var late []byte
	for _, name := range ls.Segments() {
		b, err := ds.ReadFile(name)
		require.NoError(f, err)
		late = append(late, b...)
	}
	f.Add(late, uint16(200), uint16(400), uint16(1100), false, false)
	f.Add(late[:len(late)-9], uint16(0), uint16(300), uint16(0), false, true)

	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2, rp uint16, fixCRC, skew bool) {
		if fixCRC {
			fixCRCs(data)
		}
		a, b := min(int(cut1), len(data)), min(int(cut2), len(data))
		if a > b {
			a, b = b, a
		}
		d := NewSimDisk()
		base := int64(0)
		if first, err := record.Parse(data); err == nil && first.BaseOffset >= 0 && first.BaseOffset < 1<<40 {
			base = first.BaseOffset
		}
		start := base
		if len(data) == 0 {
			// A reset, then a crash before the first append's bytes.
			base, start = int64(rp), int64(rp)
			require.NoError(t, writeOffsetCheckpoint(d, "p", LogStartFile, start))
		}
		for i, piece := range [][]byte{data[:a], data[a:b], data[b:]} {
			if i > 0 && len(piece) == 0 {
				continue
			}
			require.NoError(t, d.WriteFileAtomic(SegmentName("p", base), piece))
			// An index of whatever the piece's first bytes say.
			require.NoError(t, d.WriteFileAtomic(indexName("p", base), piece[:min(len(piece), 16)]))
			frames, _ := scanSegment(piece, base)
			if len(frames) > 0 {
				base = frames[len(frames)-1].batch.NextOffset()
			}
			if skew {
				base += int64(i)
			}
		}
		require.NoError(t, writeOffsetCheckpoint(d, "p", RecoveryPointFile, int64(rp)%(base+2)))

		l, _, err := OpenLog(d, "p", small)
		if errors.Is(err, ErrOldFormat) {
			// The first segment starts with a whole frame of this
			// reference's earlier format, CRC and all, so not with a v2
			// batch (its magic byte would be 2): refused by design.
			return
		}
		require.NoError(t, err)
		// Recovery checks framing and CRCs, not what the records decode
		// to (as Kafka's does not): compare batches by their bytes.
		batches := scanStored(t, l)
		if len(batches) > 0 || len(data) == 0 {
			require.Equal(t, start, l.StartOffset(), "the first segment's base, or the checkpoint's for an empty log")
		}
		next := l.StartOffset()
		for i := range batches {
			require.Equal(t, next, batches[i].BaseOffset, "offsets contiguous from the log start")
			next = batches[i].NextOffset()
		}
		require.Equal(t, next, l.LEO())
		require.Equal(t, l.LEO(), l.Recovery().LEO)
		for i := range batches {
			// A batch's first and last offsets (a count field can make
			// one batch hold a billion of them).
			for _, offset := range []int64{batches[i].BaseOffset, batches[i].LastOffset()} {
				got, err := l.Read(offset, 0)
				require.NoError(t, err)
				require.Len(t, got, 1)
				require.Equal(t, batches[i], got[0])
			}
		}
		require.LessOrEqual(t, l.RecoveryPoint(), max(l.LEO(), int64(rp)%(base+2)))

		l2, rec2, err := OpenLog(d, "p", small)
		require.NoError(t, err)
		again := scanStored(t, l2)
		require.True(t, l2.Recovery().Clean(), "reopened: %s / %s", rec2, l2.Recovery())
		require.Equal(t, batches, again)
		require.Equal(t, l.Segments(), l2.Segments())
	})
}

// scanStored is every batch of the log as Scan hands it over: its stored
// bytes, its records not decoded.
func scanStored(t *testing.T, l *Log) []record.Batch {
	var out []record.Batch
	require.NoError(t, l.Scan(func(b *record.Batch) { out = append(out, *b) }))
	return out
}
