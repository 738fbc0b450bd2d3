// Package nemesis draws a run's random faults (run.Nemesis) the same way
// for every runner: the simulator and the live runner show it their
// cluster (Cluster) and carry out what it draws. Which broker a role
// fault strikes (the leader, a follower, the group's coordinator) is
// decided here too, from the partition state the runner knows.
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
	if kind == run.FaultPowerLoss && nm.PowerLossOnlyInSync && (faulty > 0 || !c.InSync()) {
		kind = run.FaultCrash
	}
	f := run.Fault{Kind: kind, ForMs: nm.FaultMs, DelayMs: nm.DelayMs, Role: nm.Role}
	if f.ForMs <= 0 {
		f.ForMs = s.RestartAfterMs
	}
	if f.Kind == run.FaultSlow && f.DelayMs <= 0 {
		f.DelayMs = 500
	}
	if nm.Role == run.RoleAny {
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
		tp = s.GroupPartition()
	}
	p, ok := c.Partition(tp)
	if !ok {
		return 0, false
	}
	if f.Role == run.RoleLeader || f.Role == run.RoleCoordinator {
		return int(p.Leader), p.Leader > 0
	}
	var followers []int32
	for _, id := range p.Replicas {
		if id != p.Leader {
			followers = append(followers, id)
		}
	}
	if len(followers) == 0 {
		return 0, false
	}
	return int(followers[rng.IntN(len(followers))]), true
}
