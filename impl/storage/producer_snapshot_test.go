package storage

import (
	"math/rand/v2"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotBody is a producer snapshot as the partition package encodes it;
// storage treats the lines as opaque.
var snapshotBody = []string{"offset 12", "producer 7 0 0:1:3:4 2:2:9:9", "producer 1048577 3 0:0:11:11"}

// A producer snapshot reads back as written, per partition directory; a
// newer one replaces it; none is ok=false, not an error; removing it is
// idempotent. A restart is "rebuilt from a snapshot plus log replay".
// Reference: spec/SEMANTICS.md, Producer.
func TestProducerSnapshotRoundTrip(t *testing.T) {
	forEachDisk(t, func(t *testing.T, d Disk) {
		body, ok, err := ReadProducerSnapshot(d, "p")
		require.NoError(t, err)
		assert.False(t, ok, "no snapshot yet")
		assert.Nil(t, body)

		require.NoError(t, WriteProducerSnapshot(d, "p", snapshotBody))
		body, ok, err = ReadProducerSnapshot(d, "p")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, snapshotBody, body)

		_, ok, err = ReadProducerSnapshot(d, "q")
		require.NoError(t, err)
		assert.False(t, ok, "snapshots are per partition directory")

		for _, next := range [][]string{{"offset 20"}, {}, {"offset 1", "", "x y"}} {
			require.NoError(t, WriteProducerSnapshot(d, "p", next))
			body, ok, err = ReadProducerSnapshot(d, "p")
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, len(next), len(body), "%q read back as %q", next, body)
			if len(next) > 0 {
				assert.Equal(t, next, body)
			}
		}

		require.NoError(t, RemoveProducerSnapshot(d, "p"))
		_, ok, err = ReadProducerSnapshot(d, "p")
		require.NoError(t, err)
		assert.False(t, ok, "removed")
		require.NoError(t, RemoveProducerSnapshot(d, "p"), "removing a missing snapshot is not an error")
		require.NoError(t, RemoveProducerSnapshot(d, "never"), "nor in a directory that never had one")

		names, err := d.List("p/")
		require.NoError(t, err)
		assert.NotContains(t, names, path.Join("p", ProducerSnapshotFile))
	})
}

// A body line holding a newline would split into two lines on reading:
// the write is refused and the stored snapshot is left as it was.
func TestProducerSnapshotRefusesNewlines(t *testing.T) {
	forEachDisk(t, func(t *testing.T, d Disk) {
		require.NoError(t, WriteProducerSnapshot(d, "p", snapshotBody))
		err := WriteProducerSnapshot(d, "p", []string{"offset 1", "producer 1\nproducer 2"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), path.Join("p", ProducerSnapshotFile))
		body, ok, err := ReadProducerSnapshot(d, "p")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, snapshotBody, body)
	})
}

func TestProducerSnapshotFormatIsReadable(t *testing.T) {
	d := NewSimDisk()
	require.NoError(t, WriteProducerSnapshot(d, "p", []string{"offset 3", "producer 5 0 0:2:0:2"}))
	data, err := d.ReadFile(path.Join("p", ProducerSnapshotFile))
	require.NoError(t, err)
	assert.Regexp(t, `^watermark producer-snapshot v1\noffset 3\nproducer 5 0 0:2:0:2\ncrc32c [0-9a-f]{8}\n$`, string(data))
}

// A damaged snapshot is ErrCorruptCheckpoint naming the file, never lines
// that a restart would take for producer state (ErrCorruptCheckpoint: "a
// broker must not guess").
// Reference: spec/SEMANTICS.md, Producer.
func TestProducerSnapshotCorruption(t *testing.T) {
	valid := string(encodeCheckpoint("producer-snapshot", snapshotBody))
	name := path.Join("p", ProducerSnapshotFile)
	tests := []struct{ name, data string }{
		{"empty file", ""},
		{"no final newline", valid[:len(valid)-1]},
		{"truncated", valid[:len(valid)/2]},
		{"flipped digit", "watermark producer-snapshot v1\noffset 13" + valid[len("watermark producer-snapshot v1\noffset 12"):]},
		{"wrong kind", string(encodeCheckpoint("hw", snapshotBody))},
		{"future version", "watermark producer-snapshot v2" + valid[len("watermark producer-snapshot v1"):]},
		{"header only", "watermark producer-snapshot v1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachDisk(t, func(t *testing.T, d Disk) {
				require.NoError(t, d.WriteFileAtomic(name, []byte(tt.data)))
				body, ok, err := ReadProducerSnapshot(d, "p")
				require.ErrorIs(t, err, ErrCorruptCheckpoint)
				assert.Contains(t, err.Error(), name)
				assert.False(t, ok)
				assert.Nil(t, body)
			})
		})
	}
}

// The snapshot is written atomically and durably: a power loss right after
// a write keeps it whole (the new one, after a rewrite), and a removal is
// durable too, so a removed snapshot never comes back to describe batches a
// truncation took (Disk: WriteFileAtomic and Remove "are durable when they
// return").
// Reference: spec/SEMANTICS.md, Producer.
func TestProducerSnapshotSurvivesPowerLoss(t *testing.T) {
	for seed := range uint64(20) {
		d := NewSimDisk()
		require.NoError(t, WriteProducerSnapshot(d, "p", []string{"offset 1"}))
		require.NoError(t, WriteProducerSnapshot(d, "p", snapshotBody))
		require.NoError(t, d.Append("p/other", []byte("unsynced bytes")))
		d.PowerLoss(rand.New(rand.NewPCG(seed, 1)))
		body, ok, err := ReadProducerSnapshot(d, "p")
		require.NoError(t, err, "seed %d", seed)
		require.True(t, ok, "seed %d", seed)
		assert.Equal(t, snapshotBody, body, "seed %d", seed)

		require.NoError(t, RemoveProducerSnapshot(d, "p"))
		d.PowerLossWorst()
		_, ok, err = ReadProducerSnapshot(d, "p")
		require.NoError(t, err)
		assert.False(t, ok, "seed %d: a removed snapshot came back after a power loss", seed)
	}
}
