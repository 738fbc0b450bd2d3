package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deliverFirst is the transition that delivers s's first message, as the
// model makes it: after state and sent messages included.
func deliverFirst(t *testing.T, m Model, s *State) Transition {
	t.Helper()
	a := Action{Kind: Deliver, Msg: s.Net[0], K: -1}
	next, err := m.Step(s, a)
	require.NoError(t, err)
	return Transition{Before: s, After: next, Action: a, Sent: sent(s.Net, next.Net)}
}

// CheckTransition is quiet on the model's own steps and catches each way a
// broker's step can differ from them. Reference: the transition check of
// trace validation (conformance/sim/protocoltrace.go).
func TestCheckTransitionCatchesWhatDiffers(t *testing.T) {
	m := safeModel(2)
	s, err := m.Step(m.Init(), Action{Kind: Produce, R: 0})
	require.NoError(t, err)
	require.Len(t, s.Net, 1) // follower 1's fetch at offset 0

	fetch := deliverFirst(t, m, s)
	require.NoError(t, m.CheckTransition(fetch), "the model's own step")
	require.Len(t, fetch.Sent, 1)
	answer := fetch.Sent[0]
	require.Len(t, answer.Entries, 1)

	t.Run("leader HW past the model's", func(t *testing.T) {
		tr := fetch
		tr.After = fetch.After.Clone()
		tr.After.Replicas[0].HW = 1
		require.ErrorContains(t, m.CheckTransition(tr), "past the model's")
	})
	t.Run("a leader HW behind the model's is allowed", func(t *testing.T) {
		// (KIP-497's maximal ISR holds a real leader's HW back.)
		s2, err := m.Step(fetch.After, Action{Kind: Deliver, Msg: answer, K: -1})
		require.NoError(t, err)
		tr := deliverFirst(t, m, s2) // the fetch at offset 1: HW moves to 1
		require.Equal(t, int32(1), tr.After.Replicas[0].HW)
		tr.After = tr.After.Clone()
		tr.After.Replicas[0].HW = 0
		tr.Sent[0].HW = 0
		require.NoError(t, m.CheckTransition(tr))
	})
	t.Run("answer missing", func(t *testing.T) {
		tr := fetch
		tr.Sent = nil
		require.ErrorContains(t, m.CheckTransition(tr), "the model sends")
	})
	t.Run("answer cut by max bytes is allowed", func(t *testing.T) {
		tr := fetch
		cut := answer
		cut.Entries = nil
		tr.Sent = []Msg{cut}
		require.NoError(t, m.CheckTransition(tr))
	})
	t.Run("answer with an entry the leader does not have", func(t *testing.T) {
		tr := fetch
		more := answer
		more.Entries = append(append([]Entry(nil), answer.Entries...), Entry{9, 1})
		tr.Sent = []Msg{more}
		err := m.CheckTransition(tr)
		require.ErrorContains(t, err, "which the model does not")
	})
	t.Run("follower did not append", func(t *testing.T) {
		s2 := fetch.After
		tr := deliverFirst(t, m, &State{Replicas: s2.Replicas, Ctrl: s2.Ctrl, Net: []Msg{answer}, Ghost: s2.Ghost})
		require.NoError(t, m.CheckTransition(tr))
		tr.After = tr.After.Clone()
		tr.After.Replicas[1].Log = nil
		require.ErrorContains(t, m.CheckTransition(tr), "logs differ from offset 0")
	})
	t.Run("controller differs", func(t *testing.T) {
		tr := fetch
		tr.After = fetch.After.Clone()
		tr.After.Ctrl.Epoch++
		require.ErrorContains(t, m.CheckTransition(tr), "controller")
	})
	t.Run("not enabled", func(t *testing.T) {
		tr := fetch
		tr.Action = Action{Kind: Produce, R: 1}
		assert.ErrorIs(t, m.CheckTransition(tr), ErrNotEnabled)
	})
}
