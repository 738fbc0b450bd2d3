package sim

import (
	"errors"
	"slices"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// stopPlan is a clean stop under way on a node: its broker's controlled
// shutdown runs, and once the controller lets it go (or the bound runs
// out) the broker flushes and writes its marker (broker.Shutdown), and
// the process ends.
type stopPlan struct {
	began    int64
	downMs   int64
	powerOff bool   // the machine loses power once the broker is down
	then     func() // what strikes the disk once the broker is down
	why      string
}

// stop asks n's broker to stop as SIGTERM does. The node counts as
// faulted from now on; it comes back downMs after its process ended.
func (s *Sim) stop(n *node, downMs int64, powerOff bool, then func(), why string) {
	if n.b == nil || n.stopping != nil {
		return
	}
	n.stopping = &stopPlan{began: s.Now, downMs: downMs, powerOff: powerOff, then: then, why: why}
	n.faulted++
	s.Stats.Faults++
	s.Stats.Stops++
	s.fault(run.FaultStop, n.id, "stop broker %d as SIGTERM does: a controlled shutdown, then every log flushed (%s)", n.id, why)
	n.b.BeginShutdown(s.Now)
	s.afterBroker(n, nil)
}

// maybeStopped ends n's clean stop once its broker may stop: the broker
// flushes and marks its disk, and its process ends as a crash's would,
// with nothing left unsynced to lose. A failpoint in that path (a power
// loss before the marker, say) strikes as it would anywhere.
func (s *Sim) maybeStopped(n *node) {
	plan := n.stopping
	if plan == nil || n.b == nil || !(n.b.ShutdownApproved() || n.b.ShutdownOverdue()) {
		return
	}
	approved := n.b.ShutdownApproved()
	n.stopping = nil
	n.faulted-- // kill counts it again
	err := n.b.Shutdown()
	s.collectEvents(n)
	if err != nil {
		var fe *broker.FailpointError
		if !errors.As(err, &fe) {
			fe = &broker.FailpointError{Name: "error", Action: broker.ActionCrash, Cause: err}
		}
		s.failpointFired(fe, n.id)
		return
	}
	s.Stats.CleanStops++
	if approved {
		s.Notef(run.NoteBroker, int(n.id), "broker %d stopped cleanly %d ms after it was asked", n.id, s.Now-plan.began)
	} else {
		s.Notef(run.NoteBroker, int(n.id), "broker %d's controlled shutdown timed out after %d ms: it stopped without it, cleanly", n.id, s.Now-plan.began)
	}
	s.kill(n, stopped, plan.downMs, "stopped: "+plan.why)
	n.cleanStop = true
	if plan.powerOff {
		s.inv.beforePowerLoss(n)
		n.disk.PowerLoss(s.Rng)
		s.inv.afterLoss(n)
		s.Stats.PowerLosses++
		s.fault(run.FaultPowerLoss, n.id, "broker %d's machine loses power while it is down", n.id)
	}
	if plan.then != nil {
		plan.then()
	}
}

// eligibleOf lists the partitions broker id is an eligible leader
// replica of, for a registration's before and after.
func (s *Sim) eligibleOf(id int32) []kafka.TopicPartition {
	c := s.controller()
	var tps []kafka.TopicPartition
	for _, p := range c.Metadata() {
		if slices.Contains(c.ELR(p.TopicPartition), id) {
			tps = append(tps, p.TopicPartition)
		}
	}
	return tps
}

// registered records what a broker's registration after a clean stop
// reached: it was an eligible leader replica and stayed one, or led from
// it (SitELRCleanRestart).
func (s *Sim) registered(id int32, before []kafka.TopicPartition) {
	c := s.controller()
	for _, tp := range before {
		p, _ := c.Partition(tp)
		if p.Leader == id || slices.Contains(c.ELR(tp), id) {
			s.Reached(run.SitELRCleanRestart)
			return
		}
	}
}
