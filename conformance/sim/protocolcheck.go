package sim

import (
	"errors"
	"slices"
	"sync"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// check names the model action step e is for tp and has the model judge it.
func (t *protoTracker) check(e event, tp kafka.TopicPartition, before, after *protocol.State, sent []protocol.Msg) error {
	tr := protocol.Transition{Before: before, After: after, Sent: sent}
	p, _ := t.state(tp)
	switch {
	case e.kind == evFault:
		return t.checkCrashes(tp, tr)
	case e.kind == evTick:
		return t.checkController(tr, nil)
	case e.env.To.Voter() != 0:
		var proposer *protocol.Replica
		if m, ok := e.env.Msg.(kafka.AlterPartition); ok && m.TopicPartition == tp {
			if r, ok := t.proposals[proposalKey{tp, m.ProposalID}]; ok {
				proposer = &r
			}
		}
		return t.checkController(tr, proposer)
	}
	i := t.id(p, int32(e.env.To))
	if i < 0 {
		return nil
	}
	_, err := deliveries().Handle(&delivery{t: t, e: e, tp: tp, p: p, i: i, tr: &tr, sent: sent}, e.env.Msg)
	return err
}

// delivery is one message delivered to replica i of partition p, as the
// step tr of the model.
type delivery struct {
	t    *protoTracker
	e    event
	tp   kafka.TopicPartition
	p    kafka.PartitionState
	i    int32
	tr   *protocol.Transition
	sent []protocol.Msg
}

// deliveries names the model action each kind of delivered message is
// and has the model judge it: a replication message is delivered (or
// lost, when ignored), a controller state is learned, a produce appends.
var deliveries = sync.OnceValue(func() *kafka.Handlers[*delivery] {
	h := &kafka.Handlers[*delivery]{}
	kafka.On(h, func(d *delivery, _ partition.FetchRequest) error { return d.replication() })
	kafka.On(h, func(d *delivery, _ partition.FetchResponse) error { return d.replication() })
	kafka.On(h, func(d *delivery, _ partition.EpochEndRequest) error { return d.replication() })
	kafka.On(h, func(d *delivery, _ partition.EpochEndResponse) error { return d.replication() })
	kafka.On(h, func(d *delivery, m broker.StateUpdate) error {
		for _, st := range m.States {
			if st.TopicPartition == d.tp && m.Incarnation == d.t.s.nodes[d.e.env.To].b.Incarnation() {
				return d.t.checkLearn(*d.tr, d.p, d.i, st)
			}
		}
		return nil
	})
	kafka.On(h, func(d *delivery, m kafka.AlterPartitionAnswer) error {
		return d.t.checkLearn(*d.tr, d.p, d.i, m.State)
	})
	kafka.On(h, func(d *delivery, m broker.ProduceRequest) error {
		tr, i := d.tr, d.i
		b, a := &tr.Before.Replicas[i], &tr.After.Replicas[i]
		if a.LEO() == b.LEO() {
			return nil // refused, or a duplicate of a batch in the log
		}
		if m.Acks != partition.AcksAll {
			d.t.skip("produces with acks 0 or 1 (the model has acks=all)")
			return nil
		}
		tr.Before.Ghost.Next = a.Log[len(a.Log)-1].Value
		tr.Action = protocol.Action{Kind: protocol.Produce, R: i}
		return d.t.run(*tr, "produce")
	})
	return h
})

// replication checks the delivery of a replication message the model
// has a counterpart of.
func (d *delivery) replication() error {
	t, tr, i := d.t, d.tr, d.i
	before, after := tr.Before, tr.After
	k, ok := t.keyOf(d.e.env)
	msg, known := t.inflight[k]
	delete(t.inflight, k)
	switch {
	case !ok || !known:
		t.skip("answers with errors")
		return nil
	case !before.Replicas[i].Up:
		t.skip("messages to a process not yet registered")
		return nil
	}
	tr.Before.Net = []protocol.Msg{msg}
	tr.Action = protocol.Action{Kind: protocol.Deliver, Msg: msg, K: -1}
	if len(d.sent) == 0 && sameReplica(&before.Replicas[i], &after.Replicas[i]) {
		// The receiver ignored it: an answer to a request it has since
		// sent again, or a request it no longer serves. That is the
		// message lost, which the model always allows.
		tr.Action.Kind = protocol.Lose
		return t.run(*tr, "ignored "+msg.Kind.String())
	}
	if msg.Diverging {
		return t.run(*tr, "deliver diverging fetch-answer")
	}
	return t.run(*tr, "deliver "+msg.Kind.String())
}

// sameReplica reports whether a replica's state, as the model sees it, is
// unchanged.
func sameReplica(a, b *protocol.Replica) bool {
	return a.Up == b.Up && a.Inc == b.Inc && slices.Equal(a.Log, b.Log) && slices.Equal(a.Epochs, b.Epochs) &&
		a.HW == b.HW && a.Epoch == b.Epoch && a.Leader == b.Leader && a.Await == b.Await && a.Query == b.Query &&
		a.ISR == b.ISR && a.Known == b.Known
}

func (t *protoTracker) run(tr protocol.Transition, what string) error {
	if err := t.model.CheckTransition(tr); err != nil {
		return err
	}
	t.report.Checked[what]++
	return nil
}

// checkLearn checks a controller state reaching replica i: it becomes leader
// or follower in a newer epoch (Learn), or a leader takes the ISR (LearnISR).
// The model's replica learns the controller's state; a real one learns the
// state the message carries, which may be older than the controller's by
// now, so the check runs against the carried state.
func (t *protoTracker) checkLearn(tr protocol.Transition, p kafka.PartitionState, i int32, st kafka.PartitionState) error {
	b, a := &tr.Before.Replicas[i], &tr.After.Replicas[i]
	if n := t.s.nodes[p.Replicas[i]]; a.Up && st.Leader < 0 && n.b != nil {
		// An epoch with no leader: the replica keeps no role, and only
		// this step tells that it learned the epoch.
		if r, ok := n.b.Replica(p.TopicPartition); ok && r.Role() == partition.RoleNone && r.LeaderEpoch() == st.LeaderEpoch {
			t.offline[downKey{p.Replicas[i], p.TopicPartition}] = st.LeaderEpoch
			a.Epoch = epoch(st.LeaderEpoch)
		}
	}
	var kind protocol.ActionKind
	switch {
	case !b.Up:
		return nil
	case a.Epoch != b.Epoch || a.Leader != b.Leader:
		kind = protocol.Learn
	case b.Leader == i && a.ISR != b.ISR:
		kind = protocol.LearnISR
	default:
		return nil // stale, or nothing the model tracks changed
	}
	carried := tr.Before.Ctrl
	carried.Leader, carried.Epoch, carried.ISR = t.id(p, st.Leader), epoch(st.LeaderEpoch), t.set(p, st.ISR)
	carried.Alive |= 1 << uint(i)
	carried.Inc[i] = b.Inc
	tr.Before.Ctrl, tr.After.Ctrl = carried, carried
	tr.Action = protocol.Action{Kind: kind, R: i}
	return t.run(tr, kind.String())
}

// checkCrashes checks the processes killed in this step.
func (t *protoTracker) checkCrashes(tp kafka.TopicPartition, tr protocol.Transition) error {
	p, _ := t.state(tp)
	cur := tr.Before
	for _, b := range t.killed {
		i := t.id(p, b)
		if i < 0 || !cur.Replicas[i].Up {
			continue
		}
		next, err := t.model.Step(cur, protocol.Action{Kind: protocol.Crash, R: i})
		if err != nil {
			return err
		}
		cur = next
	}
	if cur == tr.Before {
		return nil
	}
	last := cur.Replicas
	tr.Action = protocol.Action{Kind: protocol.Crash, R: t.killed[len(t.killed)-1]}
	for i := range last {
		if !slices.Equal(last[i].Log, tr.After.Replicas[i].Log) || last[i].Up != tr.After.Replicas[i].Up {
			return errors.New("a crash changed a replica the model keeps:\n" + tr.After.String())
		}
	}
	t.report.Checked["crash"]++
	return nil
}

// checkController checks a controller step. One step can do several
// things the model does one at a time (a broker's registration after a
// restart; two sessions expiring in one tick), so the check looks for an
// order of the model's controller actions, and a choice at each election,
// that leads from the state before to the state after.
func (t *protoTracker) checkController(tr protocol.Transition, proposer *protocol.Replica) error {
	b, a := &tr.Before.Ctrl, &tr.After.Ctrl
	if b.Leader == a.Leader && b.Epoch == a.Epoch && b.ISR == a.ISR && b.Alive == a.Alive && b.Inc == a.Inc {
		return nil
	}
	if proposer != nil && b.Leader >= 0 {
		// The controller acts on what the leader knew when it proposed
		// the change; the leader may have moved on, or died, since.
		tr.Before = tr.Before.Clone()
		tr.After = tr.After.Clone()
		tr.Before.Replicas[b.Leader], tr.After.Replicas[b.Leader] = *proposer, *proposer
	}
	var acts []protocol.Action
	liveness := false
	for i := range b.N {
		bit := uint32(1) << uint(i)
		switch {
		case b.Inc[i] != a.Inc[i]:
			acts = append(acts, protocol.Action{Kind: protocol.Restart, R: i, HW: tr.After.Replicas[i].HW})
			liveness = true
		case b.Alive&bit != 0 && a.Alive&bit == 0:
			acts = append(acts, protocol.Action{Kind: protocol.Fence, R: i})
			liveness = true
		case b.Alive&bit == 0 && a.Alive&bit != 0:
			acts = append(acts, protocol.Action{Kind: protocol.Unfence, R: i})
			liveness = true
		}
	}
	if !liveness {
		switch {
		case b.Leader != a.Leader:
			acts = append(acts, protocol.Action{Kind: protocol.Reelect, Elect: a.Leader})
		default:
			for i := range b.N {
				bit := uint32(1) << uint(i)
				if b.ISR&bit != 0 && a.ISR&bit == 0 {
					acts = append(acts, protocol.Action{Kind: protocol.ShrinkISR, R: b.Leader, F: i})
				}
				if b.ISR&bit == 0 && a.ISR&bit != 0 {
					acts = append(acts, protocol.Action{Kind: protocol.ExpandISR, R: b.Leader, F: i})
				}
			}
		}
	}
	if len(acts) == 0 {
		return errors.New("the controller changed the partition with no liveness or ISR change the model knows:\n" + tr.After.String())
	}
	var first error
	for _, seq := range orders(acts) {
		err := t.trySequence(tr, seq, 0)
		if err == nil {
			name := seq[0].Kind.String()
			if len(seq) > 1 {
				name = "controller steps taken together"
			}
			t.report.Checked[name]++
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// trySequence applies seq from tr.Before, trying every election choice,
// and checks the last step against tr.After.
func (t *protoTracker) trySequence(tr protocol.Transition, seq []protocol.Action, at int) error {
	a := seq[at]
	choices := []int32{protocol.None}
	if a.Kind != protocol.ShrinkISR && a.Kind != protocol.ExpandISR && a.Kind != protocol.Reelect {
		for i := range tr.Before.Ctrl.N {
			choices = append(choices, i)
		}
	}
	var first error
	for _, c := range choices {
		if a.Kind != protocol.Reelect {
			a.Elect = c
		}
		if at == len(seq)-1 {
			tr.Action = a
			err := t.model.CheckTransition(tr)
			if err == nil {
				return nil
			}
			if first == nil || !errors.Is(err, protocol.ErrNotEnabled) {
				first = err
			}
			continue
		}
		next, err := t.model.Step(tr.Before, a)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		sub := tr
		sub.Before = next
		if err := t.trySequence(sub, seq, at+1); err == nil {
			return nil
		} else if first == nil {
			first = err
		}
	}
	return first
}

// orders lists every order of acts.
func orders(acts []protocol.Action) [][]protocol.Action {
	if len(acts) <= 1 {
		return [][]protocol.Action{acts}
	}
	var out [][]protocol.Action
	for i := range acts {
		rest := slices.Concat(acts[:i:i], acts[i+1:])
		for _, o := range orders(rest) {
			out = append(out, append([]protocol.Action{acts[i]}, o...))
		}
	}
	return out
}
