package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// forEachDisk runs f against a fresh SimDisk and a fresh FileDisk, so that
// every log behaviour is checked on both implementations.
func forEachDisk(t *testing.T, f func(t *testing.T, d Disk)) {
	t.Run("SimDisk", func(t *testing.T) { f(t, NewSimDisk()) })
	t.Run("FileDisk", func(t *testing.T) {
		d, err := NewFileDisk(t.TempDir())
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, d.Close()) })
		f(t, d)
	})
}

// genBatch returns a batch at base with 1..4 records that covers the format's
// corners: nil and empty keys and values, nil, empty and several headers,
// idempotent and plain producers, negative timestamps.
func genBatch(rng *rand.Rand, base int64, epoch int32) record.Batch {
	b := record.Batch{
		BaseOffset:   base,
		LeaderEpoch:  epoch,
		ProducerID:   record.NoProducerID,
		BaseSequence: record.NoSequence,
	}
	if rng.IntN(2) == 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = rng.Int64N(1000), int16(rng.IntN(5)), rng.Int32N(100)
	}
	n := 1 + rng.IntN(4)
	for i := range n {
		r := record.Record{Timestamp: rng.Int64N(1<<40) - 1<<39}
		r.Key = genBytes(rng)
		r.Value = genBytes(rng)
		switch rng.IntN(3) {
		case 1:
			r.Headers = []record.Header{}
		case 2:
			for j := range 1 + rng.IntN(3) {
				r.Headers = append(r.Headers, record.Header{Key: fmt.Sprintf("h%d-%d", i, j), Value: genBytes(rng)})
			}
		}
		b.Records = append(b.Records, r)
	}
	return b
}

func genBytes(rng *rand.Rand) []byte {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, 1+rng.IntN(40))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// appendN appends n generated batches to l and returns them.
func appendN(t testing.TB, l *Log, rng *rand.Rand, n int) []record.Batch {
	var out []record.Batch
	for range n {
		b := genBatch(rng, l.LEO(), 1)
		require.NoError(t, l.Append(b))
		out = append(out, stored(t, b))
	}
	return out
}

// stored is b as the log gives it back: its v2 bytes (record.Batch.Wire)
// with its records decoded from them.
func stored(t testing.TB, b record.Batch) record.Batch {
	s, err := record.Parse(record.Encode(nil, &b))
	require.NoError(t, err)
	require.NoError(t, s.Decode(nil))
	return s
}

// frameEnds returns the file offset after each batch's frame.
func frameEnds(t testing.TB, batches []record.Batch) []int64 {
	var ends []int64
	var size int64
	for i := range batches {
		frame, err := appendFrame(nil, &batches[i])
		require.NoError(t, err)
		size += int64(len(frame))
		ends = append(ends, size)
	}
	return ends
}

// oneSegment keeps a log in one segment: the tests of frames and recovery
// within a file use random timestamps, which would roll by time.
var oneSegment = LogConfig{RollMs: math.MaxInt64}

func openLog(t testing.TB, d Disk, dir string) (*Log, Recovery) {
	l, rec, err := OpenLog(d, dir, oneSegment)
	require.NoError(t, err)
	return l, rec
}

func mustRead(t testing.TB, l *Log, offset int64, maxBytes int) []record.Batch {
	got, err := l.Read(offset, maxBytes)
	require.NoError(t, err)
	for i := range got {
		require.Nil(t, got[i].Records, "Read serves the stored bytes without decoding them")
		require.NoError(t, got[i].Decode(nil))
	}
	return got
}

func mustReadAll(t testing.TB, l *Log) []record.Batch {
	got, err := l.ReadAll()
	require.NoError(t, err)
	return got
}

func TestLogRoundTrip(t *testing.T) {
	forEachDisk(t, func(t *testing.T, d Disk) {
		l, rec := openLog(t, d, "topic-0")
		assert.True(t, rec.Clean())
		assert.Equal(t, int64(0), l.LEO())
		assert.Empty(t, l.Batches())
		require.NoError(t, l.Sync(), "syncing a log with no file yet is a no-op")

		written := appendN(t, l, rand.New(rand.NewPCG(1, 2)), 50)
		require.NoError(t, l.Sync())
		assert.Equal(t, written, l.Batches(), "decoded from the file, nil and empty apart")
		assert.Equal(t, written, mustReadAll(t, l))

		l2, rec := openLog(t, d, "topic-0")
		assert.True(t, rec.Clean(), rec.String())
		assert.Equal(t, 50, rec.KeptBatches)
		assert.Equal(t, l.LEO(), l2.LEO())
		assert.Equal(t, written[len(written)-1].NextOffset(), l2.LEO())
		assert.Equal(t, written, l2.Batches(), "every field reads back, nil and empty apart")
		assert.Equal(t, written, l2.Batches(), "a second call decodes the file again")
	})
}

func TestLogDoesNotRetainBatches(t *testing.T) {
	l, _ := openLog(t, NewSimDisk(), "p")
	b := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
		Records: []record.Record{{Value: []byte("abc")}}}
	require.NoError(t, l.Append(b))
	b.Records[0].Value[0] = 'X'
	got := mustRead(t, l, 0, 1)
	assert.Equal(t, "abc", string(got[0].Records[0].Value), "caller's later writes do not reach the log")
	got[0].Records[0].Value[0] = 'Y'
	assert.Equal(t, "abc", string(l.Batches()[0].Records[0].Value), "reader's writes do not reach the log")
}

// TestLogReadChecksTheFile checks that a log whose file changed under it
// fails instead of returning batches its index does not describe.
func TestLogReadChecksTheFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	tests := map[string]func(d Disk, name string){
		"truncated": func(d Disk, name string) {
			data, err := d.ReadFile(name)
			require.NoError(t, err)
			require.NoError(t, d.Truncate(name, int64(len(data)-1)))
		},
		"corrupted": func(d Disk, name string) {
			corruptFile(t, d, name, func(b []byte) { b[len(b)-1] ^= 1 })
		},
		"renumbered": func(d Disk, name string) {
			// The first frame, intact but for other offsets.
			corruptFile(t, d, name, func(b []byte) {
				binary.BigEndian.PutUint64(b, 1) // outside the CRC
			})
		},
		"replaced": func(d Disk, name string) {
			var data []byte
			for next := int64(0); len(data) < 1<<12; {
				b := genBatch(rng, next, 1)
				var err error
				data, err = appendFrame(data, &b)
				require.NoError(t, err)
				next = b.NextOffset()
			}
			require.NoError(t, d.WriteFileAtomic(name, data))
		},
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			d := NewSimDisk()
			l, _ := openLog(t, d, "p")
			appendN(t, l, rng, 3)
			change(d, l.File())
			_, err := l.ReadAll()
			require.ErrorIs(t, err, kafka.ErrStorage)
			require.ErrorIs(t, err, errIndexMismatch)
			assert.Panics(t, func() { l.Batches() })
			require.ErrorIs(t, l.Append(genBatch(rng, l.LEO(), 1)), kafka.ErrStorage, "the failure is sticky")
		})
	}
}

func TestLogAppendRejects(t *testing.T) {
	l, _ := openLog(t, NewSimDisk(), "p")
	rng := rand.New(rand.NewPCG(3, 4))

	err := l.Append(genBatch(rng, 1, 0))
	require.ErrorIs(t, err, ErrNonContiguous, "the first batch must start at 0")

	require.NoError(t, l.Append(genBatch(rng, 0, 0)))
	err = l.Append(genBatch(rng, 0, 0))
	require.ErrorIs(t, err, ErrNonContiguous, "overlap")
	err = l.Append(genBatch(rng, l.LEO()+1, 0))
	require.ErrorIs(t, err, ErrNonContiguous, "gap")

	err = l.Append(record.Batch{BaseOffset: l.LEO()})
	require.ErrorIs(t, err, ErrInvalidBatch, "a batch has at least one record")
	bad := genBatch(rng, l.LEO(), 0)
	bad.ProducerID, bad.BaseSequence = 7, record.NoSequence
	require.ErrorIs(t, l.Append(bad), ErrInvalidBatch, "producer id without a sequence")
}

func TestLogRead(t *testing.T) {
	l, _ := openLog(t, NewSimDisk(), "p")
	batches := appendN(t, l, rand.New(rand.NewPCG(5, 6)), 10)

	assert.Nil(t, mustRead(t, l, -1, 1<<20), "below the start offset")
	assert.Nil(t, mustRead(t, l, l.LEO(), 1<<20), "at LEO there is nothing yet")
	assert.Nil(t, mustRead(t, l, l.LEO()+5, 1<<20))

	assert.Equal(t, batches, mustRead(t, l, 0, 1<<20), "everything fits")
	for _, b := range batches {
		got := mustRead(t, l, b.LastOffset(), 0)
		require.Len(t, got, 1, "at least one batch even when maxBytes is too small")
		assert.Equal(t, b, got[0], "the batch holding the offset, whole")
	}
	for _, b := range batches {
		got := mustRead(t, l, b.BaseOffset, 0)
		require.Len(t, got, 1)
		assert.Equal(t, b, got[0], "the batch holding the offset, whole")
	}

	// Exactly the first three batches fit.
	limit := batches[3].Size() + batches[4].Size() + batches[5].Size()
	got := mustRead(t, l, batches[3].BaseOffset, limit)
	assert.Equal(t, batches[3:6], got)
	got = mustRead(t, l, batches[3].BaseOffset, limit-1)
	assert.Equal(t, batches[3:5], got)
	got = mustRead(t, l, batches[9].LastOffset(), 1<<20)
	assert.Equal(t, batches[9:], got, "the last batch")
}

// TestLogTruncateTo checks that truncation removes whole batches: truncating
// at an offset inside a batch removes that batch too.
func TestLogTruncateTo(t *testing.T) {
	threeRecords := func(base int64) record.Batch {
		return record.Batch{BaseOffset: base, ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
			Records: []record.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}}
	}
	tests := []struct {
		offset  int64
		wantLEO int64
	}{
		{offset: 100, wantLEO: 9}, // beyond LEO: nothing
		{offset: 9, wantLEO: 9},   // at LEO: nothing
		{offset: 8, wantLEO: 6},   // last offset of the last batch
		{offset: 6, wantLEO: 6},   // a batch boundary
		{offset: 4, wantLEO: 3},   // mid-batch: the batch goes whole
		{offset: 3, wantLEO: 3},
		{offset: 1, wantLEO: 0},
		{offset: 0, wantLEO: 0},
		{offset: -5, wantLEO: 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.offset), func(t *testing.T) {
			forEachDisk(t, func(t *testing.T, d Disk) {
				l, _ := openLog(t, d, "p")
				for base := int64(0); base < 9; base += 3 {
					require.NoError(t, l.Append(threeRecords(base)))
				}
				leo, err := l.TruncateTo(tt.offset)
				require.NoError(t, err)
				assert.Equal(t, tt.wantLEO, leo)
				assert.Equal(t, tt.wantLEO, l.LEO())
				assert.Len(t, l.Batches(), int(tt.wantLEO/3))

				// The file matches the index: reopening finds the same log,
				// and appending goes on at the new LEO.
				require.NoError(t, l.Append(threeRecords(leo)))
				l2, rec := openLog(t, d, "p")
				assert.True(t, rec.Clean(), rec.String())
				assert.Equal(t, l.Batches(), l2.Batches())
				assert.Equal(t, leo+3, l2.LEO())
			})
		})
	}
}

// failingDisk fails every Append after failAfter successful ones.
type failingDisk struct {
	*SimDisk
	failAfter int
}

func (d *failingDisk) Append(name string, data []byte) error {
	if d.failAfter == 0 {
		// Model a short write: half the frame reaches the file.
		_ = d.SimDisk.Append(name, data[:len(data)/2])
		return errors.New("disk full")
	}
	d.failAfter--
	return d.SimDisk.Append(name, data)
}

// TestLogFailsAfterIOError checks that a log stops writing after a failed
// write, because more frames after a partial one would be lost on recovery.
func TestLogFailsAfterIOError(t *testing.T) {
	d := &failingDisk{SimDisk: NewSimDisk(), failAfter: 3}
	l, _ := openLog(t, d, "p")
	rng := rand.New(rand.NewPCG(7, 8))
	written := appendN(t, l, rng, 3)

	err := l.Append(genBatch(rng, l.LEO(), 1))
	require.ErrorIs(t, err, kafka.ErrStorage)
	assert.Equal(t, written[2].NextOffset(), l.LEO(), "the failed batch is not in the log")
	d.failAfter = 100
	require.ErrorIs(t, l.Append(genBatch(rng, l.LEO(), 1)), kafka.ErrStorage, "the failure is sticky")
	require.ErrorIs(t, l.Sync(), kafka.ErrStorage)
	_, err = l.TruncateTo(0)
	require.ErrorIs(t, err, kafka.ErrStorage)

	l2, rec := openLog(t, d, "p")
	assert.False(t, rec.Clean(), "the partial frame is dropped")
	assert.Equal(t, written, l2.Batches())
	require.NoError(t, l2.Append(genBatch(rng, l2.LEO(), 1)), "a reopened log works")
}

func TestRecoveryString(t *testing.T) {
	clean := Recovery{File: "p", Segments: 2, ScannedFrom: 3, ScannedBytes: 60, KeptBatches: 2, KeptBytes: 100, LEO: 5}
	assert.Equal(t, "log p: 2 segments, 100 bytes, LEO 5; scanned 60 bytes from offset 3, kept 2 batches, clean", clean.String())
	torn := clean
	torn.DroppedBytes, torn.Reason = 7, "p/00000000000000000003.log at byte 100: torn frame"
	assert.Equal(t, "log p: 2 segments, 100 bytes, LEO 5; scanned 60 bytes from offset 3, kept 2 batches; dropped 7 bytes holding 0 intact batches: p/00000000000000000003.log at byte 100: torn frame", torn.String())
}
