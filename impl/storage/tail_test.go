package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/record"
)

// Reads of the newest batches come from the tail in memory, not the
// files, and give what a read of the files gives; a truncation cuts the
// tail with the log, and older batches still come from the files.
func TestNewestBatchesAreReadFromMemory(t *testing.T) {
	d := &countingDisk{SimDisk: NewSimDisk()}
	l, _ := openWith(t, d, small)
	written := appendN(t, l, rand.New(rand.NewPCG(81, 82)), 60)
	d.read = 0
	got, err := l.Read(written[50].BaseOffset, 1<<20)
	require.NoError(t, err)
	assert.Zero(t, d.read, "served from memory")
	decodeAll(t, got)
	assert.Equal(t, written[50:], got)

	cut := written[40].BaseOffset
	_, err = l.TruncateTo(cut)
	require.NoError(t, err)
	got, err = l.Read(written[35].BaseOffset, 1<<20)
	require.NoError(t, err)
	decodeAll(t, got)
	assert.Equal(t, written[35:40], got, "nothing past the cut")
	more := appendN(t, l, rand.New(rand.NewPCG(83, 84)), 5)
	got, err = l.Read(cut, 1<<20)
	require.NoError(t, err)
	decodeAll(t, got)
	assert.Equal(t, more, got)

	// Past tailBytes the oldest batches leave memory.
	big := NewSimDisk()
	lb, _ := openWith(t, &countingDisk{SimDisk: big}, LogConfig{})
	var first record.Batch
	for i := range 40 {
		b := record.Batch{BaseOffset: lb.LEO(), LeaderEpoch: 1, ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
			Records: []record.Record{{Value: make([]byte, 40<<10)}}}
		require.NoError(t, lb.Append(b))
		if i == 0 {
			first = stored(t, b)
		}
	}
	assert.LessOrEqual(t, lb.tail.bytes, tailBytes)
	got, err = lb.Read(0, 1)
	require.NoError(t, err)
	decodeAll(t, got)
	assert.Equal(t, []record.Batch{first}, got, "read from the file")
}
