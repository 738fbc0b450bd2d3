package storage

import (
	"math/rand/v2"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHWCheckpoint(t *testing.T) {
	forEachDisk(t, func(t *testing.T, d Disk) {
		hw, err := ReadHW(d, "t-0")
		require.NoError(t, err)
		assert.Zero(t, hw, "no checkpoint: nothing committed yet")

		require.NoError(t, WriteHW(d, "t-0", 42))
		require.NoError(t, WriteHW(d, "t-0", 57))
		hw, err = ReadHW(d, "t-0")
		require.NoError(t, err)
		assert.Equal(t, int64(57), hw)
		require.Error(t, WriteHW(d, "t-0", -1))

		hw, err = ReadHW(d, "t-1")
		require.NoError(t, err)
		assert.Zero(t, hw, "checkpoints are per partition directory")
	})
}

func TestCheckpointsSurvivePowerLoss(t *testing.T) {
	d := NewSimDisk()
	require.NoError(t, WriteHW(d, "p", 12))
	c := cache(t, EpochEntry{0, 0}, EpochEntry{4, 10})
	require.NoError(t, WriteEpochCache(d, "p", c))
	d.PowerLoss(rand.New(rand.NewPCG(1, 2)))
	hw, err := ReadHW(d, "p")
	require.NoError(t, err)
	assert.Equal(t, int64(12), hw)
	got, err := ReadEpochCache(d, "p")
	require.NoError(t, err)
	assert.Equal(t, c.Entries(), got.Entries())
}

func TestEpochCacheCheckpoint(t *testing.T) {
	forEachDisk(t, func(t *testing.T, d Disk) {
		got, err := ReadEpochCache(d, "p")
		require.NoError(t, err)
		assert.Empty(t, got.Entries())

		for _, c := range []EpochCache{
			{},
			cache(t, EpochEntry{0, 0}),
			cache(t, EpochEntry{0, 0}, EpochEntry{3, 17}, EpochEntry{9, 1 << 40}),
		} {
			require.NoError(t, WriteEpochCache(d, "p", c))
			got, err := ReadEpochCache(d, "p")
			require.NoError(t, err)
			assert.Equal(t, c.Entries(), got.Entries())
		}
	})
}

func TestCheckpointFormatIsReadable(t *testing.T) {
	d := NewSimDisk()
	require.NoError(t, WriteEpochCache(d, "p", cache(t, EpochEntry{0, 0}, EpochEntry{2, 7})))
	data, err := d.ReadFile(path.Join("p", EpochFile))
	require.NoError(t, err)
	assert.Regexp(t, `^watermark leader-epoch v1\n2\n0 0\n2 7\ncrc32c [0-9a-f]{8}\n$`, string(data))
}

// TestCheckpointCorruption checks that a damaged checkpoint is an error that
// names the problem, never a silently wrong high watermark or epoch cache.
func TestCheckpointCorruption(t *testing.T) {
	valid := func(kind string, body ...string) string { return string(encodeCheckpoint(kind, body)) }
	hwName, epochName := path.Join("p", HWFile), path.Join("p", EpochFile)
	tests := []struct {
		name, file, data string
	}{
		{"empty file", hwName, ""},
		{"no final newline", hwName, "watermark hw v1\n5\ncrc32c 00000000"},
		{"flipped digit", hwName, "watermark hw v1\n6" + valid("hw", "5")[len("watermark hw v1\n5"):]},
		{"truncated", hwName, valid("hw", "5")[:20]},
		{"wrong kind", hwName, valid("leader-epoch", "0")},
		{"future version", hwName, "x" + valid("hw", "5")[1:]},
		{"negative hw", hwName, valid("hw", "-3")},
		{"not a number", hwName, valid("hw", "five")},
		{"two hw lines", hwName, valid("hw", "5", "6")},
		{"no body", hwName, valid("hw")},
		{"count mismatch", epochName, valid("leader-epoch", "2", "0 0")},
		{"missing count", epochName, valid("leader-epoch")},
		{"bad entry", epochName, valid("leader-epoch", "1", "0")},
		{"epoch overflow", epochName, valid("leader-epoch", "1", "4294967296 0")},
		{"decreasing epochs", epochName, valid("leader-epoch", "2", "3 0", "2 5")},
		{"repeated start", epochName, valid("leader-epoch", "2", "1 5", "2 5")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewSimDisk()
			require.NoError(t, d.WriteFileAtomic(tt.file, []byte(tt.data)))
			var err error
			if tt.file == hwName {
				_, err = ReadHW(d, "p")
			} else {
				_, err = ReadEpochCache(d, "p")
			}
			require.ErrorIs(t, err, ErrCorruptCheckpoint)
			assert.Contains(t, err.Error(), tt.file)
		})
	}
}
