package quorum

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/impl/storage"
)

// testQuorum is a quorum of voters on simulated disks, joined by a
// network that delivers at once, in order, unless a voter is cut off.
// Brokers are played by the test: what voters send them lands in
// toBrokers.
type testQuorum struct {
	t         *testing.T
	cfg       settings.Quorum
	now       int64
	nodes     []*Node // by voter - 1; nil while down
	disks     []*storage.SimDisk
	cut       map[int]bool
	queue     []broker.Envelope
	toBrokers []broker.Envelope
	events    []Event
}

func testQuorumConfig(voters int) settings.Quorum {
	return settings.Quorum{Voters: voters, ElectionTimeoutMs: 500, ElectionBackoffMaxMs: 250, HeartbeatMs: 100, SnapshotEntries: 20}
}

func newTestQuorum(t *testing.T, voters int) *testQuorum {
	q := &testQuorum{t: t, cfg: testQuorumConfig(voters), nodes: make([]*Node, voters), disks: make([]*storage.SimDisk, voters), cut: map[int]bool{}}
	for v := 1; v <= voters; v++ {
		q.disks[v-1] = storage.NewSimDisk()
		q.start(v)
	}
	return q
}

func (q *testQuorum) start(v int) {
	q.t.Helper()
	n, err := Open(Config{Voter: v, Quorum: q.cfg, Controller: controller.Config{SessionTimeoutMs: 1500}, Seed: 7}, q.disks[v-1], q.now)
	require.NoError(q.t, err)
	q.nodes[v-1] = n
}

// crash stops voter v; its disk keeps what it synced (and, as a
// process crash does, what the page cache held).
func (q *testQuorum) crash(v int) {
	q.nodes[v-1] = nil
	q.disks[v-1].Crash()
}

func (q *testQuorum) collect(n *Node) {
	q.events = append(q.events, n.TakeEvents()...)
	for _, env := range n.TakeOutbox() {
		if env.To.Voter() != 0 {
			q.queue = append(q.queue, env)
		} else {
			q.toBrokers = append(q.toBrokers, env)
		}
	}
}

// deliver hands every queued message to its voter, until none is left.
func (q *testQuorum) deliver() {
	q.t.Helper()
	for len(q.queue) > 0 {
		env := q.queue[0]
		q.queue = q.queue[1:]
		to := env.To.Voter()
		if q.cut[to] || q.cut[env.From.Voter()] || q.nodes[to-1] == nil {
			continue
		}
		require.NoError(q.t, q.nodes[to-1].Handle(env, q.now))
		q.collect(q.nodes[to-1])
	}
}

// run moves time on by ms in steps of 10 ms, ticking every voter up.
func (q *testQuorum) run(ms int64) {
	q.t.Helper()
	for end := q.now + ms; q.now < end; {
		q.now += 10
		for _, n := range q.nodes {
			if n != nil {
				require.NoError(q.t, n.Tick(q.now))
				q.collect(n)
			}
		}
		q.deliver()
	}
}

// active returns the voter that is active, failing unless exactly one
// reachable voter is.
func (q *testQuorum) active() *Node {
	q.t.Helper()
	var found *Node
	for v, n := range q.nodes {
		if n != nil && n.Active() && !q.cut[v+1] {
			require.Nil(q.t, found, "two active controllers reachable: %d and %d", found, v+1)
			found = n
		}
	}
	require.NotNil(q.t, found, "no active controller")
	return found
}

// send hands the active controller a broker's message.
func (q *testQuorum) send(from broker.NodeID, msg kafka.Message) {
	q.t.Helper()
	a := q.active()
	require.NoError(q.t, a.Handle(broker.Envelope{From: from, To: a.ID(), Msg: msg}, q.now))
	q.collect(a)
	q.deliver()
}
