package linearizability

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// join is client's ok JoinGroup answer: member of generation gen of group g.
func (b *hist) join(client int, member string, gen int32) int {
	return b.add(Op{Client: client, Kind: KindJoin, Group: "g", Member: member, Generation: gen, Outcome: OutcomeOK})
}

// assignment says member of generation gen of group g got t-partition.
func (b *hist) assignment(client int, member string, gen int32, partition int32) int {
	return b.add(Op{Client: client, Kind: KindAssignment, Group: "g", Member: member, Generation: gen, Partition: partition, Outcome: OutcomeOK})
}

// commit is member's commit of offset to t-0 in group g.
func (b *hist) commit(client int, member string, gen int32, offset int64, outcome Outcome) int {
	op := Op{Client: client, Kind: KindCommit, Group: "g", Member: member, Generation: gen, Offset: offset, Outcome: outcome}
	if outcome == OutcomeFail {
		op.Error = "ILLEGAL_GENERATION"
	}
	return b.add(op)
}

// offsetFetch is an ok offset-fetch of t-0 in group g that returned offset.
func (b *hist) offsetFetch(client int, offset int64) int {
	return b.add(Op{Client: client, Kind: KindOffsetFetch, Group: "g", Offset: offset, Outcome: OutcomeOK})
}

// checkGroup is check for histories whose anomalies are all group ones.
func (b *hist) checkGroup(t *testing.T) []string {
	t.Helper()
	for _, a := range CheckAnomalies(b.ops) {
		require.Equal(t, "g", a.Group, "%s", a)
	}
	return b.check(t)
}

// Rule: double-assignment, one partition assigned to two members of a group
// in one generation.
// Reference: spec/SEMANTICS.md, Consumer and groups ("gives each partition of a
// subscribed topic to exactly one member per generation").
func TestDoubleAssignment(t *testing.T) {
	t.Run("has: two members, one generation", func(t *testing.T) {
		var b hist
		a1 := b.assignment(0, "m1", 1, 0)
		b.assignment(0, "m1", 1, 1)
		a2 := b.assignment(1, "m2", 1, 0)
		b.assignment(1, "m1", 1, 0) // the same member again adds nothing
		require.Equal(t, []string{
			fmt.Sprintf(`double-assignment at -1 "" ops [%d %d]`, a1, a2),
		}, b.checkGroup(t))
	})
	t.Run("has not: the partition moved in the next generation", func(t *testing.T) {
		var b hist
		b.assignment(0, "m1", 1, 0)
		b.assignment(0, "m1", 1, 1)
		b.assignment(1, "m2", 2, 0)
		require.Empty(t, b.checkGroup(t))
	})
	t.Run("has not: another group", func(t *testing.T) {
		var b hist
		b.assignment(0, "m1", 1, 0)
		b.ops = append(b.ops, Op{ID: 1, Client: 1, Kind: KindAssignment, Group: "h", Member: "m2", Generation: 1,
			Topic: "t", Call: 10, Return: 11, Outcome: OutcomeOK})
		require.Empty(t, b.check(t))
	})
}

// Rule: stale-generation-commit, a commit from an old generation was
// accepted.
// Reference: spec/SEMANTICS.md, Consumer and groups ("OffsetCommit from a stale
// generation is refused with ILLEGAL_GENERATION").
func TestStaleGenerationCommit(t *testing.T) {
	t.Run("has not: the next generation only decided (a JoinGroup answer), which a coordinator failover can undo", func(t *testing.T) {
		var b hist
		b.join(0, "m1", 1)
		b.join(1, "m2", 2)
		b.join(1, "m2", 2)
		b.commit(0, "m1", 1, 10, OutcomeOK)
		require.Empty(t, b.checkGroup(t))
	})
	t.Run("has: the newer generation learnt by an assignment", func(t *testing.T) {
		var b hist
		b.join(0, "m1", 1)
		a := b.assignment(1, "m2", 2, 3)
		c := b.commit(0, "m1", 1, 10, OutcomeOK)
		require.Equal(t, []string{
			fmt.Sprintf(`stale-generation-commit at 10 "" ops [%d %d]`, a, c),
		}, b.checkGroup(t))
	})
	t.Run("has not: refused", func(t *testing.T) {
		var b hist
		b.join(0, "m1", 1)
		b.join(1, "m2", 2)
		b.commit(0, "m1", 1, 10, OutcomeFail)
		require.Empty(t, b.checkGroup(t))
	})
	t.Run("has not: concurrent with the rebalance", func(t *testing.T) {
		var b hist
		b.join(0, "m1", 1)
		b.at(10, 20).join(1, "m2", 2)
		b.at(15, 21).commit(0, "m1", 1, 10, OutcomeOK)
		require.Empty(t, b.checkGroup(t))
	})
	t.Run("has not: a simple commit", func(t *testing.T) {
		var b hist
		b.join(1, "m2", 2)
		b.add(Op{Client: 0, Kind: KindCommit, Group: "g", Generation: NoGeneration, Offset: 10, Outcome: OutcomeOK})
		require.Empty(t, b.checkGroup(t))
	})
}

// Rule: lost-commit, an offset-fetch returned less than a commit accepted
// before it, and no later commit lowered it.
// Reference: spec/SEMANTICS.md, Consumer and groups ("Committed offset = the
// next offset to read").
func TestLostCommit(t *testing.T) {
	t.Run("has: an older offset", func(t *testing.T) {
		var b hist
		b.join(0, "m1", 1)
		b.commit(0, "m1", 1, 10, OutcomeOK)
		c := b.commit(0, "m1", 1, 20, OutcomeOK)
		f := b.offsetFetch(1, 10)
		require.Equal(t, []string{
			fmt.Sprintf(`lost-commit at 20 "" ops [%d %d]`, c, f),
		}, b.checkGroup(t))
	})
	t.Run("has: nothing committed", func(t *testing.T) {
		var b hist
		c := b.commit(0, "m1", 1, 20, OutcomeOK)
		f := b.offsetFetch(1, -1)
		require.Equal(t, []string{
			fmt.Sprintf(`lost-commit at 20 "" ops [%d %d]`, c, f),
		}, b.checkGroup(t))
	})
	t.Run("has not: the latest offset", func(t *testing.T) {
		var b hist
		b.join(0, "m1", 1)
		b.commit(0, "m1", 1, 10, OutcomeOK)
		b.commit(0, "m1", 1, 20, OutcomeOK)
		b.offsetFetch(1, 20)
		require.Empty(t, b.checkGroup(t))
	})
	t.Run("has not: a later commit lowered it", func(t *testing.T) {
		var b hist
		b.join(0, "m1", 1)
		b.commit(0, "m1", 1, 10, OutcomeOK)
		b.commit(0, "m1", 1, 20, OutcomeOK)
		b.commit(0, "m1", 1, 10, OutcomeUnknown)
		b.offsetFetch(1, 10)
		require.Empty(t, b.checkGroup(t))
	})
	t.Run("has not: the fetch was concurrent with the commit", func(t *testing.T) {
		var b hist
		b.commit(0, "m1", 1, 10, OutcomeOK)
		b.at(10, 20).commit(0, "m1", 1, 20, OutcomeOK)
		b.at(15, 25).offsetFetch(1, 10)
		require.Empty(t, b.checkGroup(t))
	})
}

// poll-skip and nonmonotonic-poll know rebalances: an assignment or a join
// of the consumer between two reads lets it start anywhere.
// Reference: spec/SEMANTICS.md, Consumer and groups ("its partitions move to the
// survivors"); "Anomalies the checkers name" ("no reassignment between").
func TestPollsAcrossRebalance(t *testing.T) {
	start := func() (b hist, r1 int) {
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.send(0, "c", 2)
		r1 = b.poll(3, 0, "a", "b")
		return b, r1
	}
	t.Run("has: no rebalance", func(t *testing.T) {
		b, r1 := start()
		r2 := b.poll(3, 0, "a")
		require.Equal(t, []string{fmt.Sprintf(`nonmonotonic-poll at 0 "" ops [%d %d]`, r1, r2)}, b.check(t))
	})
	t.Run("has not: an assignment of the partition between", func(t *testing.T) {
		b, _ := start()
		b.assignment(3, "m1", 2, 0)
		b.poll(3, 0, "a")
		require.Empty(t, b.check(t))
	})
	t.Run("has: an assignment of another partition between", func(t *testing.T) {
		b, r1 := start()
		b.assignment(3, "m1", 2, 1)
		r2 := b.poll(3, 0, "a")
		require.Equal(t, []string{fmt.Sprintf(`nonmonotonic-poll at 0 "" ops [%d %d]`, r1, r2)}, b.check(t))
	})
	t.Run("has not: a join between", func(t *testing.T) {
		b, _ := start()
		b.join(3, "m1", 2)
		b.poll(3, 3)
		require.Empty(t, b.check(t))
	})
	t.Run("has: another client's join between", func(t *testing.T) {
		b, r1 := start()
		b.join(4, "m2", 2)
		r2 := b.poll(3, 3)
		require.Equal(t, []string{fmt.Sprintf(`poll-skip at 2 "" ops [%d %d]`, r1, r2)}, b.check(t))
	})
	t.Run("has: the join came before both reads", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.send(0, "c", 2)
		b.join(3, "m1", 1)
		r1 := b.poll(3, 0, "a", "b")
		r2 := b.poll(3, 3)
		require.Equal(t, []string{fmt.Sprintf(`poll-skip at 2 "" ops [%d %d]`, r1, r2)}, b.check(t))
	})
	t.Run("has not: the partition moved to another member", func(t *testing.T) {
		b, _ := start()
		b.assignment(4, "m2", 2, 0)
		b.poll(4, 2, "c")
		require.Empty(t, b.check(t))
	})
}

// Group anomalies are sorted with the others, by the partition they name.
func TestGroupAnomaliesSortedByPartition(t *testing.T) {
	var b hist
	b.send(0, "a", 0)
	b.send(0, "b", 1)
	r1 := b.poll(3, 0, "a", "b")
	r2 := b.poll(3, 0, "a")
	a1 := b.assignment(4, "m1", 1, 1)
	a2 := b.assignment(5, "m2", 1, 1)
	c := b.commit(4, "m1", 1, 5, OutcomeOK)
	f := b.offsetFetch(4, -1)
	got := CheckAnomalies(b.ops)
	var summaries []string
	for _, a := range got {
		summaries = append(summaries, a.TP().String()+" "+summary(a))
	}
	require.Equal(t, []string{
		fmt.Sprintf(`t-0 nonmonotonic-poll at 0 "" ops [%d %d]`, r1, r2),
		fmt.Sprintf(`t-0 lost-commit at 5 "" ops [%d %d]`, c, f),
		fmt.Sprintf(`t-1 double-assignment at -1 "" ops [%d %d]`, a1, a2),
	}, summaries)
}

// FORMAT.md's examples are valid histories that both checkers pass.
func TestFormatExamples(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, `{"id":`) {
			lines = append(lines, l)
		}
	}
	h, err := ReadHistory(strings.NewReader(strings.Join(lines, "\n")))
	require.NoError(t, err)
	require.Len(t, h, 10)
	require.Empty(t, CheckAnomalies(h))
	res := CheckLinearizability(h, 10*time.Second)
	require.Equal(t, VerdictOK, res.Verdict)
	require.Len(t, res.Partitions, 2, "the log of t-0 and group g's t-0")
}

// stale-generation-commit and lost-commit name violations of spec/'s group
// rules: on random small histories, a history they flag has no
// linearization (they never accuse a correct broker), and they flag some.
func TestGroupAnomaliesImplySpecViolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 0))
	flagged := map[string]int{}
	for seed := range 3000 {
		h := randomGroupHistory(rng)
		for _, a := range CheckAnomalies(h) {
			if a.Name == AnomalyDoubleAssignment {
				continue // not a rule of the committed offsets
			}
			flagged[a.Name]++
			require.False(t, bruteForceGroups(h), "seed %d: %s in a legal history %+v", seed, a, h)
		}
	}
	t.Log(flagged)
	require.Positive(t, flagged[AnomalyStaleGenerationCommit])
	require.Positive(t, flagged[AnomalyLostCommit])
}
