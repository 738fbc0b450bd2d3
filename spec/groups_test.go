package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func at(gen int32, offset int64) GroupOffset { return GroupOffset{Generation: gen, Offset: offset} }

// Before anything happened a group has no generation and nothing committed:
// an OffsetFetch answers none.
// Reference: spec/SEMANTICS.md, Consumer and groups (auto.offset.reset "applies
// when there is no committed offset").
func TestNewGroupOffset(t *testing.T) {
	s := NewGroupOffset()
	require.Equal(t, at(NoGeneration, NoOffset), s)
	require.True(t, FetchOffset(s, NoOffset))
	require.False(t, FetchOffset(s, 0))
}

// "JoinGroup (generation +1 ...)": an answer names the generation current
// when it was given; a stored generation (a SyncGroup answer's) is never
// lost, a decided one (a JoinGroup answer's) may be, by a coordinator
// failover before the leader's SyncGroup stored it.
// Reference: spec/SEMANTICS.md, Consumer and groups.
func TestObserveGeneration(t *testing.T) {
	s := at(3, 10)
	next, ok := ObserveGeneration(s, 3, true)
	require.True(t, ok, "the current generation again")
	require.Equal(t, s, next)
	next, ok = ObserveGeneration(s, 5, true)
	require.True(t, ok, "generation 4 may have passed unobserved")
	require.Equal(t, at(5, 10), next, "the committed offset survives a rebalance")
	_, ok = ObserveGeneration(s, 2, false)
	require.False(t, ok, "below a stored generation")

	joined, ok := ObserveGeneration(s, 4, false)
	require.True(t, ok)
	require.Equal(t, s, joined, "decided, not stored")
	back, ok := ObserveGeneration(joined, 3, false)
	require.True(t, ok, "generation 4 was lost with its coordinator: 3 is current again")
	require.Equal(t, at(3, 10), back)
	_, ok = ObserveGeneration(joined, 2, false)
	require.False(t, ok, "never below the stored generation 3")
}

// "OffsetCommit from a stale generation is refused with ILLEGAL_GENERATION":
// an accepted commit's generation is the current one.
// Reference: spec/SEMANTICS.md, Consumer and groups.
func TestCommitOffsetGenerationFencing(t *testing.T) {
	s := at(3, 10)
	commit := func(gen int32, member string, offset int64, o Outcome) []GroupOffset {
		return CommitOffset(s, Commit{Generation: gen, Member: member, Offset: offset, Outcome: o})
	}
	cases := []struct {
		name string
		got  []GroupOffset
		want []GroupOffset
	}{
		{"current generation ok", commit(3, "m1", 20, Acknowledged), []GroupOffset{at(3, 20)}},
		{"newer generation ok: it was current and stored", commit(4, "m1", 20, Acknowledged), []GroupOffset{at(4, 20)}},
		{"stale generation ok is impossible", commit(2, "m1", 20, Acknowledged), nil},
		{"member commit without a member id", commit(3, "", 20, Acknowledged), nil},
		{"stale generation refused", commit(2, "m1", 20, Failed), []GroupOffset{s}},
		{"current generation refused (rebalance in progress)", commit(3, "m1", 20, Failed), []GroupOffset{s}},
		{"unknown: either way", commit(3, "m1", 20, Unknown), []GroupOffset{s, at(3, 20)}},
		{"unknown newer generation: either way", commit(4, "m1", 20, Unknown), []GroupOffset{s, at(4, 20)}},
		{"unknown stale generation: never took effect", commit(2, "m1", 20, Unknown), []GroupOffset{s}},
		{"unknown of the committed offset: one state", commit(3, "m1", 10, Unknown), []GroupOffset{s}},
		{"backwards by a later commit", commit(3, "m1", 4, Acknowledged), []GroupOffset{at(3, 4)}},
	}
	// Generation 4 only decided: a coordinator failover may bring 3 back,
	// and a commit in it be accepted; it stores 3 again.
	d, _ := ObserveGeneration(at(3, 10), 4, false)
	cases = append(cases, struct {
		name string
		got  []GroupOffset
		want []GroupOffset
	}{"after a lost decided generation", CommitOffset(d, Commit{Generation: 3, Member: "m1", Offset: 20, Outcome: Acknowledged}), []GroupOffset{at(3, 20)}},
		struct {
			name string
			got  []GroupOffset
			want []GroupOffset
		}{"never below the stored one", CommitOffset(d, Commit{Generation: 2, Member: "m1", Offset: 20, Outcome: Acknowledged}), nil})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.got)
		})
	}
}

// A simple commit (generation -1, no member) leaves the generation alone and
// is accepted in any state: the history cannot show when the group is Empty.
// Reference: spec/SEMANTICS.md, Consumer and groups; spec.CommitOffset, rule 3.
func TestCommitOffsetSimple(t *testing.T) {
	simple := Commit{Generation: NoGeneration, Offset: 7, Outcome: Acknowledged}
	require.True(t, simple.Simple())
	require.Equal(t, []GroupOffset{at(NoGeneration, 7)}, CommitOffset(NewGroupOffset(), simple))
	require.Equal(t, []GroupOffset{at(2, 7)}, CommitOffset(at(2, 1), simple))
	simple.Outcome = Unknown
	require.Equal(t, []GroupOffset{at(2, 1), at(2, 7)}, CommitOffset(at(2, 1), simple))
}

// "Committed offset = the next offset to read": an OffsetFetch answers the
// last accepted commit, whatever was refused after it.
// Reference: spec/SEMANTICS.md, Consumer and groups.
func TestFetchOffsetSeesLastAcceptedCommit(t *testing.T) {
	s := NewGroupOffset()
	s, ok := ObserveGeneration(s, 1, false)
	require.True(t, ok)
	s = CommitOffset(s, Commit{Generation: 1, Member: "m1", Offset: 5, Outcome: Acknowledged})[0]
	s, ok = ObserveGeneration(s, 2, true)
	require.True(t, ok)
	require.Equal(t, []GroupOffset{s}, CommitOffset(s, Commit{Generation: 1, Member: "m1", Offset: 9, Outcome: Failed}))
	require.True(t, FetchOffset(s, 5))
	require.False(t, FetchOffset(s, 9), "a refused commit is never seen")
	require.False(t, FetchOffset(s, NoOffset), "an accepted commit is never lost")
}
