package quorum

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// registerBrokers registers brokers 1..n with the active controller and
// creates topic t (n partitions, RF n).
func registerBrokers(q *testQuorum, n int) {
	q.t.Helper()
	for id := 1; id <= n; id++ {
		q.send(broker.NodeID(id), broker.RegisterBroker{Incarnation: int64(id)})
	}
	q.send(broker.NodeID(1), broker.CreateTopic{Correlation: 1, Name: "t", Partitions: int32(n), ReplicationFactor: n})
}

// requireSameImages fails unless every voter up has applied the same
// metadata as the active controller.
func requireSameImages(q *testQuorum) {
	q.t.Helper()
	want := q.active().Image().Snapshot()
	for v, n := range q.nodes {
		if n != nil && !q.cut[v+1] {
			require.Equal(q.t, want, n.Image().Snapshot(), "voter %d", v+1)
		}
	}
}

func TestOneVoterIsActiveAtOnce(t *testing.T) {
	q := newTestQuorum(t, 1)
	require.NoError(t, q.nodes[0].Campaign())
	q.collect(q.nodes[0])
	require.True(t, q.nodes[0].Active())
	registerBrokers(q, 3)
	p, ok := q.nodes[0].Image().Partition(kafka.TopicPartition{Topic: "t", Partition: 0})
	require.True(t, ok)
	assert.Equal(t, int32(1), p.Leader)
}

func TestThreeVotersElectOneAndReplicateEveryRecord(t *testing.T) {
	q := newTestQuorum(t, 3)
	q.run(2000)
	a := q.active()
	registerBrokers(q, 3)
	q.run(300)
	requireSameImages(q)
	assert.Len(t, a.Image().Metadata(), 3)
	// Every broker got its whole state, and the state of every change.
	full := map[broker.NodeID]bool{}
	for _, env := range q.toBrokers {
		if u, ok := env.Msg.(broker.StateUpdate); ok && u.Full {
			full[env.To] = true
			assert.Equal(t, a.Term(), u.ControllerEpoch)
		}
	}
	assert.Len(t, full, 3)
}

func TestFailoverKeepsTheMetadataAndMovesEpochsOn(t *testing.T) {
	q := newTestQuorum(t, 3)
	q.run(2000)
	registerBrokers(q, 3)
	q.run(300)
	old := q.active()
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	before, _ := old.Image().Partition(tp)
	q.crash(old.cfg.Voter)
	// Brokers 2 and 3 keep heartbeating whoever is active; broker 1,
	// which leads tp, is gone.
	for i := 0; i < 40; i++ {
		q.run(100)
		if n := q.findActive(); n != nil {
			for id := 2; id <= 3; id++ {
				require.NoError(t, n.Handle(broker.Envelope{From: broker.NodeID(id), To: n.ID(), Msg: broker.Heartbeat{Incarnation: int64(id), MetadataVersion: 1 << 40}}, q.now))
				q.collect(n)
			}
			q.deliver()
		}
	}
	a := q.active()
	require.NotEqual(t, old.cfg.Voter, a.cfg.Voter)
	assert.Greater(t, a.Term(), old.Term())
	after, _ := a.Image().Partition(tp)
	assert.NotEqual(t, int32(1), after.Leader, "broker 1's session ended under the new controller: tp has another leader")
	assert.Greater(t, after.LeaderEpoch, before.LeaderEpoch)
	assert.Greater(t, after.PartitionEpoch, before.PartitionEpoch)
	requireSameImages(q)
}

// findActive returns the active voter, nil while none is.
func (q *testQuorum) findActive() *Node {
	for v, n := range q.nodes {
		if n != nil && n.Active() && !q.cut[v+1] {
			return n
		}
	}
	return nil
}

func TestARestartedVoterCatchesUpFromASnapshot(t *testing.T) {
	q := newTestQuorum(t, 3)
	q.run(2000)
	registerBrokers(q, 3)
	follower := 1
	if q.active().cfg.Voter == 1 {
		follower = 2
	}
	q.crash(follower)
	// Enough records that the log is compacted past what the follower has.
	for i := 0; i < 60; i++ {
		q.send(broker.NodeID(1), broker.CreateTopic{Correlation: uint64(10 + i), Name: fmt.Sprintf("x%d", i), Partitions: 1, ReplicationFactor: 3})
	}
	q.run(300)
	require.Greater(t, q.active().snapshot, uint64(20), "the leader compacted its log")
	q.start(follower)
	q.run(1000)
	requireSameImages(q)
	assert.Greater(t, q.nodes[follower-1].snapshot, uint64(1), "the follower took the leader's snapshot")
}

func TestALeaderCutOffStopsActingAndAnotherTakesOver(t *testing.T) {
	q := newTestQuorum(t, 3)
	q.run(2000)
	old := q.active()
	q.cut[old.cfg.Voter] = true
	q.run(2000)
	assert.False(t, old.Active(), "a leader that hears from no majority is not active")
	a := q.active()
	assert.NotEqual(t, old.cfg.Voter, a.cfg.Voter)
	q.cut[old.cfg.Voter] = false
	q.run(1000)
	assert.False(t, old.Active())
	assert.Equal(t, a.Term(), old.Term(), "the old leader learned the new term")
}

func TestAVoterCutOffAndBackDoesNotDeposeTheLeader(t *testing.T) {
	q := newTestQuorum(t, 3)
	q.run(2000)
	a := q.active()
	term := a.Term()
	other := a.cfg.Voter%3 + 1
	q.cut[other] = true
	q.run(3000) // it campaigns, with pre-votes that cannot raise its term
	q.cut[other] = false
	q.run(1000)
	assert.Same(t, a, q.active())
	assert.Equal(t, term, a.Term(), "the lease and pre-vote kept the term")
}

func TestAFollowerSendsBrokersToTheLeader(t *testing.T) {
	q := newTestQuorum(t, 3)
	q.run(2000)
	a := q.active()
	f := q.nodes[a.cfg.Voter%3]
	require.NoError(t, f.Handle(broker.Envelope{From: 1, To: f.ID(), Msg: broker.Heartbeat{Incarnation: 1}}, q.now))
	out := f.TakeOutbox()
	require.Len(t, out, 1)
	assert.Equal(t, broker.NotController{Epoch: a.Term(), Leader: a.ID()}, out[0].Msg)
	// An ISR change sent to a follower is refused, not decided: the
	// broker learns where to go, and its proposal that it failed.
	require.NoError(t, f.Handle(broker.Envelope{From: 1, To: f.ID(), Msg: kafka.AlterPartition{ProposalID: 3}}, q.now))
	out = f.TakeOutbox()
	require.Len(t, out, 2)
	assert.Equal(t, broker.NotController{Epoch: a.Term(), Leader: a.ID()}, out[0].Msg)
	assert.ErrorIs(t, out[1].Msg.(kafka.AlterPartitionAnswer).Err, kafka.ErrNotController)
}

func TestElectionsReplayFromTheSeed(t *testing.T) {
	trace := func() []string {
		q := newTestQuorum(t, 5)
		q.run(2000)
		registerBrokers(q, 3)
		for i := 0; i < 2; i++ {
			q.crash(q.active().cfg.Voter)
			q.run(3000)
		}
		for v := range q.nodes {
			if q.nodes[v] == nil {
				q.start(v + 1)
			}
		}
		q.run(2000)
		var out []string
		for _, e := range q.events {
			out = append(out, fmt.Sprintf("%d %d %d %s %d", e.Now, e.Voter, e.Term, e.Kind, e.Index))
		}
		return out
	}
	a, b := trace(), trace()
	require.NotEmpty(t, a)
	assert.Equal(t, a, b)
}
