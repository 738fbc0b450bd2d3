package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// committedState is a healthy state: m1 and m2 are committed and
// acknowledged, leader 0 and followers 1 and 2 all hold them, and every HW
// is 2.
func committedState(t *testing.T) *State {
	t.Helper()
	s := safeModel(3).Init()
	log := []Entry{{1, 1}, {2, 1}}
	for i := range s.Replicas {
		r := &s.Replicas[i]
		r.Log = log[:2:2]
		r.Epochs = []EpochStart{{1, 0}}
		r.HW = 2
		r.Await = AwaitFetch
	}
	s.Replicas[0].Await = AwaitNothing
	s.Ghost.Committed = log[:2:2]
	s.Ghost.Acked = []int32{1, 2}
	s.Ghost.Next = 3
	require.Nil(t, Check(s))
	return s
}

// Each invariant catches a state that breaks it, and holds on the healthy
// state it was made from: a checker shown to catch what it claims.
func TestInvariantsCatchWhatTheyClaim(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(s *State)
	}{
		{LeaderInISR, func(s *State) { s.Ctrl.ISR = 0b110 }},
		{TrueHWNeverDecreases, func(s *State) {
			s.Replicas[0].Log = s.Replicas[0].Log[:1:1]
			s.Replicas[0].HW = 1
		}},
		{LeaderCompleteness, func(s *State) { s.Replicas[0].Log = []Entry{{1, 1}, {3, 1}} }},
		{AckedWriteKept, func(s *State) {
			// m3 acknowledged but the leader's log lacks it; nothing committed
			// is missing, so only this invariant can see it.
			s.Ghost.Acked = append(s.Ghost.Acked, 3)
		}},
		{StrongISR, func(s *State) { s.Replicas[2].Log = []Entry{{1, 1}, {9, 1}} }},
		{LogMatching, func(s *State) {
			// Follower 2 left the ISR; it and follower 1 both act in epoch 1
			// with HW 2 yet differ at offset 1.
			s.Ctrl.ISR, s.Replicas[0].ISR = 0b011, 0b011
			s.Replicas[2].Log = []Entry{{1, 1}, {9, 1}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := committedState(t)
			assert.Nil(t, CheckOnly(s, []string{c.name}), "the healthy state holds")
			c.break_(s)
			b := CheckOnly(s, []string{c.name})
			require.NotNil(t, b, "the broken state is caught")
			assert.Equal(t, c.name, b.Invariant)
			assert.NotEmpty(t, b.Detail)
		})
	}
}

// A follower still asking where its epoch ended holds leftovers the
// protocol is about to truncate: LogMatching does not judge it, nor an ISR
// member whose process the controller does not know.
func TestInvariantsJudgeOnlyResolvedReplicas(t *testing.T) {
	s := committedState(t)
	s.Ctrl.ISR, s.Replicas[0].ISR = 0b011, 0b011
	s.Replicas[2].Log = []Entry{{1, 1}, {9, 1}}
	s.Replicas[2].Await = AwaitEpoch
	assert.Nil(t, Check(s))

	s = committedState(t)
	s.Replicas[2].Log = nil
	s.Replicas[2].HW = 0
	require.NotNil(t, Check(s))
	s.Replicas[2].Inc = 2 // restarted; not yet registered
	assert.Nil(t, CheckOnly(s, []string{StrongISR}))
}
