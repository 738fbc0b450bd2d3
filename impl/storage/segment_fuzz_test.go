package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzRecoverSegments lays arbitrary bytes out as up to three segments
// with an arbitrary recovery point and index files, then opens and loads
// the log. Whatever the files hold, recovery must not fail, must leave
// contiguous batches from offset 0 that every read agrees with, and must
// leave files that reopen clean to the same log.
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
		require.NoError(t, err)
		batches := loadAll(t, l)
		next := int64(0)
		for i := range batches {
			require.Equal(t, next, batches[i].BaseOffset, "offsets contiguous from 0")
			next = batches[i].NextOffset()
		}
		require.Equal(t, next, l.LEO())
		require.Equal(t, l.LEO(), l.Recovery().LEO)
		for i := range batches {
			// A batch's first and last offsets (a count field can make
			// one batch hold a billion of them).
			for _, offset := range []int64{batches[i].BaseOffset, batches[i].LastOffset()} {
				got := mustRead(t, l, offset, 0)
				require.Len(t, got, 1)
				require.Equal(t, batches[i], got[0])
			}
		}
		require.LessOrEqual(t, l.RecoveryPoint(), max(l.LEO(), int64(rp)%(base+2)))

		l2, rec2, err := OpenLog(d, "p", small)
		require.NoError(t, err)
		again := loadAll(t, l2)
		require.True(t, l2.Recovery().Clean(), "reopened: %s / %s", rec2, l2.Recovery())
		require.Equal(t, batches, again)
		require.Equal(t, l.Segments(), l2.Segments())
	})
}
