package controller

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

func TestNewRejectsNonPositiveSessionTimeout(t *testing.T) {
	for _, ms := range []int64{0, -1} {
		_, err := New(Config{SessionTimeoutMs: ms})
		require.ErrorIs(t, err, ErrInvalidConfig)
	}
}

// TestCreateTopicSpreadsLeaders checks "spreads leaders evenly over brokers
// (preferred leader = first replica in the assignment)": partition p's
// replicas start at the (p mod n)-th live broker.
// Reference: spec/SEMANTICS.md, Replication (Controller).
func TestCreateTopicSpreadsLeaders(t *testing.T) {
	h := newHarness(t, Config{}, 3, 1, 2)
	require.NoError(t, createTopic(h.c, "t", 6, 2, kafka.TopicConfig{}, h.now))

	leaders := map[int32]int{}
	for _, s := range h.c.Metadata() {
		assert.Equal(t, s.Replicas[0], s.Leader, "%s", s.TopicPartition)
		assert.Equal(t, int32(0), s.LeaderEpoch)
		assert.Equal(t, int32(0), s.PartitionEpoch)
		leaders[s.Leader]++
	}
	assert.Equal(t, map[int32]int{1: 2, 2: 2, 3: 2}, leaders)
	assert.Equal(t, []int32{3, 1}, h.state(tp("t", 2)).Replicas)
	assert.Equal(t, []int32{1, 3}, h.state(tp("t", 2)).ISR, "ISR is sorted")

	rd := drain(h.c)
	require.Len(t, rd.Events, 6)
	require.Len(t, rd.Updates, 3)
	for _, u := range rd.Updates {
		assert.Len(t, u.States, 4, "broker %d replicates 4 of 6 partitions at RF 2", u.Broker)
	}
	h.check()
}

// TestCreateTopicValidates checks that a topic is refused when its name is
// empty or taken, it has no partitions, or its replication factor is not
// between 1 and the number of live brokers.
// Reference: KIP-4 (CreateTopics errors).
func TestCreateTopicValidates(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2, 3)
	h.createTopic("taken", 1, 1)
	h.kill(3)
	for _, tc := range []struct {
		name       string
		topic      string
		partitions int32
		rf         int
		err        error
	}{
		{"empty name", "", 1, 1, kafka.ErrInvalidTopic},
		{"duplicate", "taken", 1, 1, kafka.ErrTopicExists},
		{"no partitions", "t", 0, 1, kafka.ErrInvalidPartitions},
		{"zero rf", "t", 1, 0, kafka.ErrInvalidReplicationFactor},
		{"rf above live brokers", "t", 1, 3, kafka.ErrInvalidReplicationFactor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, createTopic(h.c, tc.topic, tc.partitions, tc.rf, kafka.TopicConfig{}, h.now), tc.err)
		})
	}
	require.NoError(t, createTopic(h.c, "t", 1, 2, kafka.TopicConfig{}, h.now))
	assert.Equal(t, []string{"t", "taken"}, h.c.Topics())
}

// TestLeaderDeathElectsFromISRInOneBatch checks "elects leaders for all of a
// dead broker's partitions in one batch": the new leader is the first replica
// in assignment order that is alive and in the ISR, the leader epoch grows by
// one, and dead brokers leave the ISR. Brokers dying in the same Tick are
// never elected, so each partition has exactly one election.
// Reference: spec/SEMANTICS.md, Replication (Leader failure, Controller).
func TestLeaderDeathElectsFromISRInOneBatch(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2, 3, 4)
	h.createTopic("t", 4, 4)

	h.kill(1, 2)

	// p0 [1 2 3 4]: 2 is next in order but died too; 3 leads, once.
	s := h.state(tp("t", 0))
	assert.Equal(t, int32(3), s.Leader)
	assert.Equal(t, int32(1), s.LeaderEpoch)
	assert.Equal(t, int32(1), s.PartitionEpoch)
	assert.Equal(t, []int32{3, 4}, s.ISR)
	// p2 [3 4 1 2]: leader survives, only the ISR shrinks.
	s = h.state(tp("t", 2))
	assert.Equal(t, int32(3), s.Leader)
	assert.Equal(t, int32(0), s.LeaderEpoch)
	assert.Equal(t, int32(1), s.PartitionEpoch)
	assert.Equal(t, []int32{3, 4}, s.ISR)

	rd := drain(h.c)
	assert.Equal(t, []EventKind{BrokerDead, BrokerDead, ElectionClean, ElectionClean, ISRChange, ISRChange}, kinds(rd))
	assert.Equal(t, []int32{1, 2}, []int32{rd.Events[0].Broker, rd.Events[1].Broker})
	assert.Equal(t, int32(1), rd.Events[2].OldLeader)
	assert.Equal(t, []int32{1, 2, 3, 4}, rd.Events[2].OldISR)
	require.Len(t, rd.Updates, 2, "only live replicas are sent updates")
	assert.Equal(t, int32(3), rd.Updates[0].Broker)
	assert.Len(t, rd.Updates[0].States, 4)
}

// TestLastISRMemberStaysAndReturns checks the death rule: a dead broker
// leaves the ISR "unless it is the last ISR member (then keep it so a clean
// election can pick it when it returns)"; the partition is offline meanwhile,
// even when an out-of-sync replica is alive.
// Reference: spec/SEMANTICS.md, Replication (All replicas down); KIP-966 (motivation).
func TestLastISRMemberStaysAndReturns(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2)
	h.createTopic("t", 1, 2)
	p := tp("t", 0)

	h.kill(2)
	assert.Equal(t, []int32{1}, h.state(p).ISR)
	h.kill(1)
	s := h.state(p)
	assert.Equal(t, kafka.NoLeader, s.Leader)
	assert.Equal(t, []int32{1}, s.ISR, "last member stays")
	assert.Equal(t, int32(1), s.LeaderEpoch, "going offline changes the leader")
	drain(h.c)

	h.revive(2)
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "2 is not in the ISR")
	h.revive(1)
	s = h.state(p)
	assert.Equal(t, int32(1), s.Leader)
	assert.Equal(t, []int32{1}, s.ISR)
	assert.Equal(t, int32(2), s.LeaderEpoch)
	assert.Equal(t, int32(3), s.PartitionEpoch)
	rd := drain(h.c)
	assert.Equal(t, []EventKind{BrokerRevived, BrokerRevived, ElectionClean}, kinds(rd))
	require.Len(t, rd.Updates, 2, "both revived brokers get the partition")
}

// TestUncleanElection checks "All replicas down: with
// unclean.leader.election.enable=true the first replica to come back leads
// even if it was not in the ISR. With false, the partition stays unavailable
// until an ISR member returns."
// Reference: spec/SEMANTICS.md, Replication (All replicas down).
func TestUncleanElection(t *testing.T) {
	for _, unclean := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[unclean], func(t *testing.T) {
			h := newHarness(t, Config{UncleanLeaderElection: unclean}, 1, 2, 3)
			h.createTopic("t", 1, 3)
			p := tp("t", 0)
			require.NoError(t, h.alter(p, 1).Err, "followers fell behind")
			drain(h.c)

			h.kill(1)
			s := h.state(p)
			if unclean {
				assert.Equal(t, int32(2), s.Leader, "first live replica in assignment order")
				assert.Equal(t, []int32{2}, s.ISR)
				assert.Equal(t, []EventKind{BrokerDead, ElectionUnclean}, kinds(drain(h.c)))
				return
			}
			assert.Equal(t, kafka.NoLeader, s.Leader)
			assert.Equal(t, []int32{1}, s.ISR)
			assert.Equal(t, []EventKind{BrokerDead, Offline}, kinds(drain(h.c)))
			h.revive(1)
			assert.Equal(t, int32(1), h.state(p).Leader)
		})
	}
}

// TestUncleanElectionWhenReplicaReturns checks that with unclean election on,
// an offline partition whose ISR is dead is led by the first replica to come
// back, with ISR = {it}.
// Reference: spec/SEMANTICS.md, Replication (All replicas down).
func TestUncleanElectionWhenReplicaReturns(t *testing.T) {
	h := newHarness(t, Config{UncleanLeaderElection: true}, 1, 2)
	h.createTopic("t", 1, 2)
	p := tp("t", 0)
	h.kill(1, 2)
	assert.Equal(t, []int32{1}, h.state(p).ISR, "the leader is the member kept")
	h.revive(2)
	s := h.state(p)
	assert.Equal(t, int32(2), s.Leader)
	assert.Equal(t, []int32{2}, s.ISR)
}

// TestRestartLeavesEveryISR checks KIP-903's rule that "a restarted
// replica must not count as in-sync with its old state": a broker
// registering with a new incarnation (once its old session ended:
// TestRegistrationWaitsForTheOldSession) has left every ISR and its
// leaderships as a dead broker does, and the leader's proposal to add it
// back on the strength of the old process's fetches is refused.
// Reference: KIP-903.
func TestRestartLeavesEveryISR(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2, 3)
	h.createTopic("t", 1, 3)
	p := tp("t", 0)
	h.now += 10

	h.restart(1)
	s := h.state(p)
	assert.Equal(t, int32(2), s.Leader)
	assert.Equal(t, []int32{2, 3}, s.ISR)
	assert.Equal(t, int32(1), s.LeaderEpoch)
	assert.True(t, h.c.IsAlive(1))
	rd := drain(h.c)
	assert.Equal(t, []EventKind{BrokerDead, ElectionClean, BrokerRegistered}, kinds(rd))
	assert.Equal(t, int64(1), rd.Events[0].Incarnation)
	assert.Equal(t, int64(2), rd.Events[2].Incarnation)

	old := kafka.AlterPartition{TopicPartition: p, LeaderID: 2, LeaderIncarnation: 1,
		LeaderEpoch: s.LeaderEpoch, PartitionEpoch: s.PartitionEpoch, NewISR: []int32{1, 2, 3},
		NewISRIncarnations: []int64{1, 1, 1}}
	assert.ErrorIs(t, answerTo(h.c, old, h.now).Err, kafka.ErrIneligibleReplica,
		"1's fetch came from the process before the restart")
	old.NewISRIncarnations = []int64{2, 1, 1}
	assert.NoError(t, answerTo(h.c, old, h.now).Err)

	require.ErrorIs(t, h.c.RegisterBroker(1, 1, h.now), kafka.ErrStaleIncarnation, "a delayed registration")
	require.NoError(t, h.c.RegisterBroker(1, 2, h.now), "a retried registration")
	h.check()
}

// TestKeepISROnRestart checks the pre-KIP-903 behaviour the KIP-101
// scenarios need: with KeepISROnRestart a broker that registers with a new
// incarnation keeps its ISR places and its leaderships; only its
// incarnation changes.
// Reference: KIP-101, scenario 1 (the restarted follower stays in the ISR).
func TestKeepISROnRestart(t *testing.T) {
	h := newHarness(t, Config{KeepISROnRestart: true}, 1, 2, 3)
	h.createTopic("t", 1, 3)
	p := tp("t", 0)
	before := h.state(p)
	drain(h.c)
	h.now += 10

	h.restart(1)
	after := h.state(p)
	assert.Equal(t, before.Leader, after.Leader)
	assert.Equal(t, before.ISR, after.ISR)
	assert.Equal(t, before.LeaderEpoch, after.LeaderEpoch)
	inc, _ := h.c.Incarnation(1)
	assert.Equal(t, int64(2), inc)
	rd := drain(h.c)
	assert.Equal(t, []EventKind{BrokerRegistered}, kinds(rd))
	assert.NotEmpty(t, rd.Updates, "the new process is sent its partitions")
	h.check()
}

// TestISRWithoutBrokerEpoch checks the pre-KIP-903 controller of
// KAFKA-14139: a leader proposes adding broker 3 on the strength of the
// fetches of 3's first process, and 3 restarts (on an empty disk, say)
// before the proposal arrives. KIP-903's check refuses the addition, as
// the incarnation the leader names is not the registered one;
// ISRWithoutBrokerEpoch accepts it, and the new process is in the ISR
// without having fetched anything.
// Reference: KAFKA-14139, KIP-903.
func TestISRWithoutBrokerEpoch(t *testing.T) {
	for _, noEpoch := range []bool{false, true} {
		h := newHarness(t, Config{ISRWithoutBrokerEpoch: noEpoch}, 1, 2, 3)
		h.createTopic("t", 1, 3)
		p := tp("t", 0)
		require.NoError(t, h.alter(p, 1, 2).Err)
		h.now += 10

		h.restart(3)
		s := h.state(p)
		require.Equal(t, []int32{1, 2}, s.ISR)
		stale := kafka.AlterPartition{TopicPartition: p, LeaderID: 1, LeaderIncarnation: 1,
			LeaderEpoch: s.LeaderEpoch, PartitionEpoch: s.PartitionEpoch, NewISR: []int32{1, 2, 3},
			NewISRIncarnations: []int64{1, 1, 1}}
		res := answerTo(h.c, stale, h.now)
		if !noEpoch {
			assert.ErrorIs(t, res.Err, kafka.ErrIneligibleReplica, "3's fetches came from the process before the restart")
			assert.Equal(t, []int32{1, 2}, res.State.ISR)
			continue
		}
		require.NoError(t, res.Err, "without broker epochs the controller cannot tell")
		assert.Equal(t, []int32{1, 2, 3}, res.State.ISR)
		h.check()
	}
}

// TestRestartOfLastISRMember pins down what KIP-903 alone cannot prevent:
// when the restarted broker is the last ISR member, it is fenced (the
// partition goes offline) and then cleanly re-elected, whatever it lost.
// This is the "last replica standing" repro's controller half.
// Reference: spec/SEMANTICS.md, Known bugs (last replica standing); KIP-966.
func TestRestartOfLastISRMember(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2)
	h.createTopic("t", 1, 2)
	p := tp("t", 0)
	require.NoError(t, h.alter(p, 1).Err)
	drain(h.c)

	h.restart(1)
	s := h.state(p)
	assert.Equal(t, int32(1), s.Leader)
	assert.Equal(t, int32(2), s.LeaderEpoch, "offline, then elected again")
	assert.Equal(t, []EventKind{BrokerDead, Offline, BrokerRegistered, ElectionClean}, kinds(drain(h.c)))
}

// TestAlterPartition checks KIP-497: a leader's ISR proposal is applied only
// if it comes from the current leader, of the current incarnation, on the
// current leader and partition epochs, and adds only live replicas; on
// success the partition epoch grows by one.
// Reference: KIP-497.
func TestAlterPartition(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2, 3, 4)
	h.createTopic("t", 1, 3) // replicas [1 2 3]
	p := tp("t", 0)

	h.c.AlterPartition(h.request(h.state(p), 2, 1), h.now)
	h.check()
	rd := drain(h.c)
	require.Len(t, rd.Answers, 1, "answered in the Ready, with the state it made")
	assert.Equal(t, int32(1), rd.Answers[0].Broker, "to the leader that asked")
	res := rd.Answers[0].Msg.(kafka.AlterPartitionAnswer)
	require.NoError(t, res.Err)
	assert.Equal(t, []int32{1, 2}, res.State.ISR)
	assert.Equal(t, int32(1), res.State.PartitionEpoch)
	assert.Equal(t, int32(0), res.State.LeaderEpoch)
	require.Equal(t, []EventKind{ISRChange}, kinds(rd))
	assert.Equal(t, int32(1), rd.Events[0].Broker, "the leader asked for it")
	assert.Len(t, rd.Updates, 3)

	res = h.alter(p, 1, 2)
	assert.NoError(t, res.Err, "a proposal equal to the ISR is accepted")
	assert.Equal(t, int32(1), res.State.PartitionEpoch, "and changes nothing")

	h.kill(3)
	drain(h.c)
	cur := h.state(p)
	for _, tc := range []struct {
		name   string
		mutate func(*kafka.AlterPartition)
		want   error
	}{
		{"stale broker incarnation", func(r *kafka.AlterPartition) { r.LeaderIncarnation = 0 }, kafka.ErrStaleBrokerEpoch},
		{"unknown broker", func(r *kafka.AlterPartition) { r.LeaderID = 9 }, kafka.ErrStaleBrokerEpoch},
		{"unknown partition", func(r *kafka.AlterPartition) { r.Partition = 7 }, kafka.ErrUnknownTopicOrPartition},
		{"stale leader epoch", func(r *kafka.AlterPartition) { r.LeaderEpoch-- }, kafka.ErrFencedLeaderEpoch},
		{"future leader epoch (another controller's)", func(r *kafka.AlterPartition) { r.LeaderEpoch++ }, kafka.ErrNotController},
		{"future partition epoch (another controller's)", func(r *kafka.AlterPartition) { r.PartitionEpoch++ }, kafka.ErrNotController},
		{"not the leader", func(r *kafka.AlterPartition) { r.LeaderID = 2 }, kafka.ErrInvalidRequest},
		{"stale partition epoch", func(r *kafka.AlterPartition) { r.PartitionEpoch-- }, kafka.ErrInvalidUpdateVersion},
		{"leader left out", func(r *kafka.AlterPartition) { r.NewISR = []int32{2} }, kafka.ErrInvalidRequest},
		{"non-replica", func(r *kafka.AlterPartition) { r.NewISR = []int32{1, 2, 4} }, kafka.ErrInvalidRequest},
		{"duplicate", func(r *kafka.AlterPartition) { r.NewISR = []int32{1, 1} }, kafka.ErrInvalidRequest},
		{"empty", func(r *kafka.AlterPartition) { r.NewISR = nil }, kafka.ErrInvalidRequest},
		{"adds a dead broker", func(r *kafka.AlterPartition) { r.NewISR = []int32{1, 2, 3} }, kafka.ErrIneligibleReplica},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := h.request(cur, 1, 2)
			tc.mutate(&req)
			res := answerTo(h.c, req, h.now)
			assert.ErrorIs(t, res.Err, tc.want)
			assert.Equal(t, cur, h.state(p), "a refused request changes nothing")
			if tc.want != kafka.ErrUnknownTopicOrPartition {
				assert.Equal(t, cur, res.State, "the refusal carries the current state")
			}
		})
	}
	assert.True(t, drain(h.c).IsEmpty())
	res = h.alter(p, 1)
	assert.NoError(t, res.Err, "removing a member is always eligible")
}

// TestHeartbeatsKeepBrokersAlive checks "a broker that stops heartbeating
// within its session timeout is dead", and only then: heartbeats of the
// registered incarnation keep a broker alive across ticks, heartbeats of any
// other incarnation do not.
// Reference: spec/SEMANTICS.md, Replication (Controller); KIP-631 (broker epochs).
func TestHeartbeatsKeepBrokersAlive(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2)
	require.ErrorIs(t, h.c.RegisterBroker(2, 2, 0), kafka.ErrDuplicateBrokerRegistration,
		"broker 2 restarts at once: refused while its old session is live")
	h.now = timeout + 1
	h.c.Tick(h.now)
	require.NoError(t, h.c.RegisterBroker(2, 2, h.now), "the old session ended")
	for h.now += 500; h.now <= 5000; h.now += 500 {
		require.NoError(t, h.c.Heartbeat(1, 1, h.now))
		require.ErrorIs(t, h.c.Heartbeat(2, 1, h.now), kafka.ErrStaleIncarnation)
		h.c.Tick(h.now)
		h.check()
		assert.True(t, h.c.IsAlive(1), "t=%d", h.now)
	}
	assert.Equal(t, []int32{1}, h.c.LiveBrokers())
	require.ErrorIs(t, h.c.Heartbeat(9, 1, h.now), kafka.ErrStaleIncarnation, "never registered: Kafka's STALE_BROKER_EPOCH")

	// The timeout is strict: exactly SessionTimeoutMs of silence is alive.
	h.c.Tick(h.now - 500 + timeout)
	assert.True(t, h.c.IsAlive(1))
	h.c.Tick(h.now - 500 + timeout + 1)
	assert.False(t, h.c.IsAlive(1))
}

// TestAutoLeaderRebalance checks that leadership moves back to the preferred
// replica (the first in the assignment) once it is alive and in the ISR, and
// only with auto.leader.rebalance.enable.
// Reference: spec/SEMANTICS.md, Replication (Controller); KIP-183 (preferred election).
func TestAutoLeaderRebalance(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[enabled], func(t *testing.T) {
			h := newHarness(t, Config{AutoLeaderRebalance: enabled}, 1, 2, 3)
			h.createTopic("t", 1, 3)
			p := tp("t", 0)
			h.kill(1)
			h.revive(1)
			h.tick()
			require.Equal(t, int32(2), h.state(p).Leader, "1 is alive but not in the ISR")

			require.NoError(t, h.alter(p, 1, 2, 3).Err, "1 caught up")
			drain(h.c)
			h.tick()
			s := h.state(p)
			if !enabled {
				assert.Equal(t, int32(2), s.Leader)
				assert.True(t, drain(h.c).IsEmpty())
				return
			}
			assert.Equal(t, int32(1), s.Leader)
			assert.Equal(t, int32(2), s.LeaderEpoch)
			assert.Equal(t, []int32{1, 2, 3}, s.ISR)
			rd := drain(h.c)
			require.Equal(t, []EventKind{ElectionPreferred}, kinds(rd))
			assert.Equal(t, int32(2), rd.Events[0].OldLeader)
		})
	}
}

// TestOutputsDoNotAliasState checks that callers cannot change the
// controller's state through what it hands out.
func TestOutputsDoNotAliasState(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2)
	require.NoError(t, createTopic(h.c, "t", 1, 2, kafka.TopicConfig{}, h.now))
	rd := drain(h.c)
	rd.Updates[0].States[0].ISR[0] = 9
	rd.Events[0].State.Replicas[0] = 9
	rd.Records[len(rd.Records)-1].Partition.State.ISR[0] = 9
	h.c.Metadata()[0].ISR[0] = 9
	s := h.state(tp("t", 0))
	s.Replicas[0] = 9
	assert.Equal(t, []int32{1, 2}, h.state(tp("t", 0)).ISR)
	assert.Equal(t, []int32{1, 2}, h.state(tp("t", 0)).Replicas)
	assert.False(t, h.c.HasReady(), "a record changed by its reader is still recorded as it was")
	h.check()
}

// TestDeterminism checks the pure-core rule: "Nothing in the core reads a
// clock, a random source, a map in iteration order that matters", so the
// same sequence of calls yields identical Ready and Describe output. Go
// randomises map iteration, so an order leak shows up as a difference
// between two runs of the same random script. The scripts also check every
// invariant after every step.
// Reference: package controller's doc (same calls, same Ready, bit for bit).
func TestDeterminism(t *testing.T) {
	for seed := range uint64(20) {
		first := runScript(t, seed)
		second := runScript(t, seed)
		require.Equal(t, first, second, "seed %d", seed)
	}
}

// runScript drives a controller through 300 random steps and returns the
// transcript of every call, every Ready and the final Describe.
func runScript(t *testing.T, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 0))
	cfg := Config{UncleanLeaderElection: rng.IntN(2) == 0, AutoLeaderRebalance: rng.IntN(2) == 0}
	h := newHarness(t, cfg, 1, 2, 3)
	var out strings.Builder
	fmt.Fprintf(&out, "%+v\n", cfg)
	topics := 0
	for range 300 {
		switch op := rng.IntN(10); {
		case op < 5: // time passes; some brokers heartbeat, some stale
			h.now += int64(rng.IntN(600))
			for _, id := range h.c.brokerIDs() {
				if rng.IntN(10) < 6 {
					inc := h.inc[id] - int64(rng.IntN(4)/3)
					fmt.Fprintf(&out, "heartbeat %d/%d: %v\n", id, inc, h.c.Heartbeat(id, inc, h.now))
				}
			}
			h.c.Tick(h.now)
			fmt.Fprintf(&out, "tick %d\n", h.now)
		case op < 7: // a broker starts, or restarts
			id := int32(1 + rng.IntN(5))
			if _, ok := h.inc[id]; !ok || rng.IntN(2) == 0 {
				h.inc[id]++
			}
			fmt.Fprintf(&out, "register %d/%d: %v\n", id, h.inc[id], h.c.RegisterBroker(id, h.inc[id], h.now))
		case op < 8:
			name := fmt.Sprintf("t%d", topics%4)
			topics++
			err := createTopic(h.c, name, int32(1+rng.IntN(4)), 1+rng.IntN(3), kafka.TopicConfig{}, h.now)
			fmt.Fprintf(&out, "create %s: %v\n", name, err)
		default: // a leader, possibly stale, proposes an ISR
			md := h.c.Metadata()
			if len(md) == 0 {
				continue
			}
			s := md[rng.IntN(len(md))]
			var isr []int32
			for _, r := range s.Replicas {
				if r == s.Leader || rng.IntN(2) == 0 {
					isr = append(isr, r)
				}
			}
			req := h.request(s, isr...)
			req.LeaderEpoch -= int32(rng.IntN(5) / 4)
			req.PartitionEpoch -= int32(rng.IntN(5) / 4)
			res := answerTo(h.c, req, h.now)
			fmt.Fprintf(&out, "alter %s %v: %s %s\n", s.TopicPartition, isr, kafka.Name(res.Err), res.State)
		}
		h.check()
		out.WriteString(drain(h.c).String())
	}
	out.WriteString(h.c.Describe())
	return out.String()
}

// TestDescribe pins the canonical rendering that scenario files compare.
func TestDescribe(t *testing.T) {
	h := newHarness(t, Config{}, 2, 1, 3)
	h.createTopic("b", 1, 2)
	h.createTopic("a", 2, 3)
	h.kill(2)
	want := `config session-timeout-ms=1000 unclean-leader-election=false auto-leader-rebalance=false
broker 1 alive incarnation=1 last-heartbeat=1001
broker 2 dead incarnation=1 last-heartbeat=0
broker 3 alive incarnation=1 last-heartbeat=1001
partition a-0 replicas=[1 2 3] leader=1 leader-epoch=0 isr=[1 3] partition-epoch=1
partition a-1 replicas=[2 3 1] leader=3 leader-epoch=1 isr=[1 3] partition-epoch=1
partition b-0 replicas=[1 2] leader=1 leader-epoch=0 isr=[1] partition-epoch=1
`
	assert.Equal(t, want, h.c.Describe())
	wantReady := `event t=1001 broker-dead broker=2 incarnation=1
event t=1001 isr-change a-0 leader=1->1 leader-epoch=0 isr=[1 2 3]->[1 3] partition-epoch=1
event t=1001 election-clean a-1 leader=2->3 leader-epoch=1 isr=[1 2 3]->[1 3] partition-epoch=1
event t=1001 isr-change b-0 leader=1->1 leader-epoch=0 isr=[1 2]->[1] partition-epoch=1
record broker 2 dead incarnation=1
record partition a-0 replicas=[1 2 3] leader=1 leader-epoch=0 isr=[1 3] partition-epoch=1
record partition a-1 replicas=[2 3 1] leader=3 leader-epoch=1 isr=[1 3] partition-epoch=1
record partition b-0 replicas=[1 2] leader=1 leader-epoch=0 isr=[1] partition-epoch=1
update broker=1 a-0 replicas=[1 2 3] leader=1 leader-epoch=0 isr=[1 3] partition-epoch=1
update broker=1 a-1 replicas=[2 3 1] leader=3 leader-epoch=1 isr=[1 3] partition-epoch=1
update broker=1 b-0 replicas=[1 2] leader=1 leader-epoch=0 isr=[1] partition-epoch=1
update broker=3 a-0 replicas=[1 2 3] leader=1 leader-epoch=0 isr=[1 3] partition-epoch=1
update broker=3 a-1 replicas=[2 3 1] leader=3 leader-epoch=1 isr=[1 3] partition-epoch=1
`
	assert.Equal(t, wantReady, drain(h.c).String())
}

// A broker whose restarted process lost a partition's committed records
// (its broker says so as it registers) is not elected for it: as the last
// ISR member it leaves the partition offline, with unclean election on a
// replica that lost nothing is preferred, and once a leader has added it
// back to the ISR it may lead again.
func TestRestartedReplicaThatLostDataIsNotElected(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2)
	h.createTopic("t", 1, 2)
	p := tp("t", 0)
	require.NoError(t, h.alter(p, 1).Err) // ISR [1]: broker 1 alone
	drain(h.c)

	h.register(1, Registration{Lost: []kafka.TopicPartition{p}})
	s := h.state(p)
	assert.Equal(t, kafka.NoLeader, s.Leader, "the last ISR member lost the data: offline, not elected")
	assert.Equal(t, []int32{1}, s.ISR)
	assert.Equal(t, []EventKind{BrokerDead, Offline, BrokerRegistered}, kinds(drain(h.c)))
	h.check()

	// Another restart, clean this time (its log is the same short log),
	// reports nothing lost: the loss is still its, until it is copied back.
	h.register(1, Registration{})
	assert.True(t, h.c.lostData(1, p), "a new incarnation keeps what the last one lost")
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "still offline, not elected")

	// The controller's snapshot keeps it.
	snap := h.c.Snapshot()
	r, err := Restore(h.c.cfg, snap, h.now)
	require.NoError(t, err)
	require.True(t, r.lostData(1, p))

	// Unclean election prefers broker 2, which lost nothing.
	h2 := newHarness(t, Config{UncleanLeaderElection: true}, 1, 2)
	h2.createTopic("t", 1, 2)
	require.NoError(t, h2.alter(p, 1).Err)
	drain(h2.c)
	h2.register(1, Registration{Lost: []kafka.TopicPartition{p}})
	assert.Equal(t, int32(2), h2.state(p).Leader, "unclean: the replica that lost nothing")
	h2.check()

	// Added back by that leader, broker 1 holds the HW again.
	require.NoError(t, h2.alter(p, 1, 2).Err)
	require.False(t, h2.c.lostData(1, p))
}

// CheckInvariants fires on a leader that lost the partition's committed
// records (with unclean election off), and is quiet once it has not.
func TestInvariantsKnowLostData(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2)
	h.createTopic("t", 1, 2)
	p := tp("t", 0)
	require.NoError(t, h.c.CheckInvariants())
	leader := h.state(p).Leader
	h.c.brokers[leader].lost = lostSet([]kafka.TopicPartition{p})
	require.ErrorContains(t, h.c.CheckInvariants(), "lost the partition's committed records")
	h.c.brokers[leader].lost = nil
	require.NoError(t, h.c.CheckInvariants())
}
