package storage

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func read(t *testing.T, d *SimDisk, name string) string {
	t.Helper()
	b, err := d.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// TestSimDiskPowerLossKeepsPrefixOfUnsynced checks the torn-write model: a
// power loss keeps the durable content plus some prefix, possibly empty,
// possibly whole, of what was appended since the last sync.
func TestSimDiskPowerLossKeepsPrefixOfUnsynced(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(100) {
		d := NewSimDisk()
		require.NoError(t, d.Append("f", []byte("dur")))
		require.NoError(t, d.Sync("f"))
		require.NoError(t, d.Append("f", []byte("ab")))
		require.NoError(t, d.Append("f", []byte("c")))
		assert.Equal(t, 3, d.UnsyncedBytes("f"))

		d.PowerLoss(rand.New(rand.NewPCG(seed, 0)))
		got := read(t, d, "f")
		require.Contains(t, []string{"dur", "dura", "durab", "durabc"}, got)
		seen[got] = true
		assert.Zero(t, d.UnsyncedBytes("f"), "what survived is durable")
	}
	assert.Len(t, seen, 4, "every prefix length occurs")
}

func TestSimDiskPowerLossNeverSyncedFiles(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(100) {
		d := NewSimDisk()
		require.NoError(t, d.Append("new", []byte("data")))
		require.NoError(t, d.WriteFileAtomic("ckpt", []byte("x")))
		_, ok := d.Durable("new")
		assert.False(t, ok)
		d.PowerLoss(rand.New(rand.NewPCG(seed, 1)))
		got, err := d.ReadFile("new")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			seen["vanished"] = true
		case err == nil:
			require.True(t, strings.HasPrefix("data", string(got)), "a prefix of what was appended: %q", got)
			seen[map[bool]string{true: "whole", false: "part"}[string(got) == "data"]] = true
			_, ok := d.Durable("new")
			assert.True(t, ok, "what survived is durable")
		default:
			t.Fatal(err)
		}
		assert.Equal(t, "x", read(t, d, "ckpt"), "an atomic write is durable at once")
		assert.Equal(t, 1, d.PowerLosses())

		w := NewSimDisk()
		require.NoError(t, w.Append("new", []byte("data")))
		w.PowerLossWorst()
		_, err = w.ReadFile("new")
		require.ErrorIs(t, err, fs.ErrNotExist, "at worst a file never synced vanishes")
	}
	assert.Len(t, seen, 3, "a file never synced vanishes, or keeps some or all of what was appended: %v", seen)
}

// TestSimDiskPowerLossAfterTruncate checks that an unsynced truncation either
// did not reach the disk (durable content back, later appends gone) or did
// (truncated content plus a prefix of later appends).
func TestSimDiskPowerLossAfterTruncate(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(100) {
		d := NewSimDisk()
		require.NoError(t, d.Append("f", []byte("abcdef")))
		require.NoError(t, d.Sync("f"))
		require.NoError(t, d.Truncate("f", 4))
		require.NoError(t, d.Truncate("f", 2))
		require.NoError(t, d.Append("f", []byte("XY")))
		durable, ok := d.Durable("f")
		require.True(t, ok)
		assert.Equal(t, "abcdef", string(durable))

		d.PowerLoss(rand.New(rand.NewPCG(seed, 0)))
		got := read(t, d, "f")
		require.Contains(t, []string{"abcdef", "ab", "abX", "abXY"}, got)
		seen[got] = true
	}
	assert.Len(t, seen, 4)
}

func TestSimDiskSyncMakesDurable(t *testing.T) {
	d := NewSimDisk()
	require.NoError(t, d.Append("f", []byte("abc")))
	require.NoError(t, d.Truncate("f", 1))
	require.NoError(t, d.Append("f", []byte("z")))
	require.NoError(t, d.Sync("f"))
	assert.Zero(t, d.UnsyncedBytes("f"))
	for seed := range uint64(10) {
		c := d.Clone()
		c.PowerLoss(rand.New(rand.NewPCG(seed, 0)))
		assert.Equal(t, "az", read(t, c, "f"))
	}
}

// TestSimDiskDeterministic checks that a run replays from its seed: the same
// operations and seed give the same disk, file by file.
func TestSimDiskDeterministic(t *testing.T) {
	run := func(seed uint64) map[string]string {
		d := NewSimDisk()
		ops := rand.New(rand.NewPCG(42, 42))
		for i := range 300 {
			name := []string{"a/log", "b/log", "c/log", "d/log"}[ops.IntN(4)]
			switch ops.IntN(5) {
			case 0:
				_ = d.Sync(name)
			case 1:
				if b, err := d.ReadFile(name); err == nil {
					require.NoError(t, d.Truncate(name, int64(ops.IntN(len(b)+1))))
				}
			default:
				require.NoError(t, d.Append(name, []byte{byte(i), byte(i >> 8)}))
			}
		}
		d.PowerLoss(rand.New(rand.NewPCG(seed, 7)))
		out := map[string]string{}
		names, err := d.List("")
		require.NoError(t, err)
		for _, name := range names {
			out[name] = read(t, d, name)
		}
		return out
	}
	first := run(1)
	assert.Equal(t, first, run(1))
	differs := false
	for seed := uint64(2); seed < 10 && !differs; seed++ {
		differs = !assert.ObjectsAreEqual(first, run(seed))
	}
	assert.True(t, differs, "the seed has no effect; the test checks nothing")
}

func TestSimDiskCloneIsIndependent(t *testing.T) {
	d := NewSimDisk()
	require.NoError(t, d.Append("f", []byte("ab")))
	require.NoError(t, d.Sync("f"))
	require.NoError(t, d.Append("f", []byte("cd")))
	d.Crash()
	c := d.Clone()
	require.NoError(t, c.Append("f", []byte("!")))
	require.NoError(t, c.WriteFileAtomic("g", nil))
	assert.Equal(t, "abcd", read(t, d, "f"))
	assert.Equal(t, "abcd!", read(t, c, "f"))
	assert.Equal(t, 2, d.UnsyncedBytes("f"))
	assert.Equal(t, 3, c.UnsyncedBytes("f"))
	assert.Equal(t, 1, c.Crashes())
	names, err := d.List("")
	require.NoError(t, err)
	assert.Equal(t, []string{"f"}, names)
}

func TestSimDiskZeroValue(t *testing.T) {
	var d SimDisk
	names, err := d.List("")
	require.NoError(t, err)
	assert.Empty(t, names)
	require.NoError(t, d.Append("f", []byte("x")))
	assert.Equal(t, "x", read(t, &d, "f"))
	assert.Zero(t, d.UnsyncedBytes("missing"))
}

// PowerLossWorst keeps exactly the durable content: unsynced appends gone,
// unsynced truncations undone, never-synced files gone.
func TestPowerLossWorstKeepsExactlyTheDurableContent(t *testing.T) {
	d := NewSimDisk()
	require.NoError(t, d.Append("a", []byte("synced")))
	require.NoError(t, d.Sync("a"))
	require.NoError(t, d.Append("a", []byte("+unsynced")))
	require.NoError(t, d.Append("b", []byte("never synced")))
	require.NoError(t, d.Append("c", []byte("0123456789")))
	require.NoError(t, d.Sync("c"))
	require.NoError(t, d.Truncate("c", 4))
	d.PowerLossWorst()
	got, err := d.ReadFile("a")
	require.NoError(t, err)
	require.Equal(t, "synced", string(got))
	_, err = d.ReadFile("b")
	require.ErrorIs(t, err, fs.ErrNotExist)
	got, err = d.ReadFile("c")
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(got), "an unsynced truncation is undone")
	require.Equal(t, 1, d.PowerLosses())
}

// TestSimDiskStableAndSize: Stable is what any power loss keeps, the
// synced prefix that no truncation has cut since; Size is the current
// length.
func TestSimDiskStableAndSize(t *testing.T) {
	d := NewSimDisk()
	assert.Equal(t, int64(-1), d.Size("f"))
	require.NoError(t, d.Append("f", []byte("abc")))
	assert.Zero(t, d.Stable("f"), "never synced")
	require.NoError(t, d.Sync("f"))
	require.NoError(t, d.Append("f", []byte("de")))
	assert.Equal(t, int64(3), d.Stable("f"))
	assert.Equal(t, int64(5), d.Size("f"))
	require.NoError(t, d.Truncate("f", 2))
	assert.Equal(t, int64(2), d.Stable("f"), "a truncation below the synced length")
	d.PowerLoss(rand.New(rand.NewPCG(1, 2)))
	assert.GreaterOrEqual(t, d.Size("f"), d.Stable("f"))
}

// Damage flips synced bytes: what the file reads and what survives a
// power loss both carry the damage; a missing file or an offset past the
// end is left alone.
func TestSimDiskDamage(t *testing.T) {
	d := NewSimDisk()
	require.NoError(t, d.Append("f", []byte("abcdefgh")))
	require.NoError(t, d.Sync("f"))
	require.Equal(t, 2, d.Damage("f", 6, 8), "the file ends first")
	got, err := d.ReadFile("f")
	require.NoError(t, err)
	require.Equal(t, []byte{'a', 'b', 'c', 'd', 'e', 'f', 'g' ^ 0xff, 'h' ^ 0xff}, got)
	durable, ok := d.Durable("f")
	require.True(t, ok)
	require.Equal(t, got, durable)
	require.Zero(t, d.Damage("f", 8, 1))
	require.Zero(t, d.Damage("missing", 0, 1))
}
