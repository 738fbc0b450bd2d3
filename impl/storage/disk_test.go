package storage

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiskContract checks the behaviour common to every Disk that the log and
// the checkpoints rely on.
func TestDiskContract(t *testing.T) {
	forEachDisk(t, func(t *testing.T, d Disk) {
		_, err := d.ReadFile("a/log")
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.ErrorIs(t, d.Truncate("a/log", 0), fs.ErrNotExist)
		require.ErrorIs(t, d.Sync("a/log"), fs.ErrNotExist)
		require.ErrorIs(t, d.Remove("a/log"), fs.ErrNotExist)

		require.NoError(t, d.Append("a/log", []byte("hello ")))
		buf := []byte("world")
		require.NoError(t, d.Append("a/log", buf))
		buf[0] = 'W'
		got, err := d.ReadFile("a/log")
		require.NoError(t, err)
		assert.Equal(t, "hello world", string(got), "Append does not retain its argument")
		got[0] = 'H'
		got, err = d.ReadFile("a/log")
		require.NoError(t, err)
		assert.Equal(t, "hello world", string(got), "ReadFile returns a copy")

		require.NoError(t, d.Sync("a/log"))
		require.Error(t, d.Truncate("a/log", 100), "Truncate does not extend")
		require.Error(t, d.Truncate("a/log", -1))
		require.NoError(t, d.Truncate("a/log", 5))
		require.NoError(t, d.Append("a/log", []byte("!")))
		got, err = d.ReadFile("a/log")
		require.NoError(t, err)
		assert.Equal(t, "hello!", string(got))

		require.NoError(t, d.WriteFileAtomic("a/hw", []byte("one")))
		require.NoError(t, d.WriteFileAtomic("a/hw", []byte("two")))
		got, err = d.ReadFile("a/hw")
		require.NoError(t, err)
		assert.Equal(t, "two", string(got))
		require.NoError(t, d.WriteFileAtomic("a/log", []byte("replaced")))
		require.NoError(t, d.Append("a/log", []byte("+")))
		got, err = d.ReadFile("a/log")
		require.NoError(t, err)
		assert.Equal(t, "replaced+", string(got), "appends after an atomic write go to the new file")

		require.NoError(t, d.Append("b/log", nil))
		require.NoError(t, d.Append("ab", nil))
		names, err := d.List("")
		require.NoError(t, err)
		assert.Equal(t, []string{"a/hw", "a/log", "ab", "b/log"}, names)
		names, err = d.List("a/")
		require.NoError(t, err)
		assert.Equal(t, []string{"a/hw", "a/log"}, names)
		names, err = d.List("a")
		require.NoError(t, err)
		assert.Equal(t, []string{"a/hw", "a/log", "ab"}, names)
		names, err = d.List("zz/")
		require.NoError(t, err)
		assert.Empty(t, names)

		require.NoError(t, d.Remove("a/hw"))
		_, err = d.ReadFile("a/hw")
		require.ErrorIs(t, err, fs.ErrNotExist)

		_, err = d.List("../")
		if _, ok := d.(*FileDisk); ok {
			require.Error(t, err, "a prefix may not escape the root")
		}

		for _, bad := range []string{"", ".", "/abs", "../escape", "a/../b", "a//b", "a/"} {
			require.Error(t, d.Append(bad, []byte("x")), "name %q", bad)
			require.Error(t, d.WriteFileAtomic(bad, []byte("x")), "name %q", bad)
			_, err := d.ReadFile(bad)
			require.Error(t, err, "name %q", bad)
		}
	})
}

func TestFileDiskLayout(t *testing.T) {
	root := t.TempDir()
	d, err := NewFileDisk(filepath.Join(root, "data"))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	require.NoError(t, d.Append("topic-0/log", []byte("x")))
	require.NoError(t, d.Sync("topic-0/log"))
	require.NoError(t, d.WriteFileAtomic("topic-0/hw-checkpoint", []byte("7")))
	got, err := os.ReadFile(filepath.Join(d.Root(), "topic-0", "log"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(got), "names map to real paths under the root")

	// A temporary file left by a crash inside WriteFileAtomic is not listed.
	require.NoError(t, os.WriteFile(filepath.Join(d.Root(), "topic-0", "hw-checkpoint.123"+tmpSuffix), nil, 0o644))
	names, err := d.List("")
	require.NoError(t, err)
	assert.Equal(t, []string{"topic-0/hw-checkpoint", "topic-0/log"}, names)
}
