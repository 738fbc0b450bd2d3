package sim

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/pingcap/failpoint"
	"github.com/watermarkhq/watermark/conformance/nemesis"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/storage"
)

// inject applies one fault now, as its definition says (run.Def),
// through the simulator's primitives (striker).
func (s *Sim) inject(f run.Fault) {
	if err := run.Def(f.Kind).Inject(striker{s}, &s.Spec, f); err != nil {
		s.inv.fail("Config", err.Error()) // the simulator has every primitive: a bug
	}
}

// striker is the simulator as a fault sees it (run.Striker): each
// primitive strikes its simulated machines, disks or network now. The
// World provides Broker, Unfold, Notef and the client faults.
type striker struct{ *Sim }

var _ run.Striker = striker{}

// Later implements run.Striker.
func (s striker) Later(afterMs int64, f run.Fault) {
	s.schedule(event{at: s.Now + afterMs, kind: evFault, fault: f})
}

// Crash implements run.Striker.
func (s striker) Crash(id int, downMs int64) error {
	s.kill(s.nodes[id], crashOnly, downMs, "scheduled")
	return nil
}

// PowerLoss implements run.Striker.
func (s striker) PowerLoss(id int, downMs int64) error {
	s.kill(s.nodes[id], lossPower, downMs, "scheduled")
	return nil
}

// PowerLossAll implements run.Striker.
func (s striker) PowerLossAll(downMs int64) error {
	s.fault(run.FaultPowerLossAll, 0, "power loss of the whole cluster for %d ms", downMs)
	s.Reached(run.SitClusterPowerLoss)
	for _, n := range s.nodes[1:] {
		s.kill(n, lossPower, downMs, "the whole cluster")
	}
	return nil
}

// ReplaceDisk implements run.Striker.
func (s striker) ReplaceDisk(id int, downMs int64) error {
	s.kill(s.nodes[id], replaceDisk, downMs, "scheduled")
	return nil
}

// DamageLog implements run.Striker.
func (s striker) DamageLog(id int, f run.Fault, downMs int64) error {
	s.damageLog(s.nodes[id], f, downMs)
	return nil
}

// Stop implements run.Striker.
func (s striker) Stop(id int, downMs int64, powerOff bool) error {
	s.stop(s.nodes[id], downMs, powerOff, nil, "scheduled")
	return nil
}

// Messages implements run.Striker.
func (s striker) Messages(id int, m *run.MessageFault, forMs int64) error {
	s.strikeMessages(s.nodes[id], m, forMs)
	return nil
}

// Pause implements run.Striker.
func (s striker) Pause(id int, forMs int64) error {
	n := s.nodes[id]
	if n.b == nil || n.paused {
		return nil
	}
	n.paused = true
	n.faulted++
	n.gen++
	s.Stats.Faults++
	s.fault(run.FaultPause, n.id, "pause broker %d for %d ms", n.id, forMs)
	s.schedule(event{at: s.Now + forMs, kind: evResume, node: n.id, gen: n.gen})
	return nil
}

// Slow implements run.Striker.
func (s striker) Slow(id int, delayMs, forMs int64) error {
	n := s.nodes[id]
	if n.slowMs > 0 {
		return nil
	}
	n.slowMs = delayMs
	n.faulted++
	n.gen++
	s.Stats.Faults++
	s.fault(run.FaultSlow, n.id, "slow broker %d by %d ms for %d ms", n.id, delayMs, forMs)
	s.schedule(event{at: s.Now + forMs, kind: evUnslow, node: n.id, gen: n.gen})
	return nil
}

// Isolate implements run.Striker.
func (s striker) Isolate(id int, forMs int64) error {
	n := s.nodes[id]
	if n.isolated {
		return nil
	}
	n.isolated = true
	n.faulted++
	n.gen++
	s.Stats.Faults++
	s.fault(run.FaultIsolate, n.id, "isolate broker %d", n.id)
	if forMs > 0 {
		s.schedule(event{at: s.Now + forMs, kind: evUnisolate, node: n.id, gen: n.gen})
	}
	return nil
}

// Heal implements run.Striker.
func (s striker) Heal() error {
	s.Stats.Faults++
	s.healIsolation()
	return nil
}

// Faulted implements nemesis.Cluster.
func (s *Sim) Faulted(id int) bool { return s.nodes[id].faulted > 0 || s.nodes[id].b == nil }

// Partition implements nemesis.Cluster: the controller's state of tp.
func (s *Sim) Partition(tp kafka.TopicPartition) (kafka.PartitionState, bool) {
	return s.controller().Partition(tp)
}

// InSync implements nemesis.Cluster: whether every partition's ISR holds
// all its replicas.
func (s *Sim) InSync() bool {
	for _, p := range s.controller().Metadata() {
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

// nemesis strikes with the nemesis's next fault, if it draws one.
func (s *Sim) nemesis() {
	if f, ok := nemesis.Next(&s.Spec, s, s.Rng); ok {
		s.inject(f)
	}
}

// diskFate is what a broker's death does to its disk.
type diskFate int

const (
	crashOnly      diskFate = iota // the process dies; the page cache survives
	stopped                        // the process ended after a clean stop: nothing is unsynced
	lossPower                      // unsynced writes are lost, the last may tear
	lossPowerWorst                 // every unsynced write is lost
	replaceDisk                    // the machine comes back with an empty disk
)

// kill stops a broker's process; its disk fares as fate says. It comes
// back after downMs.
func (s *Sim) kill(n *node, fate diskFate, downMs int64, why string) {
	if n.b == nil {
		return
	}
	if s.proto != nil {
		s.proto.onKill(n)
		if fate == replaceDisk {
			// The model has no broker that comes back on an empty disk.
			s.proto.leave("steps after a replaced disk (the model has no restart on an empty disk)")
		}
	}
	s.inv.cov.down(s, n)
	if n.paused {
		n.faulted-- // the pause ends with the process
	}
	if n.stopping != nil {
		n.stopping = nil
		n.faulted-- // the stop ends with the process
	}
	n.cleanStop = false
	n.b = nil
	n.paused = false
	n.held = nil
	n.heldOut = nil
	n.faulted++
	if fate != stopped {
		s.Stats.Faults++ // a stop counted itself as it began
	}
	switch fate {
	case crashOnly:
		n.disk.Crash()
		s.Stats.Crashes++
		s.fault(run.FaultCrash, n.id, "crash broker %d (%s)", n.id, why)
	case stopped:
		n.disk.Crash()
		s.Notef(run.NoteBroker, int(n.id), "broker %d is down (%s)", n.id, why)
	case lossPower, lossPowerWorst:
		s.inv.beforePowerLoss(n)
		if fate == lossPowerWorst {
			n.disk.PowerLossWorst()
			why += ", nothing unsynced kept"
		} else {
			n.disk.PowerLoss(s.Rng)
		}
		s.inv.afterLoss(n)
		s.Stats.PowerLosses++
		s.fault(run.FaultPowerLoss, n.id, "power loss on broker %d (%s)", n.id, why)
	case replaceDisk:
		n.disk = storage.NewSimDisk()
		s.Stats.DiskReplacements++
		s.Reached(run.SitEmptyDiskReturn)
		s.fault(run.FaultReplaceDisk, n.id, "broker %d's machine dies; it comes back on an empty disk (%s)", n.id, why)
	}
	s.schedule(event{at: s.Now + downMs, kind: evRestart, node: n.id})
}

// damageLog stops n (a crash, or with f.Clean a clean stop) and, once it
// is down, flips bytes in the synced part of its log of f.Partition (of
// each partition it holds, without one) where f.DamageAt says; it comes
// back after downMs.
func (s *Sim) damageLog(n *node, f run.Fault, downMs int64) {
	if n.b == nil {
		return
	}
	tps := n.b.Partitions()
	if f.Partition != nil {
		tps = []kafka.TopicPartition{*f.Partition}
	}
	if s.proto != nil {
		s.proto.leave("steps after a damaged log (the model's disks keep what they synced)")
	}
	if f.Clean {
		s.stop(n, downMs, false, func() { s.damageFiles(n, f, tps) }, "to damage its log")
		return
	}
	s.kill(n, crashOnly, downMs, "to damage its log")
	s.damageFiles(n, f, tps)
}

// damageFiles flips bytes in the oldest segment of each of tps on n's
// disk, in what it synced.
func (s *Sim) damageFiles(n *node, f run.Fault, tps []kafka.TopicPartition) {
	for _, tp := range tps {
		names, _ := n.disk.List(path.Dir(broker.LogFile(tp)) + "/")
		name := broker.FirstSegment(tp, names)
		stable := n.disk.Stable(name)
		data, _ := n.disk.ReadFile(name)
		at, ok := run.DamagePoint(data[:min(int64(len(data)), stable)], f.DamageAt, s.Rng)
		if !ok {
			continue // nothing synced worth damaging
		}
		last := false
		if p, ok := s.Partition(tp); ok && slices.Equal(p.ISR, []int32{int32(n.id)}) {
			last = true
		}
		torn := ""
		if last && !n.cleanStop && segments(tp, names) == 1 {
			dir := path.Dir(broker.LogFile(tp))
			hw, found, err := storage.ReadHWCheckpoint(n.disk, dir)
			if base, ok := run.TornLike(data, at, hw, found); err == nil && ok && base < s.committedHW(tp) {
				s.LossByFault = append(s.LossByFault, fmt.Sprintf(
					"damage-log on broker %d, %s's only ISR member, struck its last batch (offset %d on, committed up to %d), at or above its checkpointed HW %d, after a crash: no recovery can tell that from a torn write, and the committed records there may be lost, as on Kafka 4.1",
					n.id, tp, base, s.committedHW(tp), hw))
				torn = fmt.Sprintf("; committed records in its last batch, at or above its checkpointed HW %d: like a torn write to recovery, so loss is allowed", hw)
			}
		}
		flipped := n.disk.Damage(name, at, f.DamagedBytes())
		s.Stats.DamagedLogs++
		s.Reached(run.SitDamagedLog)
		if last {
			s.Reached(run.SitDamagedLastISR)
		}
		if n.cleanStop {
			s.Reached(run.SitCleanStopThenDamage)
		}
		s.fault(run.FaultDamageLog, n.id, "damage broker %d's log of %s: %d bytes flipped at byte %d of %d synced (%s)%s",
			n.id, tp, flipped, at, stable, f.DamageAt.String(), map[bool]string{true: " (its only ISR member" + torn + ")"}[last])
	}
}

// committedHW is the highest HW a leader of tp reached in the run (the
// invariants' record; 0 without them): every offset below it was
// committed.
func (s *Sim) committedHW(tp kafka.TopicPartition) int64 {
	if s.inv == nil || s.inv.committed[tp] == nil {
		return 0
	}
	return s.inv.committed[tp].hw
}

// segments counts tp's segment files among names.
func segments(tp kafka.TopicPartition, names []string) int {
	dir, k := path.Dir(broker.LogFile(tp)), 0
	for _, n := range names {
		if path.Dir(n) == dir && storage.IsSegmentFile(n) {
			k++
		}
	}
	return k
}

func (s *Sim) resume(n *node) {
	if !n.paused {
		return
	}
	n.paused = false
	n.faulted--
	s.Notef(run.NoteHeal, int(n.id), "resume broker %d", n.id)
	for _, env := range n.heldOut {
		s.Send(env)
	}
	n.heldOut = nil
	for len(n.held) > 0 {
		if n.b == nil || n.paused {
			return // paused again (a failpoint): the rest waits for that resume
		}
		env := n.held[0]
		n.held = n.held[1:]
		s.afterBroker(n, n.b.Handle(env, s.Now))
		// Each held message is a step of its own for the invariants: the
		// broker acts on what it knew when it handled that one.
		s.inv.check()
	}
	n.held = nil
}

func (s *Sim) unslow(n *node) {
	if n.slowMs > 0 {
		n.slowMs = 0
		n.faulted--
		s.Notef(run.NoteHeal, int(n.id), "broker %d is fast again", n.id)
	}
}

func (s *Sim) unisolate(n *node) {
	n.isolated = false
	n.faulted--
	s.Notef(run.NoteHeal, int(n.id), "heal isolation of broker %d", n.id)
}

func (s *Sim) healIsolation() {
	for _, n := range s.nodes[1:] {
		if n.isolated {
			s.unisolate(n)
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
		n.faulted -= len(n.msgFaults)
		n.msgFaults = nil
	}
	s.disableFailpoints()
	s.waiting = nil
	s.Notef(run.NoteHeal, 0, "heal all faults")
	// Crashed brokers restart on their own schedule (RestartAfterMs).
}

// disableFailpoints switches off the failpoints this run switched on.
func (s *Sim) disableFailpoints() {
	for i, fp := range s.Spec.Failpoints {
		if s.fpActive[i] {
			s.fpActive[i] = false
			_ = failpoint.Disable(broker.FailpointPath(fp.Name))
		}
	}
}

// enableFailpoint switches failpoint i on with its term; its percentage,
// if any, is drawn in the hook from the run's seed.
func (s *Sim) enableFailpoint(i int) {
	if s.Over {
		return
	}
	fp := s.Spec.Failpoints[i]
	p, term, _ := run.SplitPercent(fp.Term) // validated
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
	s.Notef(run.NoteFailpoint, fp.Node, "enable failpoint %s=%s on %s", fp.Name, fp.Term, where)
}

// failpointHook decides, for broker id, whether a failpoint applies here.
func (s *Sim) failpointHook(id broker.NodeID) failpoint.Hook {
	return func(_ context.Context, path string) bool {
		for i, fp := range s.Spec.Failpoints {
			if !s.fpActive[i] || broker.FailpointPath(fp.Name) != path {
				continue
			}
			if fp.Node != 0 && broker.NodeID(fp.Node) != id {
				return false
			}
			return s.fpPercent[i] >= 1 || s.Rng.Float64() < s.fpPercent[i]
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
	s.Stats.FailpointsFired++
	s.Notef(run.NoteFailpoint, int(target), "failpoint %s fired on broker %d: %s broker %d", fe.Name, at, fe.Action, target)
	if fe.Cause != nil {
		s.Notef(run.NoteFailpoint, int(target), "  cause: %v", fe.Cause)
	}
	if int(target) >= len(s.nodes) {
		s.Notef(run.NoteFailpoint, int(target), "  no broker %d: ignored", target)
		return
	}
	n := s.nodes[target]
	down := s.Spec.RestartAfterMs
	for _, fp := range s.Spec.Failpoints {
		if fp.Name == fe.Name && fp.DownMs > 0 {
			down = fp.DownMs
		}
	}
	if fe.ForMs > 0 {
		down = fe.ForMs
	}
	switch fe.Action {
	case broker.ActionCrash:
		s.kill(n, crashOnly, down, "failpoint "+fe.Name)
	case broker.ActionPowerLoss:
		s.kill(n, lossPower, down, "failpoint "+fe.Name)
	case broker.ActionPowerLossWorst:
		s.kill(n, lossPowerWorst, down, "failpoint "+fe.Name)
	case broker.ActionPause:
		if n.b != nil && !n.paused {
			n.paused = true
			n.faulted++
			n.gen++
			s.schedule(event{at: s.Now + down, kind: evResume, node: n.id, gen: n.gen})
		}
	}
}

// note records a note of kind about broker node (0 if none).
// fault records a fault of kind striking broker id.
func (s *Sim) fault(kind run.FaultKind, id broker.NodeID, format string, args ...any) {
	s.Note(run.Note{Kind: run.NoteFault, Fault: kind, Node: int(id), Text: fmt.Sprintf(format, args...)})
}
