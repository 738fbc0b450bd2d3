package sim

import (
	"fmt"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/quorum"
	"github.com/watermarkhq/watermark/impl/storage"
)

// voter is one controller machine of the quorum: its disk outlives its
// processes, as a broker machine's does.
type voter struct {
	num  int
	id   broker.NodeID
	disk *storage.SimDisk
	q    *quorum.Node // nil while down
}

// openVoters starts every voter of the quorum on a fresh disk.
func (s *Sim) openVoters() error {
	s.voters = make([]*voter, s.Spec.Quorum.Voters)
	for i := range s.voters {
		v := &voter{num: i + 1, id: broker.VoterNode(i + 1), disk: storage.NewSimDisk()}
		s.voters[i] = v
		if err := s.startVoter(v); err != nil {
			return err
		}
		s.schedule(event{at: s.Rng.Int64N(s.Spec.TickMs), kind: evTick, node: v.id})
	}
	return nil
}

// startVoter boots a voter's process on its disk.
func (s *Sim) startVoter(v *voter) error {
	q, err := quorum.Open(quorum.Config{Voter: v.num, Quorum: s.Spec.Quorum, Controller: s.Spec.ControllerConfig(),
		Seed: s.Spec.Seed ^ uint64(v.num)<<32}, v.disk, s.Now)
	if err != nil {
		return fmt.Errorf("controller %d: %w", v.num, err)
	}
	v.q = q
	return nil
}

// voterOf returns the voter a node id names, nil for any other node.
func (s *Sim) voterOf(id broker.NodeID) *voter {
	if n := id.Voter(); n >= 1 && n <= len(s.voters) {
		return s.voters[n-1]
	}
	return nil
}

// bootstrap settles the quorum and the brokers' registrations before the
// run starts: voter 1 campaigns, and every message between voters, and
// from brokers to voters, is delivered at once, in order, until none is
// left; then the run's topics are created the same way. What voters send
// brokers then goes on the network, as the run's first messages. Every
// run so starts from the same settled cluster.
func (s *Sim) bootstrap() error {
	if err := s.voters[0].q.Campaign(); err != nil {
		return err
	}
	var pending, toBrokers []broker.Envelope
	brokersToo := false // the quorum settles first: then brokers register
	collect := func() {
		for _, v := range s.voters {
			pending = append(pending, v.q.TakeOutbox()...)
			s.noteVoter(v)
		}
		if brokersToo {
			for _, n := range s.nodes[1:] {
				pending = append(pending, n.b.TakeOutbox()...)
			}
		}
	}
	settle := func() error {
		collect()
		for steps := 0; len(pending) > 0; steps++ {
			if steps > 1_000_000 {
				return fmt.Errorf("bootstrap: the cluster does not settle")
			}
			env := pending[0]
			pending = pending[1:]
			switch {
			case s.voterOf(env.To) != nil:
				if err := s.voterOf(env.To).q.Handle(env, 0); err != nil {
					return err
				}
			default:
				toBrokers = append(toBrokers, env)
			}
			collect()
		}
		return nil
	}
	if err := settle(); err != nil {
		return err
	}
	if s.activeVoter() == nil {
		return fmt.Errorf("bootstrap: no controller became active")
	}
	brokersToo = true
	if err := settle(); err != nil {
		return err
	}
	for _, t := range s.Spec.Topics {
		if err := s.activeVoter().q.Handle(broker.Envelope{From: adminID, To: s.activeVoter().id,
			Msg: broker.CreateTopic{Name: t.Name, Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor}}, 0); err != nil {
			return err
		}
	}
	if err := settle(); err != nil {
		return err
	}
	for _, env := range toBrokers {
		s.Send(env)
	}
	return nil
}

// activeVoter returns the active controller's voter, the one in the
// highest term if a deposed one has not noticed yet; nil if none.
func (s *Sim) activeVoter() *voter {
	var best *voter
	for _, v := range s.voters {
		if v.q != nil && v.q.Active() && (best == nil || v.q.Term() > best.q.Term()) {
			best = v
		}
	}
	return best
}

// controller is the cluster's controller state for checks and for
// faults that pick a partition's leader: the active controller's, or,
// while none is active, the committed metadata of the voter that applied
// the most, as the next active controller will restore it.
func (s *Sim) controller() *controller.Controller {
	if v := s.activeVoter(); v != nil {
		return v.q.Controller()
	}
	var best *voter
	for _, v := range s.voters {
		if v.q != nil && (best == nil || v.q.Applied() > best.q.Applied()) {
			best = v
		}
	}
	if best == nil {
		return s.lastController
	}
	if s.restored == nil || s.restoredAt != [2]uint64{uint64(best.num), best.q.Applied()} {
		c, err := controller.Restore(s.Spec.ControllerConfig(), best.q.Image().Snapshot(), s.Now)
		if err != nil {
			if s.inv != nil {
				s.inv.fail("Controller", fmt.Sprintf("controller %d's metadata cannot be restored: %v", best.num, err))
			}
			return s.lastController
		}
		s.restored, s.restoredAt = c, [2]uint64{uint64(best.num), best.q.Applied()}
	}
	return s.restored
}

// handleVoter delivers env to a voter.
func (s *Sim) handleVoter(v *voter, env broker.Envelope) {
	if v.q == nil {
		s.Stats.Dropped++
		return
	}
	s.afterVoter(v, v.q.Handle(env, s.Now))
}

func (s *Sim) tickVoter(v *voter) {
	if v.q == nil {
		return
	}
	s.afterVoter(v, v.q.Tick(s.Now))
}

// afterVoter sends what a voter queued and reports what it did.
func (s *Sim) afterVoter(v *voter, err error) {
	s.noteVoter(v)
	if err != nil {
		s.inv.fail("Controller", fmt.Sprintf("controller %d halted: %v", v.num, err))
		return
	}
	for _, env := range v.q.TakeOutbox() {
		s.Send(env)
	}
	if c := s.controller(); c != nil {
		s.lastController = c
	}
	s.checkProtoScope()
}

// noteVoter turns a voter's events into the run's notes and stats: the
// decisions it made as the active controller, once committed.
func (s *Sim) noteVoter(v *voter) {
	for _, e := range v.q.TakeEvents() {
		switch e.Kind {
		case "decided":
			s.decided(e.Decision)
		case "active":
			s.trace.note(s.Now, fmt.Sprintf("controller %d: active in term %d at index %d", e.Voter, e.Term, e.Index))
		case "inactive":
			s.trace.note(s.Now, fmt.Sprintf("controller %d: no longer active in term %d: %s", e.Voter, e.Term, e.Why))
		}
	}
}
