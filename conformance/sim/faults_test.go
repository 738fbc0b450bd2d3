package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/linearizability"
)

// holds runs cfg and requires that no invariant failed and that no
// anomaly shows in the history.
func holds(t *testing.T, cfg run.Spec) *run.Result {
	t.Helper()
	res, err := Run(cfg)
	require.NoError(t, err)
	if v := firstViolation(res); v != nil {
		t.Fatalf("seed %d: %v\nlast steps:\n%s", cfg.Seed, v, join(v.Trace))
	}
	assert.Empty(t, linearizability.CheckAnomalies(res.History), "seed %d", cfg.Seed)
	return res
}

func TestReplaceDisk(t *testing.T) {
	cfg := run.DefaultSpec(1)
	cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 3000}, Kind: run.FaultReplaceDisk, Node: 2, ForMs: 1500}}
	res := holds(t, cfg)
	assert.Equal(t, 1, res.Stats.DiskReplacements)
	assert.Equal(t, 1, res.Reached[run.SitEmptyDiskReturn])
}

func TestClusterPowerLossWithAnFsyncPerWrite(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := run.DefaultSpec(seed)
		cfg.Broker.FlushEveryAppend = true
		cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 4000}, Kind: run.FaultPowerLossAll, ForMs: 1500}}
		res := holds(t, cfg)
		assert.Equal(t, 3, res.Stats.PowerLosses, "seed %d", seed)
		assert.Equal(t, 1, res.Reached[run.SitClusterPowerLoss], "seed %d", seed)
		assert.Greater(t, acked(res.History), 50, "seed %d", seed)
	}
}

// A power loss of the whole cluster with logs synced on a timer tears
// the tails; recovery drops them and keeps every synced byte.
func TestTornTailsAreRecovered(t *testing.T) {
	torn := 0
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := run.DefaultSpec(seed)
		cfg.Broker.FlushIntervalMs = 300
		cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 4000}, Kind: run.FaultPowerLossAll, ForMs: 1500}}
		res, err := Run(cfg)
		require.NoError(t, err)
		for _, v := range res.Violations {
			require.NotEqual(t, run.InvSyncedSurvives, v.Invariant, "seed %d: %v", seed, v)
		}
		torn += res.Reached[run.SitTornTail]
	}
	assert.Positive(t, torn, "no power loss tore a tail")
}

// A power loss with a segment rolled since the last sync is counted as
// one mid-roll; with segments too big to roll in the run, it never is.
func TestPowerLossMidRollIsCounted(t *testing.T) {
	for _, tt := range []struct {
		segmentBytes int64
		want         bool
	}{{1024, true}, {1 << 30, false}} {
		cfg := run.DefaultSpec(1)
		cfg.Broker.LogSegmentBytes = tt.segmentBytes
		cfg.Broker.FlushIntervalMs = 1000
		cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 4500}, Kind: run.FaultPowerLoss, Node: 2, ForMs: 1500}}
		res := holds(t, cfg)
		assert.Equal(t, tt.want, res.Reached[run.SitRollPowerLoss] > 0, "segments of %d bytes", tt.segmentBytes)
	}
}

func TestMessageFaults(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := run.DefaultSpec(seed)
		cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 2000}, Kind: run.FaultMessages, Role: run.RoleLeader, ForMs: 6000,
			Messages: &run.MessageFault{Kinds: []string{"replica-fetch-response", "alter-partition", "alter-partition-response", "state-update"},
				Drop: 0.2, Duplicate: 0.3, DelayMs: 300}}}
		res := holds(t, cfg)
		assert.Positive(t, res.Stats.Duplicated, "seed %d", seed)
		assert.Positive(t, res.Reached[run.SitDuplicateMessage], "seed %d", seed)
		assert.Zero(t, res.Stats.Reordered, "seed %d: reorder 0 and no copy_late_ms: every link keeps its order", seed)

		// Late copies leave their link's order.
		cfg.Faults[0].Messages.CopyLateMs = 2000
		res = holds(t, cfg)
		assert.Positive(t, res.Stats.Duplicated, "seed %d", seed)
		assert.Equal(t, res.Stats.Duplicated, res.Stats.Reordered, "seed %d: each late copy is out of its link's order", seed)
	}
}

func TestBounceLeaderComesBack(t *testing.T) {
	returned := 0
	for seed := uint64(1); seed <= 4; seed++ {
		cfg := run.DefaultSpec(seed)
		cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
		cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 2000}, Kind: run.FaultBounceLeader, ForMs: 1500}}
		res := holds(t, cfg)
		assert.Equal(t, 2, res.Stats.Crashes, "seed %d", seed)
		returned += res.Reached[run.SitLeaderReturned]
	}
	assert.Positive(t, returned, "leadership never came back to the first leader")
}

func TestRepeatedRestarts(t *testing.T) {
	cfg := run.DefaultSpec(1)
	cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 3000}, Kind: run.FaultCrash, Node: 1, ForMs: 800, Repeat: 2, GapMs: 100}}
	res := holds(t, cfg)
	assert.Equal(t, 3, res.Stats.Crashes)
	assert.Equal(t, 2, res.Reached[run.SitRestartInARow])
}

// run.MessageKinds names every registered message kind a messages fault
// may select: all but the bootstrap's topic creation, the controlled
// shutdown's answer and the wire server's multi-partition fetch, which no
// simulated client sends.
func TestMessageKindsNameEveryMessage(t *testing.T) {
	unselectable := []kafka.Kind{"create-topic", "create-topic-response", "shutdown-answer", "fetch-many", "fetch-many-response", "raft"}
	var names []string
	for _, r := range kafka.Rows() {
		require.Equal(t, r.Kind, r.Proto.Kind(), "%T", r.Proto)
		if !slices.Contains(unselectable, r.Kind) {
			names = append(names, string(r.Kind))
		}
	}
	assert.ElementsMatch(t, run.MessageKinds, names)

	// "group" selects commits too; "offset-commit" selects only them.
	commit := broker.Envelope{From: broker.ClientIDBase, To: 1, Msg: broker.GroupRequest{Req: group.CommitRequest{}}}
	join := broker.Envelope{From: broker.ClientIDBase, To: 1, Msg: broker.GroupRequest{Req: group.JoinRequest{}}}
	assert.True(t, selects(&run.MessageFault{Kinds: []string{"group"}}, 1, commit))
	assert.True(t, selects(&run.MessageFault{Kinds: []string{"offset-commit"}}, 1, commit))
	assert.False(t, selects(&run.MessageFault{Kinds: []string{"offset-commit"}}, 1, join))
	// "group" selects FindCoordinator, which has its own kind besides.
	find := broker.Envelope{From: broker.ClientIDBase, To: 1, Msg: broker.FindCoordinatorRequest{}}
	assert.True(t, selects(&run.MessageFault{Kinds: []string{"group"}}, 1, find))
	assert.True(t, selects(&run.MessageFault{Kinds: []string{"find-coordinator"}}, 1, find))
	assert.False(t, selects(&run.MessageFault{Kinds: []string{"find-coordinator"}}, 1, join))
}

func TestMessageFaultSelects(t *testing.T) {
	fetch := broker.Envelope{From: 2, To: 1, Msg: partition.FetchRequest{}}
	answer := broker.Envelope{From: 1, To: 2, Msg: partition.FetchResponse{}}
	toClient := broker.Envelope{From: 1, To: broker.ClientIDBase, Msg: broker.ProduceResponse{}}
	m := &run.MessageFault{Kinds: []string{"replica-fetch-response"}, Direction: "out"}
	assert.True(t, selects(m, 1, answer))
	assert.False(t, selects(m, 1, fetch), "another kind, and in")
	m = &run.MessageFault{Peer: "2"}
	assert.True(t, selects(m, 1, fetch))
	assert.True(t, selects(m, 1, answer))
	assert.False(t, selects(m, 1, toClient))
	m = &run.MessageFault{Peer: "clients"}
	assert.True(t, selects(m, 1, toClient))
	assert.False(t, selects(m, 1, answer))
}

// The last ISR member comes back with a damaged log: it says so (a broker
// warning in the notes), it does not lead, and the follower that left the
// ISR last (an eligible leader replica) does; every acknowledged record
// is read back. A damaged follower's log is found too.
func TestDamagedLogs(t *testing.T) {
	cfg := run.DefaultSpec(1)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
	cfg.Broker.FlushEveryAppend = true
	cfg.Faults = []run.Fault{
		{When: run.Trigger{AtMs: 2000}, Kind: run.FaultCrash, Node: 3, ForMs: 8000},
		{When: run.Trigger{AtMs: 4500}, Kind: run.FaultCrash, Node: 2, ForMs: 5500},
		{When: run.Trigger{AtMs: 7000}, Kind: run.FaultDamageLog, Node: 1, ForMs: 2000}, // back first
	}
	res := holds(t, cfg)
	require.True(t, res.Stats.FinalReadDone)
	assert.Equal(t, 1, res.Stats.DamagedLogs)
	assert.Equal(t, 1, res.Reached[run.SitDamagedLastISR])
	var warned, eligible bool
	for _, n := range res.Notes {
		switch {
		case n.Kind == run.NoteBroker && n.Node == 1 && strings.Contains(n.Text, "LOST COMMITTED DATA"):
			warned = true
		case n.Kind == run.NoteElection && n.AtMs > 7000:
			require.NotEqual(t, int32(1), n.Leader, "the damaged replica led: %s", n.Text)
			eligible = eligible || (n.Leader == 2 && strings.Contains(n.Text, "eligible leader replica"))
		}
	}
	assert.True(t, warned, "broker 1 did not warn of the damage")
	assert.True(t, eligible, "broker 2, the eligible leader replica, was not elected")
	assert.Greater(t, acked(res.History), 100)

	cfg = run.DefaultSpec(2)
	cfg.Broker.FlushIntervalMs = 300
	cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 5000}, Kind: run.FaultDamageLog, Role: run.RoleFollower, ForMs: 1000}}
	res = holds(t, cfg)
	assert.Equal(t, 2, res.Reached[run.SitDamagedLog], "both partitions of the follower")
	assert.Zero(t, res.Reached[run.SitDamagedLastISR])
}
