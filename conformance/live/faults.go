package live

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// inject applies one fault to the real cluster now, as its definition
// says (run.Def), through the live runner's primitives; a primitive that
// fails, or that the runner cannot do (refused before the run, by
// Capabilities and Unsupported), is noted.
func (l *live) inject(f run.Fault) {
	if err := run.Def(f.Kind).Inject(l, &l.Spec, f); err != nil {
		node := 0
		if se, ok := errors.AsType[*run.StrikeError](err); ok {
			node = se.Node
		}
		l.Notef(run.NoteHarness, node, "%v", err)
	}
}

// The live runner's primitives (run.Striker) strike the real cluster
// through its Cluster; each fault's end is scheduled on the runner's
// loop. The World provides Broker, Unfold, Notef and the client faults.
var _ run.Striker = (*live)(nil)

// Later implements run.Striker.
func (l *live) Later(afterMs int64, f run.Fault) {
	l.at(l.Now+afterMs, func() { l.inject(f) })
}

// Crash implements run.Striker: the Cluster's Kill.
func (l *live) Crash(id int, downMs int64) error {
	cl := l.opts.Cluster
	if done, err := l.takeDown(id, downMs, func() error { return cl.Kill(id) }); !done {
		return err
	}
	l.Stats.Crashes++
	l.fault(run.FaultCrash, id, "crash broker %d (%s)", id, cl.How(run.FaultCrash, id))
	return nil
}

// ReplaceDisk implements run.Striker: a DiskReplacer's ReplaceDisk.
func (l *live) ReplaceDisk(id int, downMs int64) error {
	r, ok := l.opts.Cluster.(DiskReplacer)
	if !ok {
		return l.cannot("replace a broker's disk: its Cluster is no DiskReplacer")
	}
	if done, err := l.takeDown(id, downMs, func() error { return r.ReplaceDisk(id) }); !done {
		return err
	}
	l.Stats.DiskReplacements++
	l.Reached(run.SitEmptyDiskReturn)
	l.fault(run.FaultReplaceDisk, id, "broker %d's machine dies; it comes back on an empty disk", id)
	return nil
}

// Stop implements run.Striker: a Stopper's Stop, off the loop.
func (l *live) Stop(id int, downMs int64, powerOff bool) error {
	st, ok := l.opts.Cluster.(Stopper)
	if !ok {
		return l.cannot("stop a broker cleanly: its Cluster is no Stopper")
	}
	if l.down[id] || l.stopping[id] {
		return nil
	}
	l.beginStop(id, powerOff)
	l.async(func() func() {
		err := st.Stop(id)
		return func() { l.stopped(id, downMs, err, nil) }
	})
	return nil
}

// Pause implements run.Striker: the Cluster's Pause.
func (l *live) Pause(id int, forMs int64) error {
	if l.down[id] || l.paused[id] {
		return nil
	}
	if err := l.opts.Cluster.Pause(id); err != nil {
		return err
	}
	l.paused[id] = true
	l.faulted[id]++
	l.Stats.Faults++
	l.fault(run.FaultPause, id, "pause broker %d for %d ms (%s)", id, forMs, l.opts.Cluster.How(run.FaultPause, id))
	l.at(l.Now+forMs, func() { l.resume(id) })
	return nil
}

// Isolate implements run.Striker: the Cluster's Isolate; the end heals
// every cut.
func (l *live) Isolate(id int, forMs int64) error {
	if err := l.opts.Cluster.Isolate(id); err != nil {
		return err
	}
	l.faulted[id]++
	l.Stats.Faults++
	l.fault(run.FaultIsolate, id, "isolate broker %d", id)
	if forMs > 0 {
		l.at(l.Now+forMs, l.heal)
	}
	return nil
}

// Slow implements run.Striker: the Cluster's SetLatency.
func (l *live) Slow(id int, delayMs, forMs int64) error {
	cl := l.opts.Cluster
	if err := cl.SetLatency(id, time.Duration(delayMs)*time.Millisecond); err != nil {
		return err
	}
	l.faulted[id]++
	l.Stats.Faults++
	l.fault(run.FaultSlow, id, "slow broker %d by %d ms for %d ms", id, delayMs, forMs)
	l.at(l.Now+forMs, func() {
		if cl.SetLatency(id, 0) == nil {
			l.faulted[id]--
			l.Notef(run.NoteHeal, id, "broker %d is fast again", id)
		}
	})
	return nil
}

// Heal implements run.Striker.
func (l *live) Heal() error {
	l.Stats.Faults++
	l.heal()
	return nil
}

// PowerLoss implements run.Striker: real processes cannot.
func (l *live) PowerLoss(int, int64) error {
	return l.cannot("cut a machine's power")
}

// PowerLossAll implements run.Striker: real processes cannot.
func (l *live) PowerLossAll(int64) error {
	return l.cannot("cut the machines' power")
}

// Messages implements run.Striker: real processes cannot.
func (l *live) Messages(int, *run.MessageFault, int64) error {
	return l.cannot("strike single messages: a TCP proxy cannot without breaking the connection")
}

// cannot is the error of a primitive the live runner cannot carry out.
func (l *live) cannot(what string) error {
	return fmt.Errorf("the live runner cannot %s (%T)", what, l.opts.Cluster)
}

// beginStop counts a clean stop of broker id as it begins: the broker is
// faulted from now on, and down once Stop returns (stopped).
func (l *live) beginStop(id int, powerOff bool) {
	if l.paused[id] {
		_ = l.opts.Cluster.Resume(id)
		l.paused[id] = false
		l.faulted[id]--
	}
	l.stopping[id] = true
	l.faulted[id]++
	l.Stats.Faults++
	l.Stats.Stops++
	l.fault(run.FaultStop, id, "stop broker %d (%s): a controlled shutdown, then every log flushed", id, l.opts.Cluster.How(run.FaultStop, id))
	if powerOff {
		// Unsupported refuses such runs; a nemesis draw can still ask.
		l.Notef(run.NoteHarness, id, "power_off: real processes cannot cut their machine's power; the broker is only stopped")
	}
}

// stopped records the end of broker id's clean stop (err: it had to be
// killed, or the stop failed) and schedules its restart after dur; then
// runs after, if any, on the stopped broker's disk.
func (l *live) stopped(id int, dur int64, err error, after func()) {
	l.stopping[id] = false
	if err != nil {
		l.Notef(run.NoteHarness, id, "stop broker %d: %v", id, err)
	} else {
		l.Stats.CleanStops++
		l.Notef(run.NoteBroker, id, "broker %d stopped cleanly", id)
	}
	l.down[id] = true
	if after != nil {
		after()
	}
	l.at(l.Now+dur, func() { l.restart(id) })
}

// DamageLog implements run.Striker: a DiskReplacer's DamageLog stops
// broker id (a kill, or with f.Clean a clean stop) and damages its logs
// of the run's partitions it holds (f.Partition's only, when set) where
// f.DamageAt says, in the oldest segment.
func (l *live) DamageLog(id int, f run.Fault, dur int64) error {
	r, ok := l.opts.Cluster.(DiskReplacer)
	if !ok {
		return l.cannot("damage a broker's log: its Cluster is no DiskReplacer")
	}
	if l.stopping[id] {
		return nil
	}
	var tps []kafka.TopicPartition
	last := false
	for _, tp := range l.Spec.Partitions() {
		p, ok := l.Partition(tp)
		if (f.Partition == nil || *f.Partition == tp) && ok && slices.Contains(p.Replicas, int32(id)) {
			tps = append(tps, tp)
			last = last || slices.Equal(p.ISR, []int32{int32(id)})
		}
	}
	rng := rand.New(rand.NewPCG(l.Rng.Uint64(), 0))
	pick := func(data []byte) (int64, bool) { return run.DamagePoint(data, f.DamageAt, rng) }
	record := func(what []string, clean bool) {
		for _, w := range what {
			l.Stats.DamagedLogs++
			l.Reached(run.SitDamagedLog)
			if last {
				l.Reached(run.SitDamagedLastISR)
			}
			if clean {
				l.Reached(run.SitCleanStopThenDamage)
			}
			l.fault(run.FaultDamageLog, id, "damage broker %d's log (%s): %s%s", id, f.DamageAt, w, map[bool]string{true: " (the only ISR member)"}[last])
		}
	}
	if f.Clean {
		if l.down[id] {
			return nil
		}
		l.beginStop(id, false)
		l.async(func() func() {
			what, err := r.DamageLog(id, tps, f.DamagedBytes(), pick, true)
			return func() { l.stopped(id, dur, err, func() { record(what, err == nil) }) }
		})
		return nil
	}
	var what []string
	if done, err := l.takeDown(id, dur, func() (err error) { what, err = r.DamageLog(id, tps, f.DamagedBytes(), pick, false); return err }); !done {
		return err
	}
	l.Stats.Crashes++
	l.fault(run.FaultCrash, id, "crash broker %d to damage its log (%s)", id, l.opts.Cluster.How(run.FaultCrash, id))
	record(what, false)
	return nil
}

// takeDown stops broker id's process with stop (a kill, a disk replaced
// or damaged) unless it is down already, ends a pause it was in, counts
// the fault and schedules the restart after dur; false if it did not,
// with stop's error if it failed.
func (l *live) takeDown(id int, dur int64, stop func() error) (bool, error) {
	if l.down[id] || l.stopping[id] {
		return false, nil
	}
	if l.paused[id] {
		l.paused[id] = false
		l.faulted[id]--
	}
	if err := stop(); err != nil {
		return false, err
	}
	l.down[id] = true
	l.faulted[id]++
	l.Stats.Faults++
	l.at(l.Now+dur, func() { l.restart(id) })
	return true, nil
}

func (l *live) restart(id int) {
	if !l.down[id] {
		return
	}
	if err := l.opts.Cluster.Restart(id); err != nil {
		l.Notef(run.NoteHarness, id, "restart broker %d failed: %v", id, err)
		l.at(l.Now+l.Spec.RestartAfterMs, func() { l.restart(id) })
		return
	}
	l.down[id] = false
	l.faulted[id]--
	l.Notef(run.NoteHeal, id, "restart broker %d", id)
}

func (l *live) resume(id int) {
	if !l.paused[id] {
		return
	}
	if err := l.opts.Cluster.Resume(id); err != nil {
		l.Notef(run.NoteHarness, id, "resume broker %d failed: %v", id, err)
		return
	}
	l.paused[id] = false
	l.faulted[id]--
	l.Notef(run.NoteHeal, id, "resume broker %d", id)
}

// heal ends every network fault (isolation and slowness).
func (l *live) heal() {
	if err := l.opts.Cluster.Heal(); err != nil {
		l.Notef(run.NoteHarness, 0, "heal failed: %v", err)
		return
	}
	for id := 1; id <= l.Spec.Brokers; id++ {
		if !l.down[id] && !l.paused[id] {
			l.faulted[id] = 0
		}
	}
	l.Notef(run.NoteHeal, 0, "heal network faults")
}

// healAll ends every fault so the run can settle; crashed brokers restart
// on their own schedule.
func (l *live) healAll() {
	l.heal()
	for id := 1; id <= l.Spec.Brokers; id++ {
		l.resume(id)
	}
	l.Notef(run.NoteHeal, 0, "heal all faults")
}

// Faulted implements nemesis.Cluster.
func (l *live) Faulted(id int) bool { return l.faulted[id] > 0 || l.down[id] }

// InSync implements nemesis.Cluster. A live run has no power losses to
// hold back (Unsupported refuses them), so it never asks in earnest.
func (l *live) InSync() bool { return false }

// Partition implements nemesis.Cluster: tp as metadata shows it now.
func (l *live) Partition(tp kafka.TopicPartition) (kafka.PartitionState, bool) {
	l.refreshLeaders(l.ctx)
	p, ok := l.leaders[tp]
	return p, ok
}

// Coordinator implements nemesis.Coordinators: the broker that a live
// broker names as the group's coordinator, asked now. The partition of
// the offsets topic a group maps to is the cluster's business (Kafka's
// has 50 by default; the harness cannot know), so the runner asks, as a
// consumer does.
func (l *live) Coordinator() (int, bool) {
	for id := 1; id <= l.Spec.Brokers; id++ {
		if l.down[id] || l.paused[id] {
			continue
		}
		ctx, cancel := context.WithTimeout(l.ctx, 2*time.Second)
		resp, err := l.opts.Net.Exchange(ctx, clientmsg.NodeID(id), clientmsg.FindCoordinatorRequest{Group: l.Spec.Workload.Group})
		cancel()
		if r, ok := resp.(clientmsg.FindCoordinatorResponse); ok && err == nil && r.Err == nil && r.Coordinator > 0 {
			return int(r.Coordinator), true
		}
	}
	l.Notef(run.NoteHarness, 0, "no broker named group %s's coordinator (FindCoordinator): no coordinator fault this round", l.Spec.Workload.Group)
	return 0, false
}

// fault records a fault of kind striking broker id.
func (l *live) fault(kind run.FaultKind, id int, format string, args ...any) {
	l.Note(run.Note{Kind: run.NoteFault, Fault: kind, Node: id, Text: fmt.Sprintf(format, args...)})
}
