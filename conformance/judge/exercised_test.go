package judge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

// refused is a run in which the broker answered every write with an
// error and every read with nothing, its final read done: nothing any case
// promises was tested.
func refused(spec run.Spec, live bool) *run.Result {
	h := []linearizability.Op{
		{ID: 0, Client: 1, Kind: linearizability.KindProduce, Topic: "t", Call: 1, Return: 2, Outcome: linearizability.OutcomeFail, Value: "a", Acks: -1, Offset: -1, Error: "UNSUPPORTED_VERSION"},
		{ID: 1, Client: 2, Kind: linearizability.KindFetch, Topic: "t", Call: 3, Return: 4, Outcome: linearizability.OutcomeOK, Offset: 0, HW: 0, Final: true},
	}
	if spec.Workload.Group != "" {
		h = append(h, linearizability.Op{ID: 2, Client: 3, Kind: linearizability.KindCommit, Group: spec.Workload.Group, Topic: "t",
			Call: 5, Return: 6, Outcome: linearizability.OutcomeFail, Offset: 0})
	}
	r := &run.Result{Spec: spec, History: h, Live: live}
	r.Stats.FinalReadDone = true
	return r
}

// No case holds on a run that tested nothing it promises: every case, on
// real processes, is UNKNOWN with the reason (or VIOLATED where the refusals
// themselves break its promise: sends must succeed with no fault), and on
// the simulator VIOLATED (a case that can pass without writes is a broken
// case).
func TestNoCaseHoldsVacuously(t *testing.T) {
	for i := range cases.Cases {
		c := &cases.Cases[i]
		t.Run(c.Name, func(t *testing.T) {
			spec := c.Spec(1)
			live := Judge(c, refused(spec, true), 0)
			assert.Contains(t, []Verdict{Unknown, Violated}, live.Verdict, "%v", live.Reasons)
			assert.True(t, hasReason(live, "tested nothing its case promises"), "%v", live.Reasons)
			sim := Judge(c, refused(spec, false), 0)
			assert.Equal(t, Violated, sim.Verdict, "%v", sim.Reasons)
		})
	}
}

// The precondition names what is missing, and is quiet on a run that has it.
func TestExercised(t *testing.T) {
	spec := run.DefaultSpec(1)
	spec.Workload.Group, spec.Workload.GroupConsumers, spec.Workload.CommitMode = "g", 1, run.CommitAfterProcess
	err := exercised(refused(spec, true))
	require.Error(t, err)
	for _, want := range []string{"no write of its", "no read returned a record", "group g had no commit accepted"} {
		assert.Contains(t, err.Error(), want)
	}
	ok := &run.Result{Spec: run.DefaultSpec(1), History: history(false)}
	assert.NoError(t, exercised(ok))
}

func hasReason(r *RunResult, s string) bool {
	for _, reason := range r.Reasons {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return false
}

// A commit of unknown outcome that a later offset-fetch shows was accepted
// counts as an accepted commit; one that nothing shows does not
// (`check --random 2000`, seed 1491: every answer timed out, yet the next
// member fetched the offset).
func TestExercisedByACommitAnOffsetFetchShows(t *testing.T) {
	spec := run.DefaultSpec(1)
	spec.Workload.Group, spec.Workload.GroupConsumers, spec.Workload.CommitMode = "g", 1, run.CommitAfterProcess
	h := history(false)
	n := len(h)
	h = append(h,
		linearizability.Op{ID: n, Kind: linearizability.KindCommit, Group: "g", Topic: "t", Offset: 10, Generation: 1, Member: "m",
			Call: 100, Return: 200, Outcome: linearizability.OutcomeUnknown, Code: 15},
		linearizability.Op{ID: n + 1, Kind: linearizability.KindOffsetFetch, Group: "g", Topic: "t", Offset: 9, Call: 300, Return: 310, Outcome: linearizability.OutcomeOK})
	res := &run.Result{Spec: spec, History: h}
	err := exercised(res)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "group g had no commit accepted")
	h[n+1].Offset = 10
	assert.NoError(t, exercised(res))
}
