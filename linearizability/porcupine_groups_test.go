package linearizability

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// join records member's ok JoinGroup answer: generation gen of group g.
func (b *linHistory) join(client int, member string, gen int32, call, ret int64) *Op {
	return b.add(Op{Client: client, Kind: KindJoin, Group: "g", Member: member, Generation: gen, Call: call, Return: ret, Outcome: OutcomeOK})
}

// assignment records that member of generation gen of group g got t-0.
func (b *linHistory) assignment(client int, member string, gen int32, call, ret int64) *Op {
	return b.add(Op{Client: client, Kind: KindAssignment, Group: "g", Member: member, Generation: gen, Call: call, Return: ret, Outcome: OutcomeOK})
}

// commit records member's commit of offset to t-0 in group g.
func (b *linHistory) commit(client int, member string, gen int32, offset, call, ret int64, outcome Outcome) *Op {
	op := Op{Client: client, Kind: KindCommit, Group: "g", Member: member, Generation: gen, Offset: offset, Call: call, Return: ret, Outcome: outcome}
	if outcome == OutcomeFail {
		op.Error = "ILLEGAL_GENERATION"
	}
	return b.add(op)
}

// offsetFetch records an ok offset-fetch of t-0 in group g that returned
// offset.
func (b *linHistory) offsetFetch(client int, offset, call, ret int64) *Op {
	return b.add(Op{Client: client, Kind: KindOffsetFetch, Group: "g", Offset: offset, Call: call, Return: ret, Outcome: OutcomeOK})
}

func groupVerdict(t *testing.T, b *linHistory) Verdict {
	t.Helper()
	res := b.check(t)
	require.Len(t, res.Partitions, 1)
	require.Equal(t, "g", res.Partitions[0].Group)
	require.Equal(t, res.Verdict, res.Partitions[0].Verdict)
	return res.Verdict
}

// A group's life: commits of the current generation are accepted and seen;
// after a rebalance the old generation's commit is refused and the fetch
// still sees the last accepted one.
// Reference: SEMANTICS.md, Consumer and groups ("OffsetCommit from a stale
// generation is refused with ILLEGAL_GENERATION").
func TestGroupLinearizableRebalance(t *testing.T) {
	var b linHistory
	b.join(0, "m1", 1, 0, 5)
	b.assignment(0, "m1", 1, 6, 8)
	b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
	b.offsetFetch(1, 10, 13, 14)
	b.join(1, "m2", 2, 15, 20)
	b.commit(0, "m1", 1, 20, 21, 22, OutcomeFail)
	b.offsetFetch(1, 10, 23, 24)
	b.commit(1, "m2", 2, 30, 25, 26, OutcomeOK)
	b.offsetFetch(0, 30, 27, 28)
	require.Equal(t, VerdictOK, groupVerdict(t, &b))
}

// A commit of a generation older than one a member had already learnt was
// accepted: generation fencing failed.
// Reference: SEMANTICS.md, Consumer and groups (ILLEGAL_GENERATION).
func TestGroupIllegalStaleGenerationAccepted(t *testing.T) {
	var b linHistory
	b.join(0, "m1", 1, 0, 5)
	b.join(1, "m2", 2, 6, 8)
	b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
	require.Equal(t, VerdictIllegal, groupVerdict(t, &b))

	// The same commit concurrent with the rebalance may have come first.
	b = linHistory{}
	b.join(0, "m1", 1, 0, 5)
	b.join(1, "m2", 2, 6, 11)
	b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
	require.Equal(t, VerdictOK, groupVerdict(t, &b))
}

// A fetch must see the last commit accepted before it was called, and never
// an offset no commit wrote. Reference: SEMANTICS.md, Consumer and groups
// ("Committed offset = the next offset to read").
func TestGroupIllegalStaleOrInventedOffset(t *testing.T) {
	for _, c := range []struct {
		name    string
		fetched int64
		want    Verdict
	}{
		{"latest", 20, VerdictOK},
		{"stale", 10, VerdictIllegal},
		{"none", -1, VerdictIllegal},
		{"never committed", 15, VerdictIllegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b linHistory
			b.join(0, "m1", 1, 0, 5)
			b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
			b.commit(0, "m1", 1, 20, 13, 14, OutcomeOK)
			b.offsetFetch(1, c.fetched, 15, 16)
			require.Equal(t, c.want, groupVerdict(t, &b))
		})
	}
}

// A fetch concurrent with a commit may see it or not.
func TestGroupFetchConcurrentWithCommit(t *testing.T) {
	for _, fetched := range []int64{-1, 10} {
		var b linHistory
		b.commit(0, "m1", 1, 10, 10, 20, OutcomeOK)
		b.offsetFetch(1, fetched, 12, 14)
		require.Equal(t, VerdictOK, groupVerdict(t, &b), "fetched %d", fetched)
	}
}

// A commit whose outcome the client could not learn may or may not have
// taken effect, at any time after its call; but at most once.
// Reference: FORMAT.md, outcome "unknown".
func TestGroupUnknownCommitEitherWay(t *testing.T) {
	for _, c := range []struct {
		name    string
		fetched []int64
		want    Verdict
	}{
		{"never took effect", []int64{10, 10}, VerdictOK},
		{"took effect", []int64{20, 20}, VerdictOK},
		{"took effect late", []int64{10, 20}, VerdictOK},
		{"took effect, then undone", []int64{20, 10}, VerdictIllegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b linHistory
			b.join(0, "m1", 1, 0, 5)
			b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
			b.commit(0, "m1", 1, 20, 13, -1, OutcomeUnknown)
			b.offsetFetch(1, c.fetched[0], 15, 16)
			b.offsetFetch(1, c.fetched[1], 17, 18)
			require.Equal(t, c.want, groupVerdict(t, &b))
		})
	}
	// An unknown commit of a stale generation never took effect.
	var b linHistory
	b.join(0, "m1", 1, 0, 5)
	b.join(1, "m2", 2, 6, 8)
	b.commit(0, "m1", 1, 20, 10, 12, OutcomeUnknown)
	b.offsetFetch(1, 20, 15, 16)
	require.Equal(t, VerdictIllegal, groupVerdict(t, &b))
}

// Group partitions are judged apart from the logs, and apart from each
// other: each gets its own verdict after the logs'.
func TestGroupVerdictsPerPartition(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 2, OutcomeOK, 0)
	b.fetch(1, 3, 4, 0, 1, "a")
	b.join(1, "m1", 1, 0, 1)
	b.commit(1, "m1", 1, 1, 5, 6, OutcomeOK)
	b.offsetFetch(1, 1, 7, 8)
	bad := b.commit(1, "m1", 1, 5, 5, 6, OutcomeOK)
	bad.Partition = 1
	b.offsetFetch(1, 4, 7, 8).Partition = 1
	res := b.check(t)
	require.Equal(t, VerdictIllegal, res.Verdict)
	require.Equal(t, []PartitionVerdict{
		{TP: TopicPartition{"t", 0}, Ops: 2, Verdict: VerdictOK},
		{Group: "g", TP: TopicPartition{"t", 0}, Ops: 3, Verdict: VerdictOK},
		{Group: "g", TP: TopicPartition{"t", 1}, Ops: 3, Verdict: VerdictIllegal},
	}, res.Partitions)
}

func TestDescribeGroupOperation(t *testing.T) {
	var b linHistory
	b.join(0, "m1", 1, 0, 1)
	b.commit(0, "m1", 1, 10, 2, 3, OutcomeOK)
	b.add(Op{Client: 1, Kind: KindCommit, Group: "g", Generation: NoGeneration, Offset: 4, Call: 4, Return: 5, Outcome: OutcomeFail})
	b.offsetFetch(1, 10, 6, 7)
	ops, parts := toGroupOperations(b.ops, 0)
	require.Len(t, parts, 1)
	var got []string
	for _, o := range ops {
		got = append(got, describeGroupOperation(o.Input.(*groupCall), o.Output.(*groupReturn)))
	}
	require.Equal(t, []string{
		"group g t-0: join gen 1 as m1",
		"group g t-0: commit 10 gen 1 m1 → ok",
		"group g t-0: commit 4 (simple) → fail",
		"group g t-0: offset-fetch → 10",
	}, got)
}

// Validate holds group operations to FORMAT.md.
func TestValidateGroupOps(t *testing.T) {
	ok := []Op{
		{Kind: KindJoin, Group: "g", Member: "m", Generation: 1, Outcome: OutcomeOK},
		{Kind: KindCommit, Group: "g", Generation: NoGeneration, Offset: 3, Outcome: OutcomeOK},
		{Kind: KindOffsetFetch, Group: "g", Offset: -1, Outcome: OutcomeOK},
	}
	for i := range ok {
		ok[i].ID = i
	}
	require.NoError(t, Validate(ok))
	for _, bad := range []Op{
		{Kind: KindJoin, Member: "m", Generation: 1, Outcome: OutcomeOK},
		{Kind: KindAssignment, Group: "g", Generation: 1, Outcome: OutcomeOK},
		{Kind: KindJoin, Group: "g", Member: "m", Generation: -1, Outcome: OutcomeOK},
		{Kind: KindCommit, Group: "g", Generation: 1, Offset: 3, Outcome: OutcomeOK},
		{Kind: KindCommit, Group: "g", Member: "m", Generation: NoGeneration, Offset: 3, Outcome: OutcomeOK},
		{Kind: KindCommit, Group: "g", Member: "m", Generation: 1, Offset: -1, Outcome: OutcomeOK},
		{Kind: KindOffsetFetch, Group: "g", Offset: -2, Outcome: OutcomeOK},
	} {
		require.Error(t, Validate([]Op{bad}), "%+v", bad)
	}
}

// The picture draws group operations next to the log's, with their states.
func TestWriteVisualizationGroups(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.join(1, "m1", 1, 0, 1)
	b.commit(1, "m1", 1, 10, 2, 3, OutcomeOK)
	b.offsetFetch(1, 4, 6, 7)
	res := b.check(t)
	require.Equal(t, VerdictIllegal, res.Verdict)
	html := drawn(t, res)
	contains(t, html, "group g t-0: commit 10 gen 1 m1 → ok")
	contains(t, html, "generation 1, committed 10")
	contains(t, html, "op 3, client 1, group g, t-0")
}
