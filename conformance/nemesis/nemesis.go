// Package nemesis draws a run's random faults (run.Nemesis) the same way
// for every runner: the simulator and the live runner show it their
// cluster (Cluster) and carry out what it draws. Which broker a role
// fault strikes (the leader, a follower, the group's coordinator), and
// the steps of a fault that unfolds over time (Unfold), are decided here
// too, from the partition state the runner knows. How each fault strikes
// is its definition's (run.Def), through the runner's primitives
// (run.Striker).
package nemesis

import (
	"math/rand/v2"
	"slices"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// Cluster is what a runner shows the nemesis of its cluster.
type Cluster interface {
	// Faulted reports whether broker id (1..Brokers) is down or has a
	// fault in force.
	Faulted(id int) bool
	// InSync reports whether every partition's ISR holds all its
	// replicas (for run.Nemesis.PowerLossOnlyInSync).
	InSync() bool
	// Partition is the state of tp as the runner knows it.
	Partition(tp kafka.TopicPartition) (kafka.PartitionState, bool)
	// ConsumersUp lists the group consumers whose process runs.
	ConsumersUp() []int
}

// Coordinators is a Cluster that asks the system which broker
// coordinates the run's group (FindCoordinator): a live runner's, whose
// cluster maps groups onto an offsets topic of its own making. A Cluster
// without it has the coordinator lead the partition run.Spec's
// GroupPartition names.
type Coordinators interface {
	Coordinator() (int, bool)
}

// Delay draws the time until the nemesis's next fault: uniform in
// [IntervalMs/2, 3*IntervalMs/2] (IntervalMs 0 means 2000).
func Delay(nm run.Nemesis, rng *rand.Rand) int64 {
	iv := nm.IntervalMs
	if iv <= 0 {
		iv = 2000
	}
	return iv/2 + rng.Int64N(iv+1)
}

// Next draws the nemesis's next fault within its budget of faulted
// brokers (MaxFaulty), on a broker or group consumer that is up; false
// when this round has none to strike. A role fault comes back resolved:
// Role any, and Node the broker it strikes now.
func Next(s *run.Spec, c Cluster, rng *rand.Rand) (run.Fault, bool) {
	nm := s.Nemesis
	limit := max(nm.MaxFaulty, 1)
	if len(nm.Kinds) > 0 && !slices.ContainsFunc(nm.Kinds, func(k run.FaultKind) bool { return k != run.FaultCrashConsumer }) {
		// Consumer crashes only: keep at least one group consumer alive.
		up := c.ConsumersUp()
		if len(up) <= 1 || s.Workload.GroupConsumers-len(up) >= limit {
			return run.Fault{}, false
		}
		f := run.Fault{Kind: run.FaultCrashConsumer, ForMs: nm.FaultMs}
		f.ForMs = s.Duration(f)
		f.Node = up[rng.IntN(len(up))]
		return f, true
	}
	faulty := 0
	var healthy []int
	for id := 1; id <= s.Brokers; id++ {
		if c.Faulted(id) {
			faulty++
		} else {
			healthy = append(healthy, id)
		}
	}
	if faulty >= limit || len(healthy) == 0 {
		return run.Fault{}, false
	}
	kind := nm.Kinds[rng.IntN(len(nm.Kinds))]
	inSync := faulty == 0 && c.InSync()
	switch {
	case (kind == run.FaultPowerLoss || kind == run.FaultPowerLossAll) && nm.PowerLossOnlyInSync && !inSync:
		kind = run.FaultCrash
	case kind == run.FaultPowerLossAll && (faulty > 0 || !s.Broker.FlushEveryAppend):
		// Without an fsync before each acknowledgement, losing every
		// machine at once loses acknowledged writes legitimately.
		kind = run.FaultPowerLoss
	case kind == run.FaultBounceLeader && (limit < 2 || faulty > 0):
		kind = run.FaultCrash // it needs two brokers faulted at once
	case kind == run.FaultRollingStop && faulty > 0:
		kind = run.FaultStop // it stops every broker in turn: from a whole cluster
	}
	f := run.Fault{Kind: kind, ForMs: nm.FaultMs, DelayMs: nm.DelayMs, Role: nm.Role}
	if f.ForMs <= 0 {
		f.ForMs = s.RestartAfterMs
	}
	if f.Kind == run.FaultSlow && f.DelayMs <= 0 {
		f.DelayMs = 500
	}
	if f.Kind.Down() && nm.Repeats > 0 {
		f.Repeat = rng.IntN(nm.Repeats + 1)
	}
	switch f.Kind {
	case run.FaultPowerLossAll:
		f.Role = run.RoleAny
		return f, true
	case run.FaultRollingStop:
		f.Role, f.PowerOff = run.RoleAny, rng.IntN(3) == 0
		return f, true
	case run.FaultStop:
		// A stopped machine may lose power: a clean stop synced
		// everything, so it loses nothing.
		f.PowerOff = rng.IntN(3) == 0
	case run.FaultDamageLog:
		f.DamageAt = DrawDamageAt(rng)
		f.Clean = rng.IntN(2) == 0
	case run.FaultMessages:
		f.Messages = nm.Messages.Clone()
		if f.Messages == nil {
			f.Messages = DrawMessages(rng)
		}
	case run.FaultBounceLeader:
		f.Role = run.RoleLeader
	}
	if f.Role == run.RoleAny {
		f.Node = healthy[rng.IntN(len(healthy))]
		return f, true
	}
	tps := s.Partitions()
	tp := tps[rng.IntN(len(tps))]
	f.Partition = &tp
	id, ok := Strike(s, c, f, rng)
	if !ok || c.Faulted(id) {
		return run.Fault{}, false
	}
	f.Role, f.Node = run.RoleAny, id
	return f, true
}

// Strike picks the broker fault f strikes now: Node for Role any, else
// the leader or a follower (drawn from rng) of its partition (Partition,
// or the first topic's partition 0), or the group's coordinator; false
// when there is none.
func Strike(s *run.Spec, c Cluster, f run.Fault, rng *rand.Rand) (int, bool) {
	if f.Role == run.RoleAny {
		return f.Node, f.Node >= 1 && f.Node <= s.Brokers
	}
	tp := kafka.TopicPartition{Topic: s.Topics[0].Name}
	if f.Partition != nil {
		tp = *f.Partition
	}
	if f.Role == run.RoleCoordinator {
		if cc, ok := c.(Coordinators); ok {
			return cc.Coordinator()
		}
		tp = s.GroupPartition()
	}
	p, ok := c.Partition(tp)
	if !ok {
		return 0, false
	}
	if f.Role == run.RoleLeader || f.Role == run.RoleCoordinator {
		return int(p.Leader), p.Leader > 0
	}
	// A follower with a fault in force already is struck only when every
	// follower has one: two follower faults at once strike two followers.
	var followers, faulted []int32
	for _, id := range p.Replicas {
		switch {
		case id == p.Leader:
		case c.Faulted(int(id)):
			faulted = append(faulted, id)
		default:
			followers = append(followers, id)
		}
	}
	if len(followers) == 0 {
		followers = faulted
	}
	if len(followers) == 0 {
		return 0, false
	}
	return int(followers[rng.IntN(len(followers))]), true
}

// DrawDamageAt draws where a damage-log fault strikes a log.
func DrawDamageAt(rng *rand.Rand) run.DamageAt {
	return []run.DamageAt{run.DamageMiddle, run.DamageFirst, run.DamageLast, run.DamageAny}[rng.IntN(4)]
}

// brokerMessages are the message kinds a drawn messages fault picks from:
// what brokers and the controller say to each other, and the answers
// that carry a produce's or a fetch's outcome.
var brokerMessages = []string{"replica-fetch", "replica-fetch-response", "epoch-end", "epoch-end-response",
	"alter-partition", "alter-partition-response", "state-update", "heartbeat", "produce-response", "fetch-response"}

// DrawMessages draws what a messages fault does: one to three kinds,
// each message lost, duplicated or held back with chances drawn too.
func DrawMessages(rng *rand.Rand) *run.MessageFault {
	m := &run.MessageFault{
		Drop:      float64(rng.IntN(6)) / 10,
		Duplicate: float64(rng.IntN(4)) / 10,
		Reorder:   float64(rng.IntN(4)) / 10,
		DelayMs:   rng.Int64N(5) * 100,
	}
	if m.Duplicate > 0 && rng.IntN(2) == 0 {
		m.CopyLateMs = 1000 * (1 + rng.Int64N(8))
	}
	for range 1 + rng.IntN(3) {
		if k := brokerMessages[rng.IntN(len(brokerMessages))]; !slices.Contains(m.Kinds, k) {
			m.Kinds = append(m.Kinds, k)
		}
	}
	if m.Drop == 0 && m.Duplicate == 0 && m.Reorder == 0 && m.DelayMs == 0 {
		m.Drop = 0.5
	}
	return m
}

// Unfold turns a fault that unfolds over time into its steps: a repeated
// crash, power loss, replace-disk or stop strikes the same broker again
// GapMs after each return; rolling-stop stops every broker in turn, each
// GapMs after the one before came back; bounce-leader crashes the leader A of its partition,
// then whoever leads next, so A leads again, while a follower of A's
// epoch is cut off across both elections. nil for any other fault, or
// when the partition has no leader or follower now.
func Unfold(s *run.Spec, c Cluster, f run.Fault, rng *rand.Rand) []run.Step {
	switch {
	case f.Kind == run.FaultBounceLeader:
		return bounce(s, c, f, rng)
	case f.Kind == run.FaultRollingStop:
		// Each broker in turn, by id: a rolling restart.
		gap := f.GapMs
		if gap <= 0 {
			gap = 1000
		}
		one := run.Fault{Kind: run.FaultStop, ForMs: f.ForMs, PowerOff: f.PowerOff}
		var steps []run.Step
		for id := 1; id <= s.Brokers; id++ {
			one.Node = id
			steps = append(steps, run.Step{AfterMs: int64(id-1) * (s.Duration(one) + gap), Fault: one})
		}
		return steps
	case f.Kind.Down() && f.Repeat > 0:
		id, ok := Strike(s, c, f, rng)
		if !ok {
			return nil
		}
		one := f
		one.Repeat, one.Role, one.Node = 0, run.RoleAny, id
		gap := f.GapMs
		if gap <= 0 {
			gap = 200
		}
		var steps []run.Step
		for i := range f.Repeat + 1 {
			steps = append(steps, run.Step{AfterMs: int64(i) * (s.Duration(one) + gap), Fault: one})
		}
		return steps
	}
	return nil
}

func bounce(s *run.Spec, c Cluster, f run.Fault, rng *rand.Rand) []run.Step {
	tp := kafka.TopicPartition{Topic: s.Topics[0].Name}
	if f.Partition != nil {
		tp = *f.Partition
	}
	p, ok := c.Partition(tp)
	if !ok || p.Leader <= 0 {
		return nil
	}
	// B is the replica the controller elects when A dies (the first alive
	// ISR member in assignment order), C the one after it.
	var others []int
	for _, id := range p.Replicas {
		if id != p.Leader && slices.Contains(p.ISR, id) && !c.Faulted(int(id)) {
			others = append(others, int(id))
		}
	}
	if len(others) < 2 {
		return nil
	}
	a, b, cut := int(p.Leader), others[0], others[1]
	down := s.Duration(run.Fault{Kind: run.FaultCrash, ForMs: f.ForMs})
	session := s.Controller.SessionTimeoutMs
	// B is cut off briefly (it stays in the ISR), so C copies A's last
	// records and B does not: none is committed. As B comes back, A
	// crashes and C is cut off, still following A in A's first epoch: B
	// leads and writes where C holds A's last records. B crashes once A
	// is back and caught up (a session and two seconds later), so A leads
	// again; C comes back after that, to follow the same leader in a
	// newer epoch (KAFKA-7164's schedule).
	first := min(int64(800), session/2)
	second := first + down + session + 2000
	whole := second - first + down + session + 500
	off := run.Fault{Kind: run.FaultIsolate, Node: cut, ForMs: whole}
	if f.DelayMs > 0 {
		off = run.Fault{Kind: run.FaultSlow, Node: cut, ForMs: whole, DelayMs: f.DelayMs}
	}
	return []run.Step{
		{AfterMs: first, Fault: run.Fault{Kind: run.FaultCrash, Node: a, ForMs: down}},
		{AfterMs: first, Fault: off},
		{AfterMs: 0, Fault: run.Fault{Kind: run.FaultIsolate, Node: b, ForMs: first}},
		{AfterMs: second, Fault: run.Fault{Kind: run.FaultCrash, Role: run.RoleLeader, Partition: &tp, ForMs: down}},
	}
}
