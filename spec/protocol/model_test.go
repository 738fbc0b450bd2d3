package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A leader answers OffsetsForLeaderEpoch with the largest epoch at or below
// the one asked and where it ended: the start of the next epoch in its
// cache, or its LEO for its latest epoch. An epoch newer than all is
// unknown; one older than all is answered with the first start.
// Reference: KIP-279.
func TestEndOffsetForFollowsKIP279(t *testing.T) {
	r := Replica{Log: make([]Entry, 8), Epochs: []EpochStart{{1, 0}, {3, 5}}}
	for _, c := range []struct{ asked, epoch, end int32 }{
		{3, 3, 8}, // the latest: ends at the LEO
		{2, 1, 5}, // never seen: the largest below, which ends where 3 starts
		{1, 1, 5},
		{0, 0, 0}, // older than every entry
		{4, -1, -1},
		{-1, -1, -1},
	} {
		epoch, end := r.endOffsetFor(c.asked)
		assert.Equal(t, [2]int32{c.epoch, c.end}, [2]int32{epoch, end}, "asked %d", c.asked)
	}
}

// Kafka 0.11 answered with an end offset only: the start of the first epoch
// after the one asked. Asked about an epoch it never saw (2), it answers
// where 3 starts, with nothing to tell the follower that its own epoch 2
// records are not in the leader's log. Reference: KAFKA-6361.
func TestEndOffsetKIP101AnswersOffsetsOnly(t *testing.T) {
	r := Replica{Log: make([]Entry, 8), Epochs: []EpochStart{{1, 0}, {3, 5}}}
	for asked, end := range map[int32]int32{3: 8, 2: 5, 1: 5, 0: -1, 4: -1} {
		assert.Equal(t, end, r.endOffsetKIP101(asked), "asked %d", asked)
	}
}

// The epoch cache follows the log: truncation drops the epochs that started
// at or after the new end, and an epoch is assigned only if newer.
func TestEpochCacheFollowsTheLog(t *testing.T) {
	var r Replica
	r.appendEntry(Entry{1, 1})
	r.appendEntry(Entry{2, 1})
	r.appendEntry(Entry{3, 2})
	r.assignEpoch(4, 3) // a leader of epoch 4 that has written nothing yet
	assert.Equal(t, []EpochStart{{1, 0}, {2, 2}, {4, 3}}, r.Epochs)
	r.assignEpoch(3, 3)
	assert.Equal(t, []EpochStart{{1, 0}, {2, 2}, {4, 3}}, r.Epochs, "an older epoch is not assigned")
	r.HW = 3
	r.truncate(2)
	assert.Equal(t, []EpochStart{{1, 0}}, r.Epochs)
	assert.Equal(t, int32(2), r.HW, "HW is clamped to the new LEO")
	assert.Equal(t, []Entry{{1, 1}, {2, 1}}, r.Log)
}

func safeModel(n int) Model { return Model{Variant: safeVariant(), N: n} }

// Steps that are not transitions of the protocol are refused, with a
// reason, and leave the state alone.
func TestStepRefusesWhatTheProtocolDoesNotAllow(t *testing.T) {
	m := safeModel(3)
	s := m.Init()
	before := s.Key()
	for _, a := range []Action{
		{Kind: Produce, R: 1},                               // a follower
		{Kind: Deliver, Msg: Msg{Kind: FetchAnswer, To: 1}}, // nothing like it in flight
		{Kind: Restart, R: 0},                               // it is up
		{Kind: Learn, R: 0},                                 // it knows the epoch
		{Kind: ExpandISR, R: 0, F: 1},                       // already in the ISR
		{Kind: Reelect, Elect: 0},                           // already leads
		{Kind: Fence, R: 0, Elect: None},                    // the leader: an election is due, so a choice is needed
		{Kind: Fence, R: 1, Elect: 2},                       // a follower: no election, so no choice
		{Kind: Produce, R: 7},                               // no such replica
	} {
		_, err := m.Step(s, a)
		require.ErrorIs(t, err, ErrNotEnabled, "%s", a)
		assert.NotEmpty(t, err.Error())
	}
	assert.Equal(t, before, s.Key())

	s2, err := m.Step(s, Action{Kind: Fence, R: 0, Elect: 2})
	require.NoError(t, err)
	assert.Equal(t, int32(2), s2.Ctrl.Leader)
	assert.Equal(t, int32(2), s2.Ctrl.Epoch)
	assert.Equal(t, uint32(0b110), s2.Ctrl.ISR, "the dead leader leaves the ISR")
	_, err = m.Step(s, Action{Kind: Fence, R: 0, Elect: 0})
	require.ErrorIs(t, err, ErrNotEnabled, "the dead broker cannot be elected")
}

// With min.insync.replicas 2, a leader alone in its ISR refuses acks=all
// produces (NOT_ENOUGH_REPLICAS) and does not advance HW.
func TestMinISRGatesProduceAndHW(t *testing.T) {
	m := safeModel(2)
	s := m.Init()
	s, err := m.Step(s, Action{Kind: Produce, R: 0})
	require.NoError(t, err)
	s, err = m.Step(s, Action{Kind: ShrinkISR, R: 0, F: 1})
	require.NoError(t, err)
	_, err = m.Step(s, Action{Kind: Produce, R: 0})
	require.ErrorIs(t, err, ErrNotEnabled)
	assert.Equal(t, int32(0), s.Replicas[0].HW)

	m.Variant.HWBelowMinISR = true
	s = m.Init()
	s, _ = m.Step(s, Action{Kind: Produce, R: 0})
	s, err = m.Step(s, Action{Kind: ShrinkISR, R: 0, F: 1})
	require.NoError(t, err)
	assert.Equal(t, int32(1), s.Replicas[0].HW, "before KIP-966, HW advances with the leader alone")
	assert.Equal(t, []int32{1}, s.Ghost.Acked)
}

// A whole round of replication: the follower fetches, the leader's HW
// advances when the follower's next fetch shows it has the record, the
// producer is answered, and the follower learns HW one round late.
func TestReplicationRound(t *testing.T) {
	m := safeModel(2)
	s := m.Init()
	step := func(a Action) {
		t.Helper()
		var err error
		s, err = m.Step(s, a)
		require.NoError(t, err, "%s", a)
	}
	only := func() Msg {
		t.Helper()
		require.Len(t, s.Net, 1)
		return s.Net[0]
	}
	step(Action{Kind: Produce, R: 0})
	step(Action{Kind: Deliver, Msg: only(), K: -1}) // fetch at 0
	step(Action{Kind: Deliver, Msg: only(), K: -1}) // answer with m1
	assert.Equal(t, []Entry{{1, 1}}, s.Replicas[1].Log)
	assert.Equal(t, int32(0), s.Replicas[0].HW)
	step(Action{Kind: Deliver, Msg: only(), K: -1}) // fetch at 1: the follower has m1
	assert.Equal(t, int32(1), s.Replicas[0].HW)
	assert.Equal(t, []int32{1}, s.Ghost.Acked)
	assert.Equal(t, []Entry{{1, 1}}, s.Ghost.Committed)
	assert.Equal(t, int32(0), s.Replicas[1].HW, "the follower learns HW from the next answer")
	step(Action{Kind: Deliver, Msg: only(), K: -1})
	assert.Equal(t, int32(1), s.Replicas[1].HW)
	assert.Nil(t, Check(s))
}

// Keys are canonical: the order messages were sent in does not matter,
// every field does, and symmetric keys equate renamings of replicas.
func TestKeysAreCanonical(t *testing.T) {
	m := safeModel(3)
	s := m.Init()
	require.Len(t, s.Net, 2)
	swapped := s.Clone()
	swapped.Net[0], swapped.Net[1] = swapped.Net[1], swapped.Net[0]
	assert.Equal(t, s.Key(), swapped.Key())

	changed := s.Clone()
	changed.Replicas[2].HW = 1
	assert.NotEqual(t, s.Key(), changed.Key())
	changed = s.Clone()
	changed.Net[0].Offset = 1
	assert.NotEqual(t, s.Key(), changed.Key())

	// Followers 1 and 2 renamed: a different state, the same up to symmetry.
	perms := permutations(3)
	var e encoder
	a, _ := m.Step(s, Action{Kind: Fence, R: 1, Elect: None})
	b, _ := m.Step(s, Action{Kind: Fence, R: 2, Elect: None})
	assert.NotEqual(t, a.Key(), b.Key())
	assert.Equal(t, a.symmetricKey(perms, &e), b.symmetricKey(perms, &e))
	assert.NotEqual(t, a.symmetricKey(perms, &e), s.symmetricKey(perms, &e))
}

func TestPermutations(t *testing.T) {
	ps := permutations(3)
	assert.Len(t, ps, 6)
	seen := map[[3]int32]bool{}
	for _, p := range ps {
		seen[[3]int32(p)] = true
	}
	assert.Len(t, seen, 6)
}
