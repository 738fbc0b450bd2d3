package partition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/storage"
)

// "Consumers read only below HW. A fetch at an offset in (HW, LEO] returns
// nothing; beyond LEO it is OFFSET_OUT_OF_RANGE." Batches are atomic: a read
// returns the whole batch holding the offset, and only batches wholly below
// HW. Reference: spec/SEMANTICS.md, Replication.
func TestReadOnlyBelowHW(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2})
	for _, vals := range [][]string{{"a"}, {"b", "c"}, {"d"}, {"e", "f"}} {
		require.NoError(t, produceAt(r, 0, ProduceRequest{Acks: AcksLeader, Batch: batch(vals...)}, 0).Err)
	}
	fetchAt(r, 2, 4, 0) // 2 holds a, b-c, d: HW 4
	require.Equal(t, int64(4), r.HW())
	require.Equal(t, int64(6), r.LEO())

	cases := []struct {
		offset int64
		want   []string
		err    error
	}{
		{0, []string{"a", "b", "c", "d"}, nil},
		{1, []string{"b", "c", "d"}, nil},
		{2, []string{"b", "c", "d"}, nil}, // inside b-c: the whole batch
		{3, []string{"d"}, nil},
		{4, nil, nil}, // HW: e-f not committed
		{5, nil, nil},
		{6, nil, nil}, // LEO
		{7, nil, kafka.ErrOffsetOutOfRange},
		{-1, nil, kafka.ErrOffsetOutOfRange},
	}
	for _, tc := range cases {
		res := readAt(r, tc.offset, 1<<20, -1)
		assert.ErrorIs(t, res.Err, tc.err, "offset %d", tc.offset)
		if tc.err == nil {
			assert.NoError(t, res.Err, "offset %d", tc.offset)
		}
		assert.Equal(t, tc.want, values(res.Batches), "offset %d", tc.offset)
		assert.Equal(t, int64(4), res.HW, "offset %d", tc.offset)
		assert.Equal(t, int64(6), res.LEO, "offset %d", tc.offset)
	}

	// maxBytes bounds the answer but never below one batch.
	one := readAt(r, 0, 1, -1)
	assert.Equal(t, []string{"a"}, values(one.Batches))
	two := readAt(r, 0, one.Batches[0].Size()+r.Log()[1].Size(), -1)
	assert.Equal(t, []string{"a", "b", "c"}, values(two.Batches))
}

// KIP-320: a request that names the leader epoch it believes current is
// fenced when that epoch is older (FENCED_LEADER_EPOCH) and told to wait
// when it is newer (UNKNOWN_LEADER_EPOCH); the same check guards consumer
// reads, replica fetches and epoch queries. A replica that does not lead
// answers NOT_LEADER to a request of its own epoch. Reference: KIP-320.
func TestLeaderEpochFencing(t *testing.T) {
	r := newReplica(t, testConfig(1), stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)))
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	require.Equal(t, RoleLeader, r.Role())

	for _, tc := range []struct {
		epoch int32
		err   error
	}{{2, kafka.ErrFencedLeaderEpoch}, {4, kafka.ErrUnknownLeaderEpoch}, {3, nil}} {
		read := readAt(r, 0, 1<<20, tc.epoch)
		fetch := replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ID: 9, ReplicaID: 2, To: 1, FetchOffset: 0, CurrentLeaderEpoch: tc.epoch, MaxBytes: 1 << 20}, 0)
		end := epochEndAt(r, EpochEndRequest{TopicPartition: testTP, ID: 9, ReplicaID: 2, To: 1, Epoch: 1, CurrentLeaderEpoch: tc.epoch})
		if tc.err == nil {
			assert.NoError(t, read.Err)
			assert.Equal(t, []string{"a"}, values(read.Batches))
			assert.NoError(t, fetch.Err)
			assert.Equal(t, []string{"a"}, values(fetch.Batches))
			assert.Equal(t, EpochEndResponse{TopicPartition: testTP, ID: 9, Epoch: 1, EndOffset: 1}, end)
			continue
		}
		assert.ErrorIs(t, read.Err, tc.err, "read in epoch %d", tc.epoch)
		assert.Empty(t, read.Batches)
		assert.ErrorIs(t, fetch.Err, tc.err, "fetch in epoch %d", tc.epoch)
		assert.Empty(t, fetch.Batches)
		assert.Equal(t, uint64(9), fetch.ID)
		assert.Equal(t, int64(-1), fetch.HW)
		assert.ErrorIs(t, end.Err, tc.err, "epoch query in epoch %d", tc.epoch)
		assert.Equal(t, int32(-1), end.Epoch)
		assert.Equal(t, int64(-1), end.EndOffset)
	}
	assert.NoError(t, readAt(r, 0, 1<<20, -1).Err, "-1 skips the check")

	f := newReplica(t, testConfig(2), stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)))
	f.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	assert.ErrorIs(t, readAt(f, 0, 1<<20, 3).Err, kafka.ErrNotLeader)
	assert.ErrorIs(t, readAt(f, 0, 1<<20, -1).Err, kafka.ErrNotLeader)
	assert.ErrorIs(t, replicaFetchAt(f, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ReplicaID: 3, FetchOffset: 0, CurrentLeaderEpoch: 3}, 0).Err, kafka.ErrNotLeader)
	assert.ErrorIs(t, epochEndAt(f, EpochEndRequest{TopicPartition: testTP, ReplicaID: 3, Epoch: 1, CurrentLeaderEpoch: 3}).Err, kafka.ErrNotLeader)
	// The epoch is checked before the role, as Kafka does: a follower
	// fences a request from an epoch it has left.
	assert.ErrorIs(t, readAt(f, 0, 1<<20, 2).Err, kafka.ErrFencedLeaderEpoch)
	assert.ErrorIs(t, replicaFetchAt(f, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ReplicaID: 3, FetchOffset: 0, CurrentLeaderEpoch: 2}, 0).Err, kafka.ErrFencedLeaderEpoch)
	assert.ErrorIs(t, readAt(f, 0, 1<<20, 4).Err, kafka.ErrUnknownLeaderEpoch)

	// A fetch from a broker that holds no replica of the partition.
	assert.ErrorIs(t, replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ReplicaID: 7, FetchOffset: 0, CurrentLeaderEpoch: 3}, 0).Err, kafka.ErrNotLeader)
	// A follower fetching past the leader's LEO learns the LEO.
	oor := replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ReplicaID: 2, FetchOffset: 5, CurrentLeaderEpoch: 3}, 0)
	assert.ErrorIs(t, oor.Err, kafka.ErrOffsetOutOfRange)
	assert.Equal(t, int64(1), oor.LEO)
}

// "The controller's messages can be delayed and reordered": a state with an
// older leader epoch, or the same epoch and an older partition epoch, is
// ignored; the same epoch with a newer partition epoch only updates the ISR.
// Reference: spec/SEMANTICS.md, Replication ("leader epochs only increase").
func TestStaleStateUpdatesIgnored(t *testing.T) {
	r, _ := followerOf(t, testConfig(2), nil, 0, storage.EpochCache{}, 3)
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 5}, 1)
	drain(r)

	r.UpdateState(kafka.PartitionState{Leader: 2, LeaderEpoch: 2, ISR: []int32{2}, Replicas: []int32{1, 2}, PartitionEpoch: 9}, 2)
	assert.Equal(t, RoleFollower, r.Role(), "older leader epoch")
	assert.Equal(t, int32(1), r.Leader())
	assert.Equal(t, int32(3), r.LeaderEpoch())
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1, 2}, PartitionEpoch: 4}, 2)
	assert.Equal(t, []int32{1, 2}, r.ISR(), "older partition epoch")
	assert.False(t, r.HasReady())

	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{2, 1}, Replicas: []int32{1, 2}, PartitionEpoch: 6}, 3)
	assert.Equal(t, []int32{1, 2}, r.ISR(), "kept sorted")
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1, 2}, PartitionEpoch: 7}, 3)
	assert.Equal(t, []int32{1}, r.ISR())
	assert.Equal(t, RoleFollower, r.Role())
	assert.Empty(t, drain(r).Messages, "an ISR change does not restart the follower")

	l := leaderOf(t, testConfig(1), []int32{1, 2}, "a")
	l.UpdateState(kafka.PartitionState{Leader: 2, LeaderEpoch: 0, ISR: []int32{2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 3}, 1)
	assert.Equal(t, RoleLeader, l.Role(), "a stale state does not demote the leader")
	assert.False(t, l.HasReady())
}

// A restarted replica knows the epoch of its latest records but no role;
// the controller's state for that same epoch must still give it one (the
// controller had no reason to bump the epoch), while an older one must not.
// Reference: spec/SEMANTICS.md, Replication.
func TestRestartedReplicaTakesRoleInItsOwnEpoch(t *testing.T) {
	load := func() *Replica {
		return newReplica(t, testConfig(2), stored([]int32{1, 3}, "a", "b"), 2, epochCache(t, entry(1, 0), entry(3, 1)))
	}
	r := load()
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	assert.Equal(t, RoleNone, r.Role(), "older than its own records")
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	assert.Equal(t, RoleFollower, r.Role())
	f := messages[FetchRequest](drain(r))
	require.Len(t, f, 1)
	assert.Equal(t, int32(3), f[0].LastFetchedEpoch)
	assert.Equal(t, int64(2), f[0].FetchOffset)

	r = load()
	r.UpdateState(kafka.PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	assert.Equal(t, RoleLeader, r.Role())
	assert.Equal(t, int64(2), r.HW(), "alone in the ISR")
}

// KIP-903: fetches carry the follower process's incarnation. A fetch from
// an older process (delayed in the network or held by the leader) says
// nothing true about the follower's log any more and is refused; an ISR
// expansion names the incarnation the leader saw, so the controller can
// refuse a member that restarted since. Reference: KIP-903.
func TestFollowerIncarnationFencing(t *testing.T) {
	cfg := testConfig(1)
	cfg.Incarnation = 10
	r := leaderOf(t, cfg, []int32{1, 2}, "a", "b")
	fetch := func(id int32, inc, offset int64) FetchResponse {
		return replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ID: 1, ReplicaID: id, ReplicaIncarnation: inc, To: 1,
			FetchOffset: offset, CurrentLeaderEpoch: 1, MaxBytes: 1 << 20}, 0)
	}
	require.NoError(t, fetch(2, 5, 1).Err)
	assert.Equal(t, int64(1), r.HW())

	stale := fetch(2, 4, 2)
	assert.ErrorIs(t, stale.Err, kafka.ErrStaleBrokerEpoch)
	assert.Empty(t, stale.Batches)
	assert.Equal(t, int64(1), r.HW(), "the old process's fetch offset does not count")

	require.NoError(t, fetch(2, 6, 2).Err)
	assert.Equal(t, int64(2), r.HW())
	assert.ErrorIs(t, fetch(2, 5, 2).Err, kafka.ErrStaleBrokerEpoch, "the process before the current one")

	require.NoError(t, fetch(3, 7, 2).Err)
	got := messages[kafka.AlterPartition](drain(r))
	require.Len(t, got, 1)
	assert.Equal(t, []int32{1, 2, 3}, got[0].NewISR)
	assert.Equal(t, []int64{10, 6, 7}, got[0].NewISRIncarnations)

	// What the previous process reported does not count for the new one,
	// even before the new one has a valid fetch.
	r = leaderOf(t, cfg, []int32{1, 2, 3}, "a", "b", "c")
	require.NoError(t, fetch(2, 5, 3).Err)
	require.NoError(t, fetch(3, 5, 1).Err)
	require.Equal(t, int64(1), r.HW())
	assert.ErrorIs(t, fetch(2, 6, 9).Err, kafka.ErrOffsetOutOfRange, "the restarted 2 fetches past the leader's LEO")
	require.NoError(t, fetch(3, 5, 3).Err)
	assert.Equal(t, int64(1), r.HW(), "2's new process has not shown it holds offsets 1-2")
}

// Resolved says whether the replica's log is reconciled with its epoch: a
// leader's is, a follower's is once truncation is settled (on the fetch
// path, once an answer came without a divergence), a replica without a
// role (just restarted) holds leftovers. The
// simulator's LogMatching check relies on it. Reference:
// spec/SEMANTICS.md, Replication ("Protocol invariants").
func TestResolved(t *testing.T) {
	f := newReplica(t, testConfig(2), stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)))
	assert.False(t, f.Resolved(), "restarted, no role yet")
	f.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	assert.False(t, f.Resolved(), "the fetch path, before an answer")
	fetch := messages[FetchRequest](drain(f))[0]
	f.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: fetch.ID, Diverging: true, DivergingEpoch: 1, DivergingEndOffset: 1, HW: 1, LEO: 1}, 1)
	assert.False(t, f.Resolved(), "a diverging answer rules nothing out yet")
	fetch = messages[FetchRequest](drain(f))[0]
	f.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: fetch.ID, HW: 1, LEO: 1}, 2)
	assert.True(t, f.Resolved(), "an answer without divergence")

	r := newReplica(t, queryConfig(2), stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)))
	assert.False(t, r.Resolved(), "restarted, no role yet")
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	assert.False(t, r.Resolved(), "waiting for the epoch answer")
	q := messages[EpochEndRequest](drain(r))[0]
	r.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: q.ID, Epoch: 1, EndOffset: 1}, 1)
	assert.True(t, r.Resolved())

	e, _ := followerOf(t, testConfig(2), nil, 0, storage.EpochCache{}, 1)
	assert.True(t, e.Resolved(), "an empty log has nothing to reconcile")
	assert.True(t, leaderOf(t, testConfig(1), []int32{1}).Resolved())
}
