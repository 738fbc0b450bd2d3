package partition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// followerOf returns broker 2 following broker 1 in epoch, its Ready taken
// and returned.
func followerOf(t testing.TB, cfg Config, log []record.Batch, hw int64, ec storage.EpochCache, epoch int32) (*Replica, Ready) {
	t.Helper()
	r := newReplica(t, cfg, log, hw, ec)
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: epoch, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	require.Equal(t, RoleFollower, r.Role())
	return r, drain(r)
}

// leaderBatch is a batch as a leader of epoch stores it at offset.
func leaderBatch(offset int64, epoch int32, values ...string) record.Batch {
	b := batch(values...)
	b.BaseOffset, b.LeaderEpoch = offset, epoch
	return b
}

// A follower's fetch offset is its LEO, so sending it acknowledges every
// record below: the follower appends what it fetched and puts the next
// fetch, from the new LEO, in the same Ready after the Append, which the
// caller stores before it sends. Its HW is the leader's, clamped to its own
// LEO. Reference: spec/SEMANTICS.md, Replication; package doc ("persist, then
// send").
func TestFollowerAppendsThenFetchesFromNewLEO(t *testing.T) {
	cfg := testConfig(2)
	r, rd := followerOf(t, cfg, nil, 0, storage.EpochCache{}, 1)
	fetches := messages[FetchRequest](rd)
	require.Len(t, fetches, 1, "an empty log has nothing to truncate: fetch at once")
	assert.Equal(t, FetchRequest{TopicPartition: testTP, ID: fetches[0].ID, ReplicaID: 2, To: 1, FetchOffset: 0,
		CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: cfg.ReplicaFetchMaxBytes}, fetches[0])

	sent := []record.Batch{leaderBatch(0, 1, "a"), leaderBatch(1, 1, "b", "c")}
	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: fetches[0].ID, Batches: sent, HW: 10, LEO: 5}, 5)
	rd = drain(r)
	assert.Equal(t, int64(-1), rd.Truncate)
	assert.Equal(t, sent, rd.Append)
	assert.True(t, rd.HWChanged)
	assert.Equal(t, int64(3), rd.HW, "leader HW 10 clamped to own LEO 3")
	assert.True(t, rd.EpochsChanged, "epoch 1 starts at 0 in this log now")
	assert.Equal(t, []storage.EpochEntry{entry(1, 0)}, entries(r.EpochCache()))
	next := messages[FetchRequest](rd)
	require.Len(t, next, 1)
	assert.Equal(t, int64(3), next[0].FetchOffset)
	assert.Greater(t, next[0].ID, fetches[0].ID)

	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: next[0].ID, HW: 2, LEO: 3}, 6)
	assert.Equal(t, int64(2), r.HW(), "the leader's HW when it is below the follower's LEO")
	assert.Equal(t, int64(3), messages[FetchRequest](drain(r))[0].FetchOffset)
}

// Ready may gather several inputs: a caller that applies it only now must
// still end with storage equal to the replica. Appends that a later
// truncation in the same Ready made void are not handed over.
// Reference: package doc (Ready); Ready.Truncate.
func TestReadyGathersInputs(t *testing.T) {
	cfg := testConfig(2)
	cfg.Truncation = TruncateToHW
	r, rd := followerOf(t, cfg, stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)), 1)
	f := messages[FetchRequest](rd)[0]
	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f.ID, Batches: []record.Batch{leaderBatch(1, 1, "b"), leaderBatch(2, 1, "c")}, HW: 1, LEO: 3}, 1)
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 2}, 2)
	rd = drain(r)
	assert.Equal(t, []string{"a"}, values(r.Log()), "truncated back to HW 1")
	assert.Empty(t, rd.Append, "b and c were appended and truncated in the same Ready")
	assert.Equal(t, int64(1), rd.Truncate)
	fetches := messages[FetchRequest](rd)
	require.NotEmpty(t, fetches)
	last := fetches[len(fetches)-1]
	assert.Equal(t, int64(1), last.FetchOffset)
	assert.Equal(t, int32(2), last.CurrentLeaderEpoch)
	for _, f := range fetches {
		if f.FetchOffset > r.LEO() {
			// It claims b and c, which storage never gets: only its old
			// epoch, which the leader fences, makes it harmless.
			assert.Less(t, f.CurrentLeaderEpoch, int32(2))
		}
	}
}

// Batches are atomic: when the follower's log ends inside one of the
// leader's batches (its tail diverged, as truncation=hw allows), it drops
// its own tail back to the batch's start and takes the leader's batch
// whole. Reference: record package doc (batches are atomic); KIP-101.
func TestFollowerGivesWayToLeaderBatch(t *testing.T) {
	cfg := testConfig(2)
	cfg.Truncation = TruncateToHW
	r, rd := followerOf(t, cfg, stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)), 2)
	f := messages[FetchRequest](rd)[0]
	require.Equal(t, int64(1), f.FetchOffset)
	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f.ID, Batches: []record.Batch{leaderBatch(0, 2, "x", "y"), leaderBatch(2, 2, "z")}, HW: 3, LEO: 3}, 1)
	rd = drain(r)
	assert.Equal(t, []string{"x", "y", "z"}, values(r.Log()))
	assert.Equal(t, int64(0), rd.Truncate)
	assert.Equal(t, []string{"x", "y", "z"}, values(rd.Append))
	assert.Equal(t, int64(3), messages[FetchRequest](rd)[0].FetchOffset)
}

// "truncation=hw: truncate the log to the last checkpointed HW, then fetch
// from the leader." No epoch query is sent. Reference: spec/SEMANTICS.md,
// Replication; KIP-101 (the scheme it replaced).
func TestTruncateToHWOnBecomingFollower(t *testing.T) {
	cfg := testConfig(2)
	cfg.Truncation = TruncateToHW
	r, rd := followerOf(t, cfg, stored([]int32{1, 1, 1}, "a", "b", "c"), 1, epochCache(t, entry(1, 0)), 2)
	assert.Equal(t, int64(1), rd.Truncate)
	assert.Equal(t, []string{"a"}, values(r.Log()))
	assert.Empty(t, messages[EpochEndRequest](rd))
	fetches := messages[FetchRequest](rd)
	require.Len(t, fetches, 1)
	assert.Equal(t, int64(1), fetches[0].FetchOffset)
	assert.Equal(t, uint64(1), r.Truncations())

	// The leader's log is shorter still: the follower truncates to it.
	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: fetches[0].ID, Err: kafka.ErrOffsetOutOfRange, HW: -1, LEO: 0}, 1)
	rd = drain(r)
	assert.Equal(t, int64(0), rd.Truncate)
	assert.Equal(t, int64(0), r.LEO())
	assert.Equal(t, int64(0), messages[FetchRequest](rd)[0].FetchOffset)
}

// "truncation=epoch-query: a follower asks the leader where its last epoch
// ended and truncates there." It sends no fetch before the answer.
// Reference: KIP-101.
func TestEpochTruncationAsksAboutLatestEpoch(t *testing.T) {
	r, rd := followerOf(t, queryConfig(2), stored([]int32{1, 3, 3}, "a", "b", "c"), 3, epochCache(t, entry(1, 0), entry(3, 1)), 4)
	assert.Empty(t, messages[FetchRequest](rd))
	assert.Equal(t, int64(-1), rd.Truncate, "nothing is truncated before the leader answers")
	qs := messages[EpochEndRequest](rd)
	require.Len(t, qs, 1)
	assert.Equal(t, EpochEndRequest{TopicPartition: testTP, ID: qs[0].ID, ReplicaID: 2, To: 1, Epoch: 3, CurrentLeaderEpoch: 4}, qs[0])

	// A fetch answer cannot arrive for a query.
	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: qs[0].ID, HW: 0, LEO: 0}, 1)
	assert.False(t, r.HasReady())

	r.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: qs[0].ID, Epoch: 3, EndOffset: 2}, 1)
	rd = drain(r)
	assert.Equal(t, int64(2), rd.Truncate)
	assert.Equal(t, []string{"a", "b"}, values(r.Log()))
	assert.Equal(t, int64(2), r.HW(), "HW clamped with the log")
	fetches := messages[FetchRequest](rd)
	require.Len(t, fetches, 1)
	assert.Equal(t, int64(2), fetches[0].FetchOffset)
}

// KAFKA-7164: "a replica copies from one epoch, misses the next, the same
// leader returns with a newer epoch; truncation skipped" — the fix is to
// resolve truncation again on every epoch change, even when the leader
// stays the same. Reference: KAFKA-7164.
func TestTruncationOnEveryEpochBump(t *testing.T) {
	for _, tr := range []Truncation{TruncateToEpochQuery, TruncateToHW} {
		t.Run(tr.String(), func(t *testing.T) {
			cfg := testConfig(2)
			cfg.Truncation = tr
			r, rd := followerOf(t, cfg, stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)), 1)
			if tr == TruncateToEpochQuery {
				q := messages[EpochEndRequest](rd)
				require.Len(t, q, 1)
				r.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: q[0].ID, Epoch: 1, EndOffset: 1}, 1)
				rd = drain(r)
			}
			f := messages[FetchRequest](rd)
			require.Len(t, f, 1)
			r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f[0].ID, Batches: []record.Batch{leaderBatch(1, 1, "b")}, HW: 1, LEO: 2}, 2)
			f = messages[FetchRequest](drain(r))
			require.Len(t, f, 1)
			require.Equal(t, int64(2), r.LEO())
			require.Equal(t, int64(1), r.HW())

			r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 2}, 3)
			rd = drain(r)
			assert.Equal(t, int32(3), r.LeaderEpoch())
			assert.Equal(t, int32(1), r.Leader())
			if tr == TruncateToEpochQuery {
				q := messages[EpochEndRequest](rd)
				require.Len(t, q, 1, "the epoch changed: ask again")
				assert.Equal(t, EpochEndRequest{TopicPartition: testTP, ID: q[0].ID, ReplicaID: 2, To: 1, Epoch: 1, CurrentLeaderEpoch: 3}, q[0])
				assert.Empty(t, messages[FetchRequest](rd))
			} else {
				assert.Equal(t, int64(1), rd.Truncate, "truncated to HW again")
				assert.Equal(t, int64(1), r.LEO())
				assert.Equal(t, int32(3), messages[FetchRequest](rd)[0].CurrentLeaderEpoch)
			}
			// The answer to the last fetch of epoch 1 is now stale.
			before := r.LEO()
			r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f[0].ID, Batches: []record.Batch{leaderBatch(2, 1, "z")}, HW: 3, LEO: 3}, 4)
			assert.Equal(t, before, r.LEO())
			assert.False(t, r.HasReady())
		})
	}
}

// KIP-279: the leader answers with the largest epoch it holds at or below
// the one asked, and where it ended; the follower truncates to the smaller
// of that end and its own end of the same epoch, and when it does not hold
// the epoch the leader answered with, it asks again about its largest
// smaller epoch. After that, replication makes the logs identical, even
// when the follower's tail comes from epochs the leader never saw. The
// same on both paths: epoch-query asks (OffsetsForLeaderEpoch) before it
// fetches; epoch (truncation on fetch) names its last epoch in each fetch
// and truncates on a DivergingEpoch answer, which takes fewer rounds, since
// an intermediate truncation's next fetch names the follower's own older
// epoch at once. Reference: KIP-279, KIP-101, KAFKA-10554.
func TestEpochTruncationEndsWithIdenticalLogs(t *testing.T) {
	type replicaLog struct {
		epochs []int32
		values []string
		cache  []storage.EpochEntry
	}
	cases := []struct {
		name     string
		leader   replicaLog
		epoch    int32 // the new leader epoch
		follower replicaLog
		queries  int   // epoch queries the follower needs (epoch-query)
		rounds   int   // diverging fetch answers it gets (epoch)
		truncTo  int64 // where it truncates
	}{
		{
			name:     "same epoch, follower longer",
			leader:   replicaLog{[]int32{1, 2}, []string{"a", "x"}, []storage.EpochEntry{entry(1, 0), entry(2, 1)}},
			epoch:    3,
			follower: replicaLog{[]int32{1, 1, 1}, []string{"a", "b", "c"}, []storage.EpochEntry{entry(1, 0)}},
			rounds:   1, queries: 1, truncTo: 1,
		},
		{
			name:     "follower behind, nothing to drop",
			leader:   replicaLog{[]int32{1, 1, 2}, []string{"a", "b", "x"}, []storage.EpochEntry{entry(1, 0), entry(2, 2)}},
			epoch:    3,
			follower: replicaLog{[]int32{1}, []string{"a"}, []storage.EpochEntry{entry(1, 0)}},
			rounds:   0, queries: 1, truncTo: 1,
		},
		{
			name:     "divergent tail from an epoch the leader never saw",
			leader:   replicaLog{[]int32{1, 3, 3}, []string{"a", "x", "y"}, []storage.EpochEntry{entry(1, 0), entry(3, 1)}},
			epoch:    4,
			follower: replicaLog{[]int32{1, 2, 2}, []string{"a", "b", "c"}, []storage.EpochEntry{entry(1, 0), entry(2, 1)}},
			rounds:   1, queries: 1, truncTo: 1,
		},
		{
			name:     "KAFKA-6361: the follower's epoch ends before the leader's",
			leader:   replicaLog{[]int32{1, 1}, []string{"a", "b"}, []storage.EpochEntry{entry(1, 0), entry(3, 2)}},
			epoch:    4,
			follower: replicaLog{[]int32{1, 2}, []string{"a", "c"}, []storage.EpochEntry{entry(1, 0), entry(2, 1)}},
			rounds:   1, queries: 1, truncTo: 1,
		},
		{
			name:     "multi-round: follower lacks the epoch the leader answered with",
			leader:   replicaLog{[]int32{1, 2, 2, 4}, []string{"a", "b", "c", "y"}, []storage.EpochEntry{entry(1, 0), entry(2, 1), entry(4, 3)}},
			epoch:    5,
			follower: replicaLog{[]int32{1, 3}, []string{"a", "x"}, []storage.EpochEntry{entry(1, 0), entry(3, 1)}},
			rounds:   1, queries: 2, truncTo: 1,
		},
		{
			name:     "multi-round down to the start",
			leader:   replicaLog{[]int32{2, 4}, []string{"p", "q"}, []storage.EpochEntry{entry(2, 0), entry(4, 1)}},
			epoch:    5,
			follower: replicaLog{[]int32{1, 3}, []string{"a", "x"}, []storage.EpochEntry{entry(1, 0), entry(3, 1)}},
			rounds:   2, queries: 2, truncTo: 0,
		},
		{
			name:     "follower's epochs older than all the leader's",
			leader:   replicaLog{[]int32{2, 2}, []string{"p", "q"}, []storage.EpochEntry{entry(2, 0)}},
			epoch:    3,
			follower: replicaLog{[]int32{1}, []string{"a"}, []storage.EpochEntry{entry(1, 0)}},
			rounds:   1, queries: 1, truncTo: 0,
		},
		{
			name:     "leader with an empty log",
			leader:   replicaLog{nil, nil, nil},
			epoch:    2,
			follower: replicaLog{[]int32{1, 1}, []string{"a", "b"}, []storage.EpochEntry{entry(1, 0)}},
			rounds:   1, queries: 1, truncTo: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/epoch-query", func(t *testing.T) {
			c := newCluster(t, queryConfig, 1, 2)
			c.load(1, stored(tc.leader.epochs, tc.leader.values...), 0, epochCache(t, tc.leader.cache...))
			c.load(2, stored(tc.follower.epochs, tc.follower.values...), 0, epochCache(t, tc.follower.cache...))
			c.ctrl.LeaderEpoch = tc.epoch - 1
			c.elect(1, []int32{1})
			c.produce(1, AcksLeader, "new")

			queries := 0
			for _, e := range c.net {
				if _, ok := e.msg.(EpochEndRequest); ok {
					queries++
				}
			}
			for {
				q := c.take(msgs(2, 1, "epoch-end"))
				if len(q) == 0 {
					break
				}
				for _, e := range q {
					c.deliverOne(e)
				}
				c.deliver(msgs(1, 2, "epoch-end-resp"))
				queries += len(c.netOf(msgs(2, 1, "epoch-end")))
			}
			assert.Equal(t, tc.queries, queries, "epoch queries")
			f := c.netOf(msgs(2, 1, "fetch"))
			require.Len(t, f, 1, "truncation resolved: the follower fetches")
			assert.Equal(t, tc.truncTo, f[0].msg.(FetchRequest).FetchOffset)

			c.deliver(anyMsg)
			identical(t, c)
		})
		t.Run(tc.name+"/epoch", func(t *testing.T) {
			c := newCluster(t, nil, 1, 2)
			c.load(1, stored(tc.leader.epochs, tc.leader.values...), 0, epochCache(t, tc.leader.cache...))
			c.load(2, stored(tc.follower.epochs, tc.follower.values...), 0, epochCache(t, tc.follower.cache...))
			c.ctrl.LeaderEpoch = tc.epoch - 1
			c.elect(1, []int32{1})
			c.produce(1, AcksLeader, "new")
			require.Empty(t, c.netOf(msgs(2, 1, "epoch-end")), "no OffsetsForLeaderEpoch on the fetch path")

			rounds, offset := 0, int64(-1)
			for {
				f := c.take(msgs(2, 1, "fetch"))
				require.Len(t, f, 1)
				offset = f[0].msg.(FetchRequest).FetchOffset
				c.deliverOne(f[0])
				a := c.take(msgs(1, 2, "fetch-resp"))
				require.Len(t, a, 1)
				resp := a[0].msg.(FetchResponse)
				c.deliverOne(a[0])
				if !resp.Diverging {
					break
				}
				assert.Empty(t, resp.Batches, "a diverging answer carries no records")
				rounds++
				require.LessOrEqual(t, rounds, 5)
			}
			assert.Equal(t, tc.rounds, rounds, "diverging answers")
			assert.Equal(t, tc.truncTo, offset, "the first fetch answered with records starts where the follower truncated")
			c.deliver(anyMsg)
			identical(t, c)
		})
	}
}

func identical(t *testing.T, c *cluster) {
	t.Helper()
	leader, follower := c.replica(1), c.replica(2)
	assert.Equal(t, leader.Log(), follower.Log(), "identical logs")
	assert.Equal(t, entries(leader.EpochCache()), entries(follower.EpochCache()))
	assert.Equal(t, leader.HW(), follower.HW())
}

// A follower re-sends a fetch or an epoch query that got no answer within
// RequestTimeoutMs, under a new ID, and ignores an answer that carries
// another ID than the one in flight (late or duplicated). Reference:
// Config.RequestTimeoutMs; FetchRequest.ID.
func TestFollowerResendsAfterTimeoutAndIgnoresStaleAnswers(t *testing.T) {
	cfg := testConfig(2)
	t.Run("fetch", func(t *testing.T) {
		r, rd := followerOf(t, cfg, nil, 0, storage.EpochCache{}, 1)
		first := messages[FetchRequest](rd)[0]
		r.Tick(cfg.RequestTimeoutMs - 1)
		assert.False(t, r.HasReady())
		r.Tick(cfg.RequestTimeoutMs)
		again := messages[FetchRequest](drain(r))
		require.Len(t, again, 1)
		assert.NotEqual(t, first.ID, again[0].ID)
		assert.Equal(t, first.FetchOffset, again[0].FetchOffset)

		r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: first.ID, Batches: []record.Batch{leaderBatch(0, 1, "a")}, HW: 1, LEO: 1}, 600)
		assert.False(t, r.HasReady(), "the late answer is ignored")
		assert.Equal(t, int64(0), r.LEO())

		r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: again[0].ID, Batches: []record.Batch{leaderBatch(0, 1, "a")}, HW: 1, LEO: 1}, 600)
		assert.Equal(t, int64(1), r.LEO())
		r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: again[0].ID, Batches: []record.Batch{leaderBatch(0, 1, "a")}, HW: 1, LEO: 1}, 600)
		assert.Equal(t, int64(1), r.LEO(), "a duplicated answer is ignored")
	})
	t.Run("epoch query", func(t *testing.T) {
		r, rd := followerOf(t, queryConfig(2), stored([]int32{1, 1}, "a", "b"), 0, epochCache(t, entry(1, 0)), 2)
		first := messages[EpochEndRequest](rd)[0]
		r.Tick(cfg.RequestTimeoutMs)
		again := messages[EpochEndRequest](drain(r))
		require.Len(t, again, 1)
		assert.NotEqual(t, first.ID, again[0].ID)
		assert.Equal(t, first.Epoch, again[0].Epoch)

		r.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: first.ID, Epoch: 1, EndOffset: 0}, 600)
		assert.False(t, r.HasReady(), "the late answer is ignored")
		assert.Equal(t, int64(2), r.LEO())
		r.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: again[0].ID, Epoch: 1, EndOffset: 1}, 600)
		assert.Equal(t, int64(1), r.LEO())
	})
}

// An error answer makes the follower wait RetryBackoffMs and ask again
// (the leader does not know the epoch yet, or the follower is behind the
// controller); a fenced answer is reported as an event. Reference: KIP-320.
func TestFollowerBacksOffAfterErrorAnswer(t *testing.T) {
	cfg := testConfig(2)
	for _, err := range []error{kafka.ErrNotLeader, kafka.ErrUnknownLeaderEpoch, kafka.ErrFencedLeaderEpoch} {
		t.Run(err.Error(), func(t *testing.T) {
			r, rd := followerOf(t, cfg, nil, 0, storage.EpochCache{}, 1)
			f := messages[FetchRequest](rd)[0]
			r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f.ID, Err: err, HW: -1, LEO: -1}, 100)
			rd = drain(r)
			assert.Empty(t, rd.Messages)
			fenced := len(rd.Events) == 1 && rd.Events[0].Kind == EventFenced
			assert.Equal(t, err == kafka.ErrFencedLeaderEpoch, fenced)

			r.Tick(100 + cfg.RetryBackoffMs - 1)
			assert.Empty(t, drain(r).Messages)
			r.Tick(100 + cfg.RetryBackoffMs)
			again := messages[FetchRequest](drain(r))
			require.Len(t, again, 1)
			assert.Equal(t, int64(0), again[0].FetchOffset)
		})
	}
	t.Run("epoch query", func(t *testing.T) {
		r, rd := followerOf(t, queryConfig(2), stored([]int32{1}, "a"), 0, epochCache(t, entry(1, 0)), 2)
		q := messages[EpochEndRequest](rd)[0]
		r.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: q.ID, Err: kafka.ErrUnknownLeaderEpoch, Epoch: -1, EndOffset: -1}, 100)
		assert.Equal(t, int64(1), r.LEO(), "an error is no answer: nothing truncated")
		drain(r)
		r.Tick(100 + cfg.RetryBackoffMs)
		again := messages[EpochEndRequest](drain(r))
		require.Len(t, again, 1)
		assert.Equal(t, int32(1), again[0].Epoch)
	})
}

// A follower whose log runs past the leader's (OFFSET_OUT_OF_RANGE with the
// leader's LEO) resolves it as its truncation variant says: epoch-query
// asks again where its epoch ended, hw truncates to the leader's LEO (the
// fetch path: TestFetchPathOutOfRange). Reference: KIP-101.
func TestFollowerPastLeaderLEO(t *testing.T) {
	r, rd := followerOf(t, queryConfig(2), stored([]int32{1, 1}, "a", "b"), 0, epochCache(t, entry(1, 0)), 2)
	q := messages[EpochEndRequest](rd)[0]
	r.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: q.ID, Epoch: 1, EndOffset: 5}, 1)
	f := messages[FetchRequest](drain(r))[0]
	assert.Equal(t, int64(2), f.FetchOffset)

	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: f.ID, Err: kafka.ErrOffsetOutOfRange, HW: -1, LEO: 1}, 2)
	rd = drain(r)
	q2 := messages[EpochEndRequest](rd)
	require.Len(t, q2, 1)
	assert.Equal(t, int32(1), q2[0].Epoch)
	assert.Equal(t, int64(-1), rd.Truncate, "no truncation before the answer")
}

// Only a follower acts on fetch and epoch answers: a leader or a replica
// without a role ignores them (they answer an earlier role's request).
// Reference: spec/SEMANTICS.md, Replication.
func TestAnswersIgnoredUnlessFollowing(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1}, "a")
	r.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: 0, Batches: []record.Batch{leaderBatch(1, 1, "z")}, HW: 2, LEO: 2}, 1)
	r.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: 0, Epoch: -1, EndOffset: -1}, 1)
	assert.False(t, r.HasReady())
	assert.Equal(t, []string{"a"}, values(r.Log()))

	n := newReplica(t, testConfig(1), stored([]int32{1}, "a"), 1, epochCache(t, entry(1, 0)))
	n.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: 0, Epoch: -1, EndOffset: -1}, 1)
	assert.Equal(t, int64(1), n.LEO())
	n.Tick(1 << 40)
	assert.False(t, n.HasReady(), "a replica without a role sends nothing")
}
