package judge

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

// history: an acks=all write of "a" acknowledged at offset 0, then a final
// read of the partition. With lost, the final read finds "b" at offset 0
// instead: an acknowledged write gone.
func history(lost bool) []linearizability.Op {
	got := "a"
	if lost {
		got = "b"
	}
	return []linearizability.Op{
		{ID: 0, Client: 1, Kind: linearizability.KindProduce, Topic: "t", Call: 1, Return: 2, Outcome: linearizability.OutcomeOK, Value: "a", Acks: -1, Offset: 0},
		{ID: 1, Client: 2, Kind: linearizability.KindProduce, Topic: "t", Call: 1, Return: 2, Outcome: linearizability.OutcomeUnknown, Value: "b", Acks: -1, Offset: -1},
		{ID: 2, Client: 3, Kind: linearizability.KindFetch, Topic: "t", Call: 3, Return: 4, Outcome: linearizability.OutcomeOK, Offset: 0, HW: 1, Final: true,
			Records: []linearizability.Record{{Offset: 0, Value: got}}},
	}
}

func result(lost bool) *run.Result {
	r := &run.Result{Spec: run.DefaultSpec(1), History: history(lost)}
	r.Stats.FinalReadDone = true
	return r
}

// The verdict rules of Judge, each shown firing and quiet.
func TestJudgeVerdicts(t *testing.T) {
	strict := &cases.Case{Name: "strict"}
	r := Judge(strict, result(false), 0)
	require.Equal(t, Holds, r.Verdict, "a clean history holds: %v", r.Reasons)
	assert.Empty(t, r.Found)

	t.Run("an anomaly the case does not allow is a violation", func(t *testing.T) {
		r := Judge(strict, result(true), 0)
		assert.Equal(t, Violated, r.Verdict)
		assert.NotEmpty(t, r.Found)
	})
	t.Run("an anomaly the case allows is counted, not held against it", func(t *testing.T) {
		found := Judge(strict, result(true), 0)
		names := map[string]bool{}
		for _, a := range found.Found {
			names[a.Name] = true
		}
		lenient := &cases.Case{Name: "lenient", LossAllowed: true}
		for n := range names {
			lenient.Allowed = append(lenient.Allowed, n)
		}
		r := Judge(lenient, result(true), 0)
		assert.Equal(t, Holds, r.Verdict, "%v", r.Reasons)
		assert.Len(t, r.Allowed, len(found.Found))
	})
	t.Run("a failed invariant is a violation", func(t *testing.T) {
		res := result(false)
		res.Violations = []*run.Violation{{Invariant: run.InvStrongISR, Detail: "x"}}
		assert.Equal(t, Violated, Judge(strict, res, 0).Verdict)
		// A case that allows loss tolerates invariants, except those it must hold.
		lossy := &cases.Case{Name: "lossy", LossAllowed: true}
		assert.Equal(t, Holds, Judge(lossy, res, 0).Verdict)
		lossy.MustHold = []string{run.InvStrongISR}
		assert.Equal(t, Violated, Judge(lossy, res, 0).Verdict)
	})
	t.Run("an unfinished final read leaves the verdict unknown", func(t *testing.T) {
		res := result(false)
		res.Stats.FinalReadDone = false
		assert.Equal(t, Unknown, Judge(strict, res, 0).Verdict)
		res.Stats.OfflineAtEnd = []string{"t-0"}
		r := Judge(strict, res, 0)
		assert.Equal(t, Unknown, r.Verdict)
		assert.Contains(t, strings.Join(r.Reasons, "\n"), "t-0 had no leader when the run ended", "an offline partition is named")
		res.Spec.NoFinalRead = true
		assert.Equal(t, Holds, Judge(strict, res, 0).Verdict, "a run that asks for no final read is not short of one")
	})
	t.Run("a broken promise stays a violation when the final read is missing", func(t *testing.T) {
		res := result(true)
		res.Stats.FinalReadDone = false
		assert.Equal(t, Violated, Judge(strict, res, 0).Verdict)
	})
	t.Run("trace validation failing is a violation", func(t *testing.T) {
		res := result(false)
		res.Protocol = &run.ProtocolReport{Failure: "step 3: HW 2 past the model's 1\nmore"}
		r := Judge(strict, res, 0)
		assert.Equal(t, Violated, r.Verdict)
		assert.Contains(t, r.Reasons, "trace validation: step 3: HW 2 past the model's 1")
	})
	t.Run("a case expectation not met: violated in the simulator, unknown live", func(t *testing.T) {
		c := &cases.Case{Name: "needs", Require: func(*run.Result) error { return errors.New("no leader crashed") }}
		res := result(false)
		assert.Equal(t, Violated, Judge(c, res, 0).Verdict)
		res.Live = true
		assert.Equal(t, Unknown, Judge(c, res, 0).Verdict)
		c.Require = func(*run.Result) error { return nil }
		assert.Equal(t, Holds, Judge(c, res, 0).Verdict)
	})
}
