package partition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// divergedLeader is broker 1 leading epoch 4 with a@1 b@1 c@3 (epoch 2
// never reached it), 2 a follower outside the ISR.
func divergedLeader(t *testing.T) *Replica {
	t.Helper()
	r := newReplica(t, testConfig(1), stored([]int32{1, 1, 3}, "a", "b", "c"), 3, epochCache(t, entry(1, 0), entry(3, 2)))
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	require.Equal(t, RoleLeader, r.Role())
	drain(r)
	return r
}

func fetchNaming(r *Replica, offset int64, last int32) FetchResponse {
	return replicaFetchAt(r, FetchRequest{TopicPartition: testTP, ID: 7, ReplicaID: 2, To: 1, FetchOffset: offset,
		CurrentLeaderEpoch: 4, LastFetchedEpoch: last, MaxBytes: 1 << 20}, 10)
}

// The leader checks a fetch's LastFetchedEpoch against its own cache, as
// Kafka's Partition.fetchRecords does: the largest epoch it holds at or
// below it must be that epoch and end at or past the fetch offset, or the
// answer is that epoch and its end (DivergingEpoch), with no records, and
// the fetch does not count as the follower's progress: no fetch offset
// noted, no ISR expansion, no HW move. A fetch that does not diverge is
// served as before, and one naming no epoch is not checked. Reference:
// KAFKA-10554, KIP-595.
func TestLeaderAnswersDivergenceWithoutProgress(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offset  int64
		last    int32
		diverge bool
		epoch   int32
		end     int64
	}{
		{"an epoch the leader never had", 3, 2, true, 1, 2},
		{"its epoch ends below the fetch offset", 3, 1, true, 1, 2},
		{"the latest epoch, past the leader's end", 5, 3, true, 3, 3},
		{"older than every epoch the leader holds", 1, 0, true, 0, 0},
		{"epoch 1 up to its end", 2, 1, false, 0, 0},
		{"epoch 3 inside it", 3, 3, false, 0, 0},
		{"no epoch named", 2, -1, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := divergedLeader(t)
			resp := fetchNaming(r, tc.offset, tc.last)
			require.NoError(t, resp.Err)
			rd := drain(r)
			p, ok := r.FollowerProgress(2)
			require.True(t, ok)
			if !tc.diverge {
				assert.False(t, resp.Diverging)
				assert.Equal(t, tc.offset, p.LEO, "the fetch offset is the follower's LEO")
				return
			}
			assert.True(t, resp.Diverging)
			assert.Equal(t, tc.epoch, resp.DivergingEpoch)
			assert.Equal(t, tc.end, resp.DivergingEndOffset)
			assert.Empty(t, resp.Batches, "no records on a diverging answer")
			assert.Equal(t, int64(3), resp.HW)
			assert.Equal(t, int64(-1), p.LEO, "a diverging fetch is no progress")
			assert.Empty(t, messages[kafka.AlterPartition](rd), "no ISR expansion on it")
		})
	}
	t.Run("below the log start whatever the epochs", func(t *testing.T) {
		all := stored([]int32{1, 1, 1}, "a", "b", "c")
		st := &brokenLog{durable: durable{log: all[2:]}}
		r, err := NewOnLog(testConfig(1), testTP, st, 3, epochCache(t, entry(1, 0)), nil)
		require.NoError(t, err)
		r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
		assert.ErrorIs(t, fetchNaming(r, 1, 1).Err, kafka.ErrOffsetOutOfRange)
	})
}

// The follower truncates on a DivergingEpoch as KIP-279 says
// (AbstractFetcherThread.getOffsetTruncationState): to min(leader's end,
// own end of that epoch, LEO) when it holds the epoch, else to the end of
// its largest epoch below it, and its next fetch names its new last epoch.
// It takes neither records nor the HW from that answer. Reference:
// KAFKA-10554, KIP-279.
func TestFollowerTruncatesOnDivergingEpoch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		epochs    []int32
		cache     []storage.EpochEntry
		divEpoch  int32
		divEnd    int64
		truncTo   int64
		nextEpoch int32
	}{
		{"holds the epoch: the leader's end", []int32{1, 1, 1}, []storage.EpochEntry{entry(1, 0)}, 1, 1, 1, 1},
		{"holds the epoch: its own end", []int32{1, 2, 2}, []storage.EpochEntry{entry(1, 0), entry(2, 1)}, 1, 2, 1, 1},
		{"lacks the epoch: intermediate", []int32{1, 3}, []storage.EpochEntry{entry(1, 0), entry(3, 1)}, 2, 3, 1, 1},
		{"older than all its epochs", []int32{2, 2}, []storage.EpochEntry{entry(2, 0)}, 1, 1, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := make([]string, len(tc.epochs))
			for i := range vals {
				vals[i] = string(rune('a' + i))
			}
			r, rd := followerOf(t, testConfig(2), stored(tc.epochs, vals...), 1, epochCache(t, tc.cache...), 5)
			assert.Empty(t, messages[EpochEndRequest](rd), "no OffsetsForLeaderEpoch on the fetch path")
			f := messages[FetchRequest](rd)
			require.Len(t, f, 1)
			assert.Equal(t, tc.cache[len(tc.cache)-1].Epoch, f[0].LastFetchedEpoch)
			assert.Equal(t, int64(len(tc.epochs)), f[0].FetchOffset)
			r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f[0].ID, Diverging: true, DivergingEpoch: tc.divEpoch,
				DivergingEndOffset: tc.divEnd, HW: 9, LEO: 9, Batches: []record.Batch{leaderBatch(0, 4, "z")}}, 1)
			rd = drain(r)
			assert.Equal(t, tc.truncTo, r.LEO())
			assert.LessOrEqual(t, r.HW(), tc.truncTo, "the answer's HW is not taken")
			assert.Empty(t, rd.Append, "nor its records")
			next := messages[FetchRequest](rd)
			require.Len(t, next, 1)
			assert.Equal(t, tc.truncTo, next[0].FetchOffset)
			assert.Equal(t, tc.nextEpoch, next[0].LastFetchedEpoch)
		})
	}
}

// A replica that led an epoch and appended nothing in it keeps that epoch
// at its cache's end, starting at its LEO. As a follower it names it; the
// leader never had it and answers with the epoch below, which ends at the
// follower's LEO: nothing to cut from the log, but the cache drops the
// empty epoch (Kafka's truncateTo cuts the cache even when the log ends
// below the offset), or every later fetch would name it again and the
// follower would never fetch a record.
func TestFollowerDropsAnEmptyEpochOnDivergence(t *testing.T) {
	r := newReplica(t, testConfig(2), stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)))
	r.UpdateState(kafka.PartitionState{Leader: 2, LeaderEpoch: 2, ISR: []int32{2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	require.Equal(t, RoleLeader, r.Role())
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1, 2}, PartitionEpoch: 2}, 0)
	require.Equal(t, []storage.EpochEntry{entry(1, 0), entry(2, 1)}, entries(r.EpochCache()))
	rd := drain(r)
	f := messages[FetchRequest](rd)
	require.Len(t, f, 1)
	require.Equal(t, int32(2), f[0].LastFetchedEpoch)
	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f[0].ID, Diverging: true, DivergingEpoch: 1, DivergingEndOffset: 2, HW: 1, LEO: 2}, 1)
	rd = drain(r)
	assert.Equal(t, int64(1), r.LEO(), "the log keeps a")
	assert.Equal(t, int64(-1), rd.Truncate, "nothing cut from the log")
	assert.True(t, rd.EpochsChanged)
	assert.Equal(t, []storage.EpochEntry{entry(1, 0)}, entries(r.EpochCache()))
	next := messages[FetchRequest](rd)
	require.Len(t, next, 1)
	assert.Equal(t, int32(1), next[0].LastFetchedEpoch)
}

// On the fetch path OFFSET_OUT_OF_RANGE past the leader's log start means
// the leader knows no end for the epoch named (or, with no epoch named,
// that our log runs past its end): the follower asks nothing and truncates
// to 0, as the query path does when the leader holds no epoch at or below
// ours. Reference: spec/SEMANTICS.md, "UNDEFINED_EPOCH_OFFSET".
func TestFetchPathOutOfRange(t *testing.T) {
	r, rd := followerOf(t, testConfig(2), stored([]int32{1, 1}, "a", "b"), 0, epochCache(t, entry(1, 0)), 2)
	f := messages[FetchRequest](rd)
	require.Len(t, f, 1)
	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f[0].ID, Err: kafka.ErrOffsetOutOfRange, HW: -1, LEO: 1}, 2)
	rd = drain(r)
	assert.Empty(t, messages[EpochEndRequest](rd))
	assert.Equal(t, int64(0), r.LEO())
	next := messages[FetchRequest](rd)
	require.Len(t, next, 1)
	assert.Equal(t, int32(-1), next[0].LastFetchedEpoch)
}
