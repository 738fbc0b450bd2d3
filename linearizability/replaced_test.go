package linearizability

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// replacedHistory is a coordinator failover in the shape of seed 397 of
// `watermark check --random 1000`: broker 1 coordinates generation 1,
// is paused, broker 2 takes over and accepts a commit of offset 20;
// broker 1 resumes and answers an offset-fetch from the state it had when
// it was replaced (offset 10); broker 2 answers the next fetch (20). Each
// variant edits one thing after it is built.
func replacedHistory() *linHistory {
	var b linHistory
	by := func(op *Op, broker int32) { op.Broker = broker }
	by(b.join(0, "m1", 1, 0, 5), 1)
	by(b.assignment(0, "m1", 1, 6, 8), 1)
	by(b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK), 1)
	by(b.offsetFetch(0, 10, 13, 14), 1)
	// Broker 1 is paused; the member finds broker 2.
	by(b.join(0, "m1", 2, 100, 110), 2)
	by(b.assignment(0, "m1", 2, 111, 112), 2)
	by(b.commit(0, "m1", 2, 20, 120, 125, OutcomeOK), 2)
	// Broker 1 resumes, not yet aware; a member asks it.
	by(b.offsetFetch(1, 10, 200, 201), 1) // op 7
	by(b.offsetFetch(1, 20, 300, 301), 2) // op 8
	return &b
}

// anomaliesOf runs CheckAnomalies' group rules on b's history.
func anomaliesOf(b *linHistory) []string {
	var out []string
	for _, a := range checkGroups(b.ops) {
		out = append(out, fmt.Sprintf("%s ops %v", a.Name, a.Ops))
	}
	return out
}

// A replaced coordinator answers an offset-fetch from the state it had
// when it was replaced (Kafka 4.1's CoordinatorRuntime reads its loaded
// state until it unloads the group): neither checker calls that a lost
// commit. Without the evidence that it was replaced, the same answer is
// one.
// Reference: spec/SEMANTICS.md, "Answers from a replaced coordinator".
func TestReplacedCoordinatorAnswer(t *testing.T) {
	t.Run("quiet: replaced before, another after", func(t *testing.T) {
		b := replacedHistory()
		require.Equal(t, VerdictOK, groupVerdict(t, b))
		require.Empty(t, anomaliesOf(b))
		require.Equal(t, []int64{-1, 10, 20}, replacedAnswers(b.ops)[7])
	})
	t.Run("quiet: nothing committed when it was replaced", func(t *testing.T) {
		b := replacedHistory()
		b.ops[7].Offset = -1
		require.Equal(t, VerdictOK, groupVerdict(t, b))
		require.Empty(t, anomaliesOf(b))
	})
	lost := []string{"lost-commit ops [6 7]"}
	t.Run("fires: no broker recorded", func(t *testing.T) {
		b := replacedHistory()
		for i := range b.ops {
			b.ops[i].Broker = 0
		}
		require.Equal(t, VerdictIllegal, groupVerdict(t, b))
		require.Equal(t, lost, anomaliesOf(b))
	})
	t.Run("fires: never its coordinator before", func(t *testing.T) {
		b := replacedHistory()
		b.ops[7].Broker = 3
		require.Equal(t, VerdictIllegal, groupVerdict(t, b))
		require.Equal(t, lost, anomaliesOf(b))
	})
	t.Run("fires: not replaced in between", func(t *testing.T) {
		b := replacedHistory()
		for i := 4; i < 7; i++ {
			b.ops[i].Broker = 1
		}
		require.Equal(t, VerdictIllegal, groupVerdict(t, b))
		require.Equal(t, lost, anomaliesOf(b))
	})
	t.Run("fires: nobody else answers after", func(t *testing.T) {
		b := replacedHistory()
		b.ops = b.ops[:8]
		require.Equal(t, VerdictIllegal, groupVerdict(t, b))
		require.Equal(t, lost, anomaliesOf(b))
	})
	t.Run("fires: it goes on as the coordinator", func(t *testing.T) {
		// It accepts a commit after its stale answer: it took over with
		// the commit of 20 lost, not a replaced coordinator's answer.
		b := replacedHistory()
		b.ops = b.ops[:8]
		c := b.commit(1, "m1", 2, 30, 210, 215, OutcomeOK)
		c.Broker = 1
		b.offsetFetch(1, 30, 300, 301).Broker = 2
		require.Equal(t, VerdictIllegal, groupVerdict(t, b))
		require.Equal(t, lost, anomaliesOf(b))
	})
	t.Run("fires: an offset nobody committed", func(t *testing.T) {
		b := replacedHistory()
		b.ops[7].Offset = 15
		require.Equal(t, VerdictIllegal, groupVerdict(t, b))
		require.Equal(t, lost, anomaliesOf(b))
	})
}
