package protocol

import (
	"fmt"
	"slices"
	"strings"
)

// Transition is one step of an implementation's run seen through the
// model: an abstraction of the implementation's state of one partition
// before and after the step, the action the step is, and the messages the
// step sent (abstracted the same way).
//
// Before.Net holds the message a Deliver action delivers; After.Net is not
// read: Sent is what the step sent.
type Transition struct {
	Before, After *State
	Action        Action
	Sent          []Msg
}

// CheckTransition reports whether t is a transition the model allows, as
// etcd's raft checks its traces against its TLA+ spec: the action must be
// enabled in Before, and the state it leads to must agree with After, and
// the messages it sends with Sent.
//
// Two places compare with an inequality, where the implementation follows a
// rule the model abstracts:
//   - A leader's HW may end anywhere from where it was to where the model
//     puts it. The model changes the ISR in one step; a real leader
//     proposes the change and computes HW over the old and proposed ISR
//     together until the controller answers (KIP-497's maximal ISR), which
//     holds HW back, never pushes it further. Going past the model's HW is
//     the failure that matters, and it is caught.
//   - A fetch answer may carry a prefix of the entries the model sends: a
//     real leader stops at max bytes.
//
// The leader's own view of the ISR is not compared, for the same reason as
// HW; the controller's ISR, which elections use, is.
func (m Model) CheckTransition(t Transition) error {
	m.noGhost = true
	spec, err := m.Step(t.Before, t.Action)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Action, err)
	}
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	for i := range spec.Replicas {
		want, got, before := &spec.Replicas[i], &t.After.Replicas[i], &t.Before.Replicas[i]
		m.compareReplica(int32(i), want, got, before, t.Action, add)
	}
	wc, gc := &spec.Ctrl, &t.After.Ctrl
	if wc.Leader != gc.Leader || wc.Epoch != gc.Epoch || wc.ISR != gc.ISR || wc.Alive != gc.Alive || wc.Inc != gc.Inc {
		add("controller: implementation has leader %d epoch %d isr %s alive %s, model has leader %d epoch %d isr %s alive %s",
			gc.Leader, gc.Epoch, setString(gc.ISR), setString(gc.Alive), wc.Leader, wc.Epoch, setString(wc.ISR), setString(wc.Alive))
	}
	m.compareSent(sent(t.Before.Net, spec.Net), t.Sent, t.After, add)
	if len(diffs) > 0 {
		return fmt.Errorf("%s: the implementation differs from the model:\n  %s\nstate before:\n%s",
			t.Action, strings.Join(diffs, "\n  "), t.Before)
	}
	return nil
}

func (m Model) compareReplica(id int32, want, got, before *Replica, a Action, add func(string, ...any)) {
	if want.Up != got.Up || want.Inc != got.Inc {
		add("replica %d: implementation up=%v incarnation %d, model up=%v incarnation %d", id, got.Up, got.Inc, want.Up, want.Inc)
		return
	}
	if i := firstDiff(got.Log, want.Log, int32(max(len(got.Log), len(want.Log)))); i >= 0 {
		add("replica %d: logs differ from offset %d: implementation has %s (LEO %d), model %s (LEO %d)",
			id, i, entries(got.Log[min(i, len(got.Log)):]), len(got.Log), entries(want.Log[min(i, len(want.Log)):]), len(want.Log))
	}
	if len(want.Epochs) != len(got.Epochs) || !slices.Equal(want.Epochs, got.Epochs) {
		add("replica %d: implementation epoch cache %v, model %v", id, got.Epochs, want.Epochs)
	}
	if want.Epoch != got.Epoch || want.Leader != got.Leader {
		add("replica %d: implementation in epoch %d following %d, model in epoch %d following %d", id, got.Epoch, got.Leader, want.Epoch, want.Leader)
	}
	if want.Up && want.Leader != id && (want.Await != got.Await || (want.Await == AwaitEpoch && want.Query != got.Query)) {
		add("replica %d: implementation waits for %v (epoch %d), model for %v (epoch %d)", id, got.Await, got.Query, want.Await, want.Query)
	}
	leads := want.Up && want.Leader == id
	switch {
	case leads && got.HW > want.HW:
		add("replica %d: leader HW %d is past the model's %d", id, got.HW, want.HW)
	case leads && got.HW < min(before.HW, want.HW) && before.Leader == id:
		add("replica %d: leader HW went back from %d to %d", id, before.HW, got.HW)
	case !leads && got.HW != want.HW:
		add("replica %d: implementation HW %d, model HW %d", id, got.HW, want.HW)
	}
	if leads && a.Kind == Deliver && a.Msg.Kind == FetchRequest && a.Msg.To == id {
		f := a.Msg.From
		if want.Known[f] != got.Known[f] {
			add("leader %d: knows follower %d at %+v, model at %+v", id, f, got.Known[f], want.Known[f])
		}
	}
}

// sent is the multiset difference after - before: what a step sent.
func sent(before, after []Msg) []Msg {
	left := slices.Clone(before)
	var out []Msg
	for i := range after {
		if j := findMsg(left, &after[i]); j >= 0 {
			left = slices.Delete(left, j, j+1)
			continue
		}
		out = append(out, after[i])
	}
	return out
}

// compareSent matches the model's messages with the implementation's, one
// for one. A fetch answer matches with a prefix of the entries, and the HW
// the implementation's leader ended the step with.
func (m Model) compareSent(want, got []Msg, after *State, add func(string, ...any)) {
	got = slices.Clone(got)
	for i := range want {
		w := &want[i]
		j := slices.IndexFunc(got, func(g Msg) bool { return msgMatches(w, &g, after) })
		if j < 0 {
			add("the model sends %s; the implementation did not", w)
			continue
		}
		got = slices.Delete(got, j, j+1)
	}
	for i := range got {
		add("the implementation sent %s, which the model does not", &got[i])
	}
}

func msgMatches(w, g *Msg, after *State) bool {
	if w.Kind != g.Kind || w.From != g.From || w.To != g.To || w.Inc != g.Inc || w.Epoch != g.Epoch ||
		w.Offset != g.Offset || w.Query != g.Query || w.Asked != g.Asked || w.End != g.End || w.OutOfRange != g.OutOfRange {
		return false
	}
	if w.Diverging != g.Diverging {
		return false
	}
	if w.Kind != FetchAnswer || w.OutOfRange || w.Diverging {
		return w.HW == g.HW && slices.Equal(w.Entries, g.Entries)
	}
	return g.HW == after.Replicas[g.From].HW && len(g.Entries) <= len(w.Entries) && slices.Equal(w.Entries[:len(g.Entries)], g.Entries)
}

func (k AwaitKind) String() string {
	switch k {
	case AwaitEpoch:
		return "an epoch answer"
	case AwaitFetch:
		return "fetch answers"
	}
	return "nothing"
}
