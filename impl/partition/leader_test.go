package partition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/storage"
)

// "acks 0: no response; acks 1: the leader answers once the record is in its
// own log." Neither is parked, and neither is completed later.
// Reference: spec/SEMANTICS.md, Producer.
func TestAcksZeroAndOneAnswerAtOnce(t *testing.T) {
	c := newCluster(t, nil, 1, 2, 3)
	c.elect(1, nil)
	id1, res1 := c.produce(1, AcksLeader, "a")
	assert.Equal(t, ProduceResult{BaseOffset: 0}, res1)
	id0, res0 := c.produce(1, AcksNone, "b")
	assert.Equal(t, ProduceResult{BaseOffset: 1}, res0)
	assert.Equal(t, int64(0), c.replica(1).HW(), "answered before any follower has the records")

	c.deliver(anyMsg)
	assert.Equal(t, int64(2), c.replica(1).HW())
	assert.NotContains(t, c.completions, id1)
	assert.NotContains(t, c.completions, id0)
}

// "acks=all: the leader answers once every replica in the ISR has the
// record (HW has passed it)." A batch completes when HW reaches the offset
// after its last record, not before. Reference: spec/SEMANTICS.md, Producer.
func TestAcksAllCompletesWhenHWPassesTheBatch(t *testing.T) {
	c := newCluster(t, func(id int32) Config {
		cfg := testConfig(id)
		cfg.ReplicaFetchMaxBytes = 1 // one batch per fetch, so HW moves batch by batch
		return cfg
	}, 1, 2, 3)
	c.elect(1, nil)
	idA, resA := c.produce(1, AcksAll, "a")
	idBC, resBC := c.produce(1, AcksAll, "b", "c")
	assert.Equal(t, ProduceResult{BaseOffset: 0, Parked: true}, resA)
	assert.Equal(t, ProduceResult{BaseOffset: 1, Parked: true}, resBC)

	// Only 2 replicates: 3 is in the ISR, so nothing commits.
	c.nodes[3].isolated = true
	c.deliver(anyMsg)
	assert.Equal(t, int64(3), c.replica(2).LEO())
	assert.Equal(t, int64(0), c.replica(1).HW())
	assert.Empty(t, c.completions)

	// 3 fetches a, then b-c, one batch per round.
	c.nodes[3].isolated = false
	c.tick(c.cfg(3).RequestTimeoutMs) // 3 re-sends its lost fetch
	c.deliver(msgs(3, 1, "fetch"))
	c.deliver(msgs(1, 3, "fetch-resp")) // 3 appends a and asks from 1
	c.deliver(msgs(3, 1, "fetch"))
	assert.Equal(t, int64(1), c.replica(1).HW())
	require.Contains(t, c.completions, idA)
	assert.Equal(t, Completion{ID: idA, BaseOffset: 0}, c.completions[idA])
	assert.NotContains(t, c.completions, idBC, "HW 1 has not passed offset 2")

	c.deliver(anyMsg)
	assert.Equal(t, int64(3), c.replica(1).HW())
	assert.Equal(t, Completion{ID: idBC, BaseOffset: 1}, c.completions[idBC])
}

// The completion rule is about the batch's last offset, not its first: a
// follower whose fetch offset falls inside a batch (its copy diverged, or it
// reports an offset the leader did not cut at) does not complete it.
// Reference: spec/SEMANTICS.md, Producer ("HW has passed it").
func TestAcksAllWaitsForTheBatchLastOffset(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2}, "a")
	require.True(t, produceAt(r, 5, ProduceRequest{Acks: AcksAll, Batch: batch("b", "c", "d")}, 0).Parked)
	drain(r)
	fetchAt(r, 2, 3, 1)
	require.Equal(t, int64(3), r.HW(), "HW inside the batch 1-3")
	assert.Empty(t, completions(drain(r)))
	fetchAt(r, 2, 4, 2)
	assert.Equal(t, []Completion{{ID: 5, BaseOffset: 1}}, completions(drain(r)))
}

// "With min.insync.replicas = M, a produce is refused with
// NOT_ENOUGH_REPLICAS when the ISR is smaller than M" — and nothing is
// appended. acks=1 is not subject to it. Reference: spec/SEMANTICS.md, Producer.
func TestAcksAllRefusedWhenISRBelowMin(t *testing.T) {
	cfg := testConfig(1)
	cfg.MinInsyncReplicas = 2
	r := leaderOf(t, cfg, []int32{1})

	res := produceAt(r, 1, ProduceRequest{Acks: AcksAll, Batch: batch("a")}, 0)
	assert.Equal(t, ProduceResult{BaseOffset: -1, Err: kafka.ErrNotEnoughReplicas}, res)
	assert.Equal(t, int64(0), r.LEO())
	rd := drain(r)
	assert.Empty(t, rd.Append, "nothing to store")
	assert.Empty(t, rd.Messages, "nothing to send")

	res = produceAt(r, 2, ProduceRequest{Acks: AcksLeader, Batch: batch("b")}, 0)
	assert.Equal(t, ProduceResult{BaseOffset: 0}, res)
	assert.Equal(t, int64(0), r.HW(), "below min ISR HW does not advance (KIP-966)")
}

// min.insync.replicas is capped at the replication factor: a topic with
// one replica and min ISR 2 takes acks=all and commits on its one copy,
// as Kafka does since 3.7, while a topic of three replicas with the same
// setting and an ISR of one still refuses it.
// Reference: KAFKA-15583 (effective min ISR).
func TestMinISRCappedAtReplicationFactor(t *testing.T) {
	cfg := testConfig(1)
	cfg.MinInsyncReplicas = 2
	r := newReplica(t, cfg, nil, 0, storage.EpochCache{})
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1}, PartitionEpoch: 1}, 0)
	drain(r)
	res := produceAt(r, 1, ProduceRequest{Acks: AcksAll, Batch: batch("a")}, 0)
	require.NoError(t, res.Err)
	rd := drain(r)
	assert.Equal(t, int64(1), r.HW(), "the one replica is the whole ISR the topic can have")
	assert.Equal(t, []Completion{{ID: 1, BaseOffset: 0}}, completions(rd))

	r3 := leaderOf(t, cfg, []int32{1})
	res = produceAt(r3, 2, ProduceRequest{Acks: AcksAll, Batch: batch("b")}, 0)
	assert.Equal(t, kafka.ErrNotEnoughReplicas, res.Err, "three replicas: the cap is 2")
}

// "If the ISR shrinks below M after the append, the answer is
// NOT_ENOUGH_REPLICAS_AFTER_APPEND." HW only passes the batch below min ISR
// when AdvanceHWBelowMinISR (Kafka before KIP-966) lets it.
// Reference: spec/SEMANTICS.md, Producer; KIP-966.
func TestNotEnoughReplicasAfterAppend(t *testing.T) {
	cfg := testConfig(1)
	cfg.MinInsyncReplicas = 2
	cfg.AdvanceHWBelowMinISR = true
	r := leaderOf(t, cfg, []int32{1, 2})
	fetchAt(r, 2, 0, 0)
	res := produceAt(r, 7, ProduceRequest{Acks: AcksAll, Batch: batch("a")}, 0)
	require.True(t, res.Parked)
	drain(r)

	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 10)
	rd := drain(r)
	assert.Equal(t, int64(1), r.HW())
	assert.Equal(t, []Completion{{ID: 7, BaseOffset: 0, Err: kafka.ErrNotEnoughReplicasAfterAppend}}, completions(rd))
}

// "Last replica standing": with the safe default, a leader alone in the ISR
// below min.insync.replicas does not advance HW, so an acks=all produce is
// never acknowledged on one copy. The leader answers what is parked with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND as soon as the ISR falls below the
// minimum (the record may still commit once it grows back: an unknown
// outcome for the client). Reference: spec/SEMANTICS.md, Producer and Known bugs
// ("last replica standing"); KIP-966.
func TestHWStaysWhileISRBelowMin(t *testing.T) {
	cfg := testConfig(1)
	cfg.MinInsyncReplicas = 2
	r := leaderOf(t, cfg, []int32{1, 2})
	fetchAt(r, 2, 0, 0)
	require.True(t, produceAt(r, 7, ProduceRequest{Acks: AcksAll, Batch: batch("a")}, 0).Parked)
	drain(r)

	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 10)
	rd := drain(r)
	assert.Equal(t, int64(0), r.HW())
	assert.Equal(t, []Completion{{ID: 7, BaseOffset: 0, Err: kafka.ErrNotEnoughReplicasAfterAppend}}, completions(rd))

	assert.Empty(t, r.leader.produces, "answered once only")
	assert.False(t, r.HasReady())
}

// Produce is served by the leader only, a batch must hold records, and the
// leader, not the client, assigns offsets and the leader epoch.
// Reference: spec/SEMANTICS.md, Producer; KIP-101 (batches carry the epoch).
func TestProduceRefusals(t *testing.T) {
	f := newReplica(t, testConfig(2), nil, 0, epochCache(t))
	assert.Equal(t, ProduceResult{BaseOffset: -1, Err: kafka.ErrNotLeader}, produceAt(f, 0, ProduceRequest{Acks: AcksLeader, Batch: batch("a")}, 0),
		"a replica without a role")
	f.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	assert.Equal(t, ProduceResult{BaseOffset: -1, Err: kafka.ErrNotLeader}, produceAt(f, 0, ProduceRequest{Acks: AcksLeader, Batch: batch("a")}, 0),
		"a follower")

	r := leaderOf(t, testConfig(1), []int32{1})
	assert.Equal(t, ProduceResult{BaseOffset: -1, Err: kafka.ErrInvalidRecord}, produceAt(r, 0, ProduceRequest{Acks: AcksAll, Batch: batch()}, 0))
	assert.Equal(t, int64(0), r.LEO())

	// The leader assigns offsets and its epoch, whatever the client sent.
	b := batch("x")
	b.BaseOffset, b.LeaderEpoch = 42, 9
	assert.Equal(t, ProduceResult{BaseOffset: 0}, produceAt(r, 0, ProduceRequest{Acks: AcksLeader, Batch: b}, 0))
	assert.Equal(t, int64(0), r.Log()[0].BaseOffset)
	assert.Equal(t, int32(1), r.Log()[0].LeaderEpoch)
}

// "Leader HW = min LEO over the ISR. It never moves backwards on one
// leader." A replica outside the ISR does not hold HW back, and a fetch
// from a follower that went back (it truncated) does not lower HW.
// Reference: spec/SEMANTICS.md, Replication.
func TestLeaderHWIsMinLEOOverISR(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2, 3}, "a", "b", "c", "d", "e")
	fetchAt(r, 2, 4, 0)
	assert.Equal(t, int64(0), r.HW(), "3 has not reported")
	resp := fetchAt(r, 3, 2, 0)
	assert.Equal(t, int64(2), r.HW())
	assert.Equal(t, int64(2), resp.HW, "the response carries the new HW")
	fetchAt(r, 2, 5, 0)
	assert.Equal(t, int64(2), r.HW())
	fetchAt(r, 3, 5, 0)
	assert.Equal(t, int64(5), r.HW())

	fetchAt(r, 3, 1, 0)
	assert.Equal(t, int64(5), r.HW(), "HW never moves back on one leader")
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 0)
	assert.Equal(t, int64(5), r.HW())

	r = leaderOf(t, testConfig(1), []int32{1, 2}, "a", "b")
	fetchAt(r, 2, 2, 0)
	assert.Equal(t, int64(2), r.HW(), "3 is not in the ISR")
}

// "The HW a new leader starts with can be behind the old leader's", and the
// new leader cannot advance it until every ISR follower has fetched in its
// epoch: before that it does not know their LEOs. A leader alone in the
// ISR commits its whole log at once. Reference: spec/SEMANTICS.md, Replication.
func TestNewLeaderWaitsForEveryISRFollower(t *testing.T) {
	ec := epochCache(t, entry(1, 0))
	r := newReplica(t, testConfig(1), stored([]int32{1, 1, 1}, "a", "b", "c"), 1, ec)
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 0)
	assert.Equal(t, RoleLeader, r.Role())
	assert.Equal(t, int64(1), r.HW())
	fetchAt(r, 2, 3, 10)
	r.Tick(500)
	assert.Equal(t, int64(1), r.HW(), "3 has not fetched in epoch 2")
	fetchAt(r, 3, 3, 600)
	assert.Equal(t, int64(3), r.HW())

	r = newReplica(t, testConfig(1), stored([]int32{1, 1, 1}, "a", "b", "c"), 1, epochCache(t, entry(1, 0)))
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 0)
	assert.Equal(t, int64(3), r.HW())
	rd := drain(r)
	assert.True(t, rd.HWChanged)
	assert.Equal(t, int64(3), rd.HW)
	assert.True(t, rd.EpochsChanged, "the new epoch's start is recorded")
	assert.Equal(t, "[1@0 2@3]", r.epochs.String())
}

// "A follower stays in the ISR while it has caught up with the leader's LEO
// within replica.lag.time.max.ms; otherwise the leader removes it." Caught
// up means: it fetched at the leader's LEO, or at the LEO the leader had
// at its previous fetch (a follower that keeps pace with a busy leader is
// never at the very end). The removal is proposed to the controller.
// Reference: spec/SEMANTICS.md, Replication; KIP-497.
func TestISRShrinksAfterLagTime(t *testing.T) {
	cfg := testConfig(1) // lag 1000 ms
	r := leaderOf(t, cfg, []int32{1, 2, 3})
	// Every 100 ms the leader appends; 2 fetches up to the LEO the leader
	// had at its previous fetch, 3 fetches but stays one more batch behind.
	for now := int64(100); now <= 1000; now += 100 {
		prev := r.LEO()
		produceAt(r, 0, ProduceRequest{Acks: AcksLeader, Batch: batch("x")}, now)
		fetchAt(r, 2, prev, now)
		fetchAt(r, 3, max(prev-1, 0), now)
		r.Tick(now)
	}
	assert.Empty(t, messages[kafka.AlterPartition](drain(r)), "3 last caught up at 0, 1000 ms ago: within the lag")

	r.Tick(1001)
	got := messages[kafka.AlterPartition](drain(r))
	require.Len(t, got, 1)
	assertAlterISR(t, got[0], 1, 1, []int32{1, 2})
	assert.Equal(t, []int32{1, 2, 3}, r.ISR(), "the ISR changes when the controller commits it")
}

// "While the proposal is in flight the leader computes HW over the union of
// the old and the proposed ISR (KIP-497's maximal ISR)." During a shrink
// the member being removed still holds HW back; during an expansion the
// member being added already does. Reference: KIP-497.
func TestHWUsesMaximalISRWhileAlterISRInFlight(t *testing.T) {
	t.Run("shrink", func(t *testing.T) {
		r := leaderOf(t, testConfig(1), []int32{1, 2, 3}, "a")
		fetchAt(r, 3, 0, 0)
		fetchAt(r, 2, 1, 1000)
		r.Tick(1001)
		require.Len(t, messages[kafka.AlterPartition](drain(r)), 1)
		produceAt(r, 0, ProduceRequest{Acks: AcksLeader, Batch: batch("b")}, 1001)
		fetchAt(r, 2, 2, 1001)
		assert.Equal(t, int64(0), r.HW(), "3 may still be in the ISR the controller holds")

		r.HandleAlterPartitionAnswer(kafka.AlterPartitionAnswer{TopicPartition: testTP,
			State: kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}}, 1002)
		assert.Equal(t, []int32{1, 2}, r.ISR())
		assert.Equal(t, int64(2), r.HW())
	})
	t.Run("expand", func(t *testing.T) {
		r := leaderOf(t, testConfig(1), []int32{1, 2}, "a")
		fetchAt(r, 2, 1, 0)
		require.Equal(t, int64(1), r.HW())
		fetchAt(r, 3, 1, 0)
		got := messages[kafka.AlterPartition](drain(r))
		require.Len(t, got, 1)
		assert.Equal(t, []int32{1, 2, 3}, got[0].NewISR)

		produceAt(r, 0, ProduceRequest{Acks: AcksLeader, Batch: batch("b")}, 1)
		fetchAt(r, 2, 2, 1)
		assert.Equal(t, int64(1), r.HW(), "3 may already be in the ISR the controller holds")
		fetchAt(r, 3, 2, 2)
		assert.Equal(t, int64(2), r.HW())
	})
}

// "It rejoins once its LEO reaches the leader's HW (and the start of the
// current leader epoch)." Reference: spec/SEMANTICS.md, Replication; KIP-101.
func TestISRExpansionNeedsHWAndEpochStart(t *testing.T) {
	// 1 leads epoch 2 from LEO 3 with HW 1: the epoch starts at 3.
	r := newReplica(t, testConfig(1), stored([]int32{1, 1, 1}, "a", "b", "c"), 1, epochCache(t, entry(1, 0)))
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 1}, 0)
	drain(r)

	fetchAt(r, 3, 0, 0)
	assert.Empty(t, messages[kafka.AlterPartition](drain(r)), "below HW")
	fetchAt(r, 3, 2, 0)
	assert.Empty(t, messages[kafka.AlterPartition](drain(r)), "at HW but before the epoch's start offset 3")
	fetchAt(r, 3, 3, 0)
	got := messages[kafka.AlterPartition](drain(r))
	require.Len(t, got, 1)
	assertAlterISR(t, got[0], 2, 1, []int32{1, 2, 3})

	fetchAt(r, 3, 3, 1)
	assert.Empty(t, messages[kafka.AlterPartition](drain(r)), "one proposal in flight at a time")
}

// An answer older than the state the leader already holds does not take
// its ISR back: the controller's metadata and its answers travel apart, and
// the partition epoch orders them. Reference: KIP-497.
func TestOlderAlterISRAnswerDoesNotRegressISR(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2, 3})
	fetchAt(r, 2, 0, 1000)
	r.Tick(1001)
	require.Len(t, messages[kafka.AlterPartition](drain(r)), 1) // propose {1 2}
	// Meanwhile the controller went two steps further.
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 3}, 1002)
	r.HandleAlterPartitionAnswer(kafka.AlterPartitionAnswer{TopicPartition: testTP,
		State: kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}}, 1003)
	assert.Equal(t, []int32{1}, r.ISR())
}

// A new leader gives every follower a full replica.lag.time.max.ms to fetch
// in its epoch before proposing to drop it, as Kafka does.
// Reference: spec/SEMANTICS.md, Replication.
func TestNewLeaderGivesFollowersALagWindow(t *testing.T) {
	r := newReplica(t, testConfig(1), nil, 0, epochCache(t))
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 1}, 50000)
	r.Tick(51000)
	assert.Empty(t, messages[kafka.AlterPartition](drain(r)))
	r.Tick(51001)
	assert.Len(t, messages[kafka.AlterPartition](drain(r)), 1)
}

// A replica fetch is bounded by the smaller of the request's and the
// leader's byte limit, but always carries at least one batch, so a follower
// is never stuck behind a large one. Reference: KIP-74.
func TestReplicaFetchByteLimit(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2}, "a", "b", "c")
	resp := replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ReplicaID: 2, FetchOffset: 0, CurrentLeaderEpoch: 1, MaxBytes: 1}, 0)
	assert.Equal(t, []string{"a"}, values(resp.Batches))
	resp = replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ReplicaID: 2, FetchOffset: 1, CurrentLeaderEpoch: 1, MaxBytes: 1 << 20}, 0)
	assert.Equal(t, []string{"b", "c"}, values(resp.Batches))

	cfg := testConfig(1)
	cfg.ReplicaFetchMaxBytes = 1
	r = leaderOf(t, cfg, []int32{1, 2}, "a", "b")
	resp = replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ReplicaID: 2, FetchOffset: 0, CurrentLeaderEpoch: 1, MaxBytes: 1 << 20}, 0)
	assert.Equal(t, []string{"a"}, values(resp.Batches))
}

// An ISR change the controller does not answer is sent again after
// RequestTimeoutMs; one it commits, seen through UpdateState, is not.
// Reference: KIP-497; Config.RequestTimeoutMs.
func TestAlterISRResentUntilAnswered(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2, 3})
	fetchAt(r, 2, 0, 1000)
	r.Tick(1001)
	first := messages[kafka.AlterPartition](drain(r))
	require.Len(t, first, 1)

	r.Tick(1001 + 499)
	assert.Empty(t, messages[kafka.AlterPartition](drain(r)))
	r.Tick(1001 + 500)
	again := messages[kafka.AlterPartition](drain(r))
	require.Len(t, again, 1)
	assert.NotEqual(t, first[0].ProposalID, again[0].ProposalID, "a resend is a new proposal: only its own answer ends it")
	again[0].ProposalID = first[0].ProposalID
	assert.Equal(t, first, again)

	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 1600)
	assert.Equal(t, []int32{1, 2}, r.ISR())
	fetchAt(r, 2, 0, 2050)
	r.Tick(2100)
	assert.Empty(t, messages[kafka.AlterPartition](drain(r)), "the proposal came back committed")
}

// A leader that loses leadership answers every parked produce with
// kafka.ErrLeaderChanged (an indefinite error: the record may still commit under
// the next leader). Reference: spec/SEMANTICS.md, Producer.
func TestLeaderChangeFailsParkedProduces(t *testing.T) {
	for name, next := range map[string]kafka.PartitionState{
		"follower": {Leader: 2, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2},
		"offline":  {Leader: -1, LeaderEpoch: 2, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2},
	} {
		t.Run(name, func(t *testing.T) {
			r := leaderOf(t, testConfig(1), []int32{1, 2})
			require.True(t, produceAt(r, 1, ProduceRequest{Acks: AcksAll, Batch: batch("a")}, 0).Parked)
			require.True(t, produceAt(r, 2, ProduceRequest{Acks: AcksAll, Batch: batch("b")}, 0).Parked)
			drain(r)
			r.UpdateState(next, 1)
			assert.Equal(t, []Completion{{ID: 1, BaseOffset: 0, Err: kafka.ErrLeaderChanged}, {ID: 2, BaseOffset: 1, Err: kafka.ErrLeaderChanged}},
				completions(drain(r)))
			assert.NotEqual(t, RoleLeader, r.Role())
			assert.Empty(t, r.leader.produces, "nothing stays parked")
		})
	}
}

// assertAlterISR checks a proposal from broker 1 of isr, made in leader
// epoch from partition epoch pe.
func assertAlterISR(t *testing.T, got kafka.AlterPartition, epoch, pe int32, isr []int32) {
	t.Helper()
	assert.Equal(t, testTP, got.TopicPartition)
	assert.Equal(t, int32(1), got.LeaderID)
	assert.Equal(t, epoch, got.LeaderEpoch)
	assert.Equal(t, pe, got.PartitionEpoch)
	assert.Equal(t, isr, got.NewISR)
}

// A proposal to add a follower names the process whose fetches it was
// decided on, and so does every resend of it: a follower that restarted
// while the proposal waited for an answer has not caught up, and the
// controller must refuse it (KIP-903). A resend that named the new
// process instead let an empty replica into the ISR.
// Reference: KIP-903, KAFKA-14139.
func TestResentISRExpansionNamesTheProcessItWasDecidedOn(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2}, "a", "b")
	fetch := func(inc, offset int64) {
		replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ID: 1, ReplicaID: 3, ReplicaIncarnation: inc, To: 1,
			FetchOffset: offset, CurrentLeaderEpoch: r.LeaderEpoch(), MaxBytes: 1 << 20}, 10)
	}
	fetchAt(r, 2, 2, 10)
	drain(r)
	fetch(7, 2) // broker 3's process 7 has caught up
	sent := messages[kafka.AlterPartition](drain(r))
	require.Len(t, sent, 1)
	require.Equal(t, []int32{1, 2, 3}, sent[0].NewISR)
	require.Equal(t, int64(7), sent[0].NewISRIncarnations[2])

	fetch(8, 0) // broker 3 restarted on an empty disk: process 8
	r.Tick(10 + r.cfg.RequestTimeoutMs)
	resent := messages[kafka.AlterPartition](drain(r))
	require.Len(t, resent, 1, "no answer came: the proposal goes again")
	assert.NotEqual(t, sent[0].ProposalID, resent[0].ProposalID)
	assert.Equal(t, []int64{sent[0].NewISRIncarnations[0], sent[0].NewISRIncarnations[1], 7}, resent[0].NewISRIncarnations,
		"the resend names process 7, which caught up, not process 8")
}

// An acks=all produce waits in its replica until HW passes it or its
// deadline (the request's timeout) does: the first Tick at or after the
// deadline answers REQUEST_TIMED_OUT, once; a produce without a deadline
// waits on. Reference: spec/SEMANTICS.md, Producer.
func TestParkedProduceExpiresAtItsDeadline(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2})
	require.True(t, produceAt(r, 1, ProduceRequest{Acks: AcksAll, Batch: batch("a"), Deadline: 100}, 0).Parked)
	require.True(t, produceAt(r, 2, ProduceRequest{Acks: AcksAll, Batch: batch("b")}, 0).Parked)
	drain(r)
	r.Tick(99)
	assert.Empty(t, completions(drain(r)), "before its deadline")
	r.Tick(100)
	assert.Equal(t, []Completion{{ID: 1, BaseOffset: 0, Err: kafka.ErrRequestTimedOut}}, completions(drain(r)))
	fetchAt(r, 2, 2, 101)
	assert.Equal(t, []Completion{{ID: 2, BaseOffset: 1}}, completions(drain(r)), "the expired produce is not answered again")
}
