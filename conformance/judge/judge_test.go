package judge

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

// A case's summary keeps anomalies, invariant failures and porcupine's
// verdict apart, each counted where the case puts it: against it, or
// among what it tolerates.
func TestCaseResultCountsEachKindApart(t *testing.T) {
	c := &cases.Case{Name: "c"}
	strict := NewCaseResult(c)
	r := &RunResult{Case: "c", Seed: 1, Verdict: Violated,
		Found:           []linearizability.Anomaly{{Name: "lost-write"}, {Name: "lost-write"}, {Name: "unseen"}},
		Allowed:         []linearizability.Anomaly{{Name: "duplicate"}},
		Invariants:      []*run.Violation{{Invariant: run.InvStrongISR}},
		Linearizability: linearizability.LinearizabilityResult{Verdict: linearizability.VerdictIllegal},
	}
	strict.Add(r, false)
	assert.Equal(t, Violated, strict.Verdict)
	assert.Equal(t, "lost-write x2, unseen x1, invariant StrongIsr x1, not linearizable x1", strict.Counts(false))
	assert.Equal(t, "duplicate x1", strict.Counts(true))
	assert.Equal(t, []*RunResult{r}, strict.Failed)
	assert.Equal(t, 3, strict.Lost, "the ledger: lost-write and unseen, not duplicate")

	lossy := NewCaseResult(c)
	lossy.Add(r, true)
	assert.Equal(t, "lost-write x2, unseen x1", lossy.Counts(false))
	assert.Equal(t, "duplicate x1, invariant StrongIsr x1, not linearizable x1", lossy.Counts(true))

	quiet := NewCaseResult(c)
	ok := linearizability.Op{Kind: linearizability.KindProduce, Outcome: linearizability.OutcomeOK}
	failed := linearizability.Op{Kind: linearizability.KindProduce, Outcome: linearizability.OutcomeFail}
	quiet.Add(&RunResult{Case: "c", Seed: 2, Verdict: Holds, Run: &run.Result{History: []linearizability.Op{ok, failed, ok}}}, false)
	assert.Equal(t, Holds, quiet.Verdict)
	assert.Equal(t, 2, quiet.Acknowledged)
	assert.Zero(t, quiet.Lost)
	assert.Equal(t, "-", quiet.Counts(false))
	assert.Empty(t, quiet.Failed)
}

// A report's verdict is its worst case's; a check where every case was
// skipped is skipped, never a pass.
func TestReportVerdictIsTheWorst(t *testing.T) {
	held := &CaseResult{Verdict: Holds}
	skipped := &CaseResult{Verdict: Skipped}
	unknown := &CaseResult{Verdict: Unknown}
	rep := &Report{Cases: []*CaseResult{skipped, held}}
	rep.Finish()
	assert.Equal(t, Holds, rep.Verdict)
	rep = &Report{Cases: []*CaseResult{skipped}}
	rep.Finish()
	assert.Equal(t, Skipped, rep.Verdict)
	rep = &Report{Cases: []*CaseResult{held, unknown}}
	rep.Finish()
	assert.Equal(t, Unknown, rep.Verdict)
}
