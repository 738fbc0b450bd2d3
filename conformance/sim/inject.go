package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/failpoint"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// inject applies one fault now.
func (s *Sim) inject(f Fault) {
	if f.Kind == FaultHeal {
		s.stats.Faults++
		s.healIsolation()
		return
	}
	if f.Kind == FaultRestartProducer {
		s.stats.Faults++
		s.clients[f.Node].restartProducer()
		return
	}
	if f.Kind == FaultCrashConsumer {
		s.stats.Faults++
		s.groupConsumer(f.Node).crashGroupConsumer(s.faultDuration(f))
		return
	}
	id, ok := s.resolve(f)
	if !ok {
		s.note(fmt.Sprintf("%s of the %s: no such broker now, skipped", f.Kind, f.Role))
		return
	}
	n := s.nodes[id]
	dur := f.ForMs
	if dur == 0 && f.Kind != FaultIsolate {
		dur = s.cfg.RestartAfterMs
	}
	switch f.Kind {
	case FaultCrash, FaultPowerLoss:
		s.kill(n, f.Kind == FaultPowerLoss, dur, "scheduled")
	case FaultPause:
		if n.b == nil || n.paused {
			return
		}
		n.paused = true
		n.faulted++
		n.gen++
		s.stats.Faults++
		s.note(fmt.Sprintf("pause broker %d for %d ms", n.id, dur))
		s.schedule(event{at: s.now + dur, kind: evResume, node: n.id, gen: n.gen})
	case FaultSlow:
		if n.slowMs > 0 {
			return
		}
		n.slowMs = f.DelayMs
		n.faulted++
		n.gen++
		s.stats.Faults++
		s.note(fmt.Sprintf("slow broker %d by %d ms for %d ms", n.id, f.DelayMs, dur))
		s.schedule(event{at: s.now + dur, kind: evUnslow, node: n.id, gen: n.gen})
	case FaultIsolate:
		if n.isolated {
			return
		}
		n.isolated = true
		n.faulted++
		n.gen++
		s.stats.Faults++
		s.note(fmt.Sprintf("isolate broker %d", n.id))
		if dur > 0 {
			s.schedule(event{at: s.now + dur, kind: evUnisolate, node: n.id, gen: n.gen})
		}
	}
}

// resolve picks the broker a fault strikes.
func (s *Sim) resolve(f Fault) (broker.NodeID, bool) {
	if f.Role == RoleAny {
		return broker.NodeID(f.Node), true
	}
	tp := kafka.TopicPartition{Topic: s.cfg.Topics[0].Name}
	if f.Partition != nil {
		tp = *f.Partition
	}
	if f.Role == RoleCoordinator {
		tp = GroupPartition(s.cfg.Workload.Group)
	}
	p, ok := s.ctrl.Controller().Partition(tp)
	if !ok {
		return 0, false
	}
	if f.Role == RoleLeader || f.Role == RoleCoordinator {
		return broker.NodeID(p.Leader), p.Leader > 0
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
	return broker.NodeID(followers[s.rng.IntN(len(followers))]), true
}

// kill stops a broker's process; with powerLoss its machine loses what was
// not synced. It comes back after downMs.
func (s *Sim) kill(n *node, powerLoss bool, downMs int64, why string) {
	if n.b == nil {
		return
	}
	if s.proto != nil {
		s.proto.onKill(n)
	}
	if n.paused {
		n.faulted-- // the pause ends with the process
	}
	n.b = nil
	n.paused = false
	n.held = nil
	n.heldOut = nil
	n.faulted++
	s.stats.Faults++
	if powerLoss && strings.HasSuffix(why, "nothing unsynced kept") {
		n.disk.PowerLossWorst()
		s.stats.PowerLosses++
		s.note(fmt.Sprintf("power loss on broker %d (%s)", n.id, why))
	} else if powerLoss {
		n.disk.PowerLoss(s.rng)
		s.stats.PowerLosses++
		s.note(fmt.Sprintf("power loss on broker %d (%s)", n.id, why))
	} else {
		n.disk.Crash()
		s.stats.Crashes++
		s.note(fmt.Sprintf("crash broker %d (%s)", n.id, why))
	}
	s.schedule(event{at: s.now + downMs, kind: evRestart, node: n.id})
}

func (s *Sim) resume(n *node) {
	if !n.paused {
		return
	}
	n.paused = false
	n.faulted--
	s.note(fmt.Sprintf("resume broker %d", n.id))
	for _, env := range n.heldOut {
		s.send(env)
	}
	n.heldOut = nil
	for len(n.held) > 0 {
		if n.b == nil || n.paused {
			return // paused again (a failpoint): the rest waits for that resume
		}
		env := n.held[0]
		n.held = n.held[1:]
		s.afterBroker(n, n.b.Handle(env, s.now))
	}
	n.held = nil
}

func (s *Sim) unslow(n *node) {
	if n.slowMs > 0 {
		n.slowMs = 0
		n.faulted--
		s.note(fmt.Sprintf("broker %d is fast again", n.id))
	}
}

func (s *Sim) healIsolation() {
	for _, n := range s.nodes[1:] {
		if n.isolated {
			n.isolated = false
			n.faulted--
			s.note(fmt.Sprintf("heal isolation of broker %d", n.id))
		}
	}
}

// healAll ends every fault so the run can settle: partitions heal, paused
// brokers resume, crashed brokers restart, failpoints switch off.
func (s *Sim) healAll() {
	s.healIsolation()
	for _, n := range s.nodes[1:] {
		if n.paused {
			s.resume(n)
		}
		s.unslow(n)
	}
	for i, fp := range s.cfg.Failpoints {
		if s.fpActive[i] {
			s.fpActive[i] = false
			_ = failpoint.Disable(broker.FailpointPath(fp.Name))
		}
	}
	s.waiting = nil
	s.note("heal all faults")
	// Crashed brokers restart on their own schedule (RestartAfterMs).
}

// enableFailpoint switches failpoint i on with its term; its percentage,
// if any, is drawn in the hook from the run's seed.
func (s *Sim) enableFailpoint(i int) {
	if s.workloadOver {
		return
	}
	fp := s.cfg.Failpoints[i]
	p, term, _ := splitPercent(fp.Term) // validated
	if err := failpoint.Enable(broker.FailpointPath(fp.Name), term); err != nil {
		s.inv.fail("Config", fmt.Sprintf("failpoint %s term %q: %v", fp.Name, fp.Term, err))
		return
	}
	s.fpActive[i] = true
	s.fpPercent[i] = p
	where := "every broker"
	if fp.Node > 0 {
		where = fmt.Sprintf("broker %d", fp.Node)
	}
	s.note(fmt.Sprintf("enable failpoint %s=%s on %s", fp.Name, fp.Term, where))
}

// failpointHook decides, for broker id, whether a failpoint applies here.
func (s *Sim) failpointHook(id broker.NodeID) failpoint.Hook {
	return func(_ context.Context, path string) bool {
		for i, fp := range s.cfg.Failpoints {
			if !s.fpActive[i] || broker.FailpointPath(fp.Name) != path {
				continue
			}
			if fp.Node != 0 && broker.NodeID(fp.Node) != id {
				return false
			}
			return s.fpPercent[i] >= 1 || s.rng.Float64() < s.fpPercent[i]
		}
		return false
	}
}

// failpointFired carries out a failpoint's action on its target.
func (s *Sim) failpointFired(fe *broker.FailpointError, at broker.NodeID) {
	target := fe.Target
	if target == 0 {
		target = at
	}
	s.stats.FailpointsFired++
	s.note(fmt.Sprintf("failpoint %s fired on broker %d: %s broker %d", fe.Name, at, fe.Action, target))
	if fe.Cause != nil {
		s.note(fmt.Sprintf("  cause: %v", fe.Cause))
	}
	if int(target) >= len(s.nodes) {
		s.note(fmt.Sprintf("  no broker %d: ignored", target))
		return
	}
	n := s.nodes[target]
	down := s.cfg.RestartAfterMs
	for _, fp := range s.cfg.Failpoints {
		if fp.Name == fe.Name && fp.DownMs > 0 {
			down = fp.DownMs
		}
	}
	if fe.ForMs > 0 {
		down = fe.ForMs
	}
	switch fe.Action {
	case broker.ActionCrash:
		s.kill(n, false, down, "failpoint "+fe.Name)
	case broker.ActionPowerLoss:
		s.kill(n, true, down, "failpoint "+fe.Name)
	case broker.ActionPowerLossWorst:
		s.kill(n, true, down, "failpoint "+fe.Name+", nothing unsynced kept")
	case broker.ActionPause:
		if n.b != nil && !n.paused {
			n.paused = true
			n.faulted++
			n.gen++
			s.schedule(event{at: s.now + down, kind: evResume, node: n.id, gen: n.gen})
		}
	}
}

func (s *Sim) nemesisDelay() int64 {
	iv := s.cfg.Nemesis.IntervalMs
	if iv <= 0 {
		iv = 2000
	}
	return iv/2 + s.rng.Int64N(iv+1)
}

// nemesis draws one random fault within the budget of faulted brokers.
func (s *Sim) nemesis() {
	nm := s.cfg.Nemesis
	if s.nemesisConsumers() {
		return
	}
	limit := max(nm.MaxFaulty, 1)
	faulty := 0
	var healthy []*node
	for _, n := range s.nodes[1:] {
		if n.faulted > 0 || n.b == nil {
			faulty++
		} else {
			healthy = append(healthy, n)
		}
	}
	if faulty >= limit || len(healthy) == 0 {
		return
	}
	kind := nm.Kinds[s.rng.IntN(len(nm.Kinds))]
	if kind == FaultPowerLoss && nm.PowerLossOnlyInSync && (faulty > 0 || !s.allInSync()) {
		kind = FaultCrash
	}
	dur := nm.FaultMs
	if dur <= 0 {
		dur = s.cfg.RestartAfterMs
	}
	f := Fault{Kind: kind, ForMs: dur, DelayMs: nm.DelayMs, Role: nm.Role}
	if f.Kind == FaultSlow && f.DelayMs <= 0 {
		f.DelayMs = 500
	}
	if nm.Role == RoleAny {
		f.Node = int(healthy[s.rng.IntN(len(healthy))].id)
	} else {
		tps := s.partitions()
		tp := tps[s.rng.IntN(len(tps))]
		f.Partition = &tp
		id, ok := s.resolve(f)
		if !ok || s.nodes[id].faulted > 0 || s.nodes[id].b == nil {
			return
		}
		f.Role, f.Node = RoleAny, int(id)
	}
	s.inject(f)
}

// allInSync reports whether every partition's ISR holds all its replicas.
func (s *Sim) allInSync() bool {
	for _, p := range s.ctrl.Controller().Metadata() {
		if len(p.ISR) != len(p.Replicas) || p.Leader < 0 {
			return false
		}
		for _, id := range p.Replicas {
			if !slices.Contains(p.ISR, id) {
				return false
			}
		}
	}
	return true
}
