package storage

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func cache(t *testing.T, entries ...EpochEntry) EpochCache {
	t.Helper()
	c, err := NewEpochCache(entries)
	require.NoError(t, err)
	return c
}

func TestEpochCacheAssign(t *testing.T) {
	tests := []struct {
		name        string
		before      []EpochEntry
		epoch       int32
		start       int64
		wantChanged bool
		want        string
	}{
		{"first epoch", nil, 0, 0, true, "[0@0]"},
		{"first epoch later in the log", nil, 3, 7, true, "[3@7]"},
		{"next epoch", []EpochEntry{{0, 0}}, 1, 5, true, "[0@0 1@5]"},
		{"same epoch again: every batch of an epoch calls Assign", []EpochEntry{{0, 0}, {1, 5}}, 1, 9, false, "[0@0 1@5]"},
		{"same epoch, earlier start: epochs only grow", []EpochEntry{{0, 0}, {1, 5}}, 1, 2, false, "[0@0 1@5]"},
		{"older epoch is ignored", []EpochEntry{{0, 0}, {2, 5}}, 1, 9, false, "[0@0 2@5]"},
		{"equal start replaces an epoch that appended nothing", []EpochEntry{{0, 0}, {2, 5}}, 3, 5, true, "[0@0 3@5]"},
		{"earlier start drops the conflicting later entries", []EpochEntry{{0, 0}, {2, 5}, {4, 9}}, 5, 3, true, "[0@0 5@3]"},
		{"start 0 drops everything", []EpochEntry{{0, 0}, {2, 5}}, 3, 0, true, "[3@0]"},
		{"gap in epochs", []EpochEntry{{0, 0}}, 7, 1, true, "[0@0 7@1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cache(t, tt.before...)
			assert.Equal(t, tt.wantChanged, c.Assign(tt.epoch, tt.start))
			assert.Equal(t, tt.want, c.String())
			_, err := NewEpochCache(c.Entries())
			assert.NoError(t, err, "Assign keeps the invariants")
		})
	}
	assert.Panics(t, func() { var c EpochCache; c.Assign(-1, 0) })
	assert.Panics(t, func() { var c EpochCache; c.Assign(0, -1) })
}

func TestEpochCacheTruncateFromEnd(t *testing.T) {
	tests := []struct {
		offset int64
		want   string
	}{
		{100, "[0@0 2@5 4@9]"},
		{10, "[0@0 2@5 4@9]"},
		{9, "[0@0 2@5]"}, // epoch 4 has no records left
		{6, "[0@0 2@5]"},
		{5, "[0@0]"},
		{1, "[0@0]"},
		{0, "[]"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.offset), func(t *testing.T) {
			c := cache(t, EpochEntry{0, 0}, EpochEntry{2, 5}, EpochEntry{4, 9})
			c.TruncateFromEnd(tt.offset)
			assert.Equal(t, tt.want, c.String())
		})
	}
}

// TestEpochCacheEndOffsetFor checks the leader's answer to
// OffsetsForLeaderEpoch: the largest epoch it has <= the one asked, and where
// that epoch ends. Reference: KIP-101, KIP-279.
func TestEpochCacheEndOffsetFor(t *testing.T) {
	const leo = 30
	c := cache(t, EpochEntry{1, 0}, EpochEntry{3, 10}, EpochEntry{5, 20})
	tests := []struct {
		name       string
		epoch      int32
		wantEpoch  int32
		wantEnd    int64
		wantKIP101 int64
	}{
		{"latest epoch ends at LEO", 5, 5, leo, leo},
		{"older epoch ends where the next starts", 3, 3, 20, 20},
		{"first epoch", 1, 1, 10, 10},
		{"epoch the leader never had: largest smaller epoch", 4, 3, 20, 20},
		{"another epoch the leader never had", 2, 1, 10, 10},
		{"older than every entry: the first start", 0, 0, 0, UndefinedEpochOffset},
		{"newer than every entry", 6, UndefinedEpoch, UndefinedEpochOffset, UndefinedEpochOffset},
		{"undefined epoch", UndefinedEpoch, UndefinedEpoch, UndefinedEpochOffset, UndefinedEpochOffset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			epoch, end := c.EndOffsetFor(tt.epoch, leo)
			assert.Equal(t, tt.wantEpoch, epoch)
			assert.Equal(t, tt.wantEnd, end)
			assert.Equal(t, tt.wantKIP101, c.EndOffsetKIP101(tt.epoch, leo))
		})
	}

	var empty EpochCache
	epoch, end := empty.EndOffsetFor(0, 0)
	assert.Equal(t, UndefinedEpoch, epoch)
	assert.Equal(t, UndefinedEpochOffset, end)
	_, ok := empty.Latest()
	assert.False(t, ok)
}

// TestEpochCacheKIP279 replays the divergence of KAFKA-6361 on the caches
// alone. Broker A led epoch 1 and wrote offsets 3..6 that nobody copied; B
// then led epoch 2 from offset 5, its offsets 3..4 holding epoch 0 records.
// A, now a follower, asks B where epoch 1 ends. B never had epoch 1.
//
// "The leader returns the largest epoch it has that is <= the requested one,
// with that epoch's end offset; the follower truncates to the smaller of the
// returned end offset and its own end offset for the returned epoch."
// Reference: KIP-279, KAFKA-6361.
func TestEpochCacheKIP279(t *testing.T) {
	leader := cache(t, EpochEntry{0, 0}, EpochEntry{2, 5})
	const leaderLEO = 8
	follower := cache(t, EpochEntry{0, 0}, EpochEntry{1, 3})
	const followerLEO = 7

	asked, _ := follower.Latest()
	epoch, leaderEnd := leader.EndOffsetFor(asked, leaderLEO)
	assert.Equal(t, int32(0), epoch, "B answers with its largest epoch below 1")
	assert.Equal(t, int64(5), leaderEnd)
	ownEpoch, ownEnd := follower.EndOffsetFor(epoch, followerLEO)
	require.Equal(t, epoch, ownEpoch)
	assert.Equal(t, int64(3), min(leaderEnd, ownEnd), "A truncates where the logs diverge")

	// Before KIP-279 the answer was an offset alone; A truncated to 5 and
	// kept its epoch-1 records at 3 and 4, which B holds differently.
	assert.Equal(t, int64(5), min(leader.EndOffsetKIP101(asked, leaderLEO), followerLEO))
}

func TestNewEpochCacheValidates(t *testing.T) {
	for _, entries := range [][]EpochEntry{
		{{-1, 0}},
		{{0, -1}},
		{{1, 0}, {1, 5}},
		{{2, 0}, {1, 5}},
		{{0, 5}, {1, 5}},
		{{0, 5}, {1, 3}},
	} {
		_, err := NewEpochCache(entries)
		assert.Error(t, err, "%v", entries)
	}
}

func TestEpochCacheCopies(t *testing.T) {
	c := cache(t, EpochEntry{0, 0})
	clone := c.Clone()
	entries := c.Entries()
	entries[0].Epoch = 9
	clone.Assign(1, 4)
	assert.Equal(t, "[0@0]", c.String())
	assert.Equal(t, "[0@0 1@4]", clone.String())
}
