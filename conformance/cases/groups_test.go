package cases

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/linearizability"
)

// long-poll's busy-polling bound is not vacuous: the same run with the
// wait cut to nothing polls far more, and the case says so.
func TestLongPollCatchesBusyPolling(t *testing.T) {
	c := caseNamed("long-poll")
	cfg := spec(c, 1)
	res, err := sim.Run(cfg)
	require.NoError(t, err)
	require.NoError(t, requireLongPoll(res))

	// A consumer that does not hold its fetches (a 1 ms wait where the
	// case asks for 5 s) polls in a loop; judged as the case's, it fails.
	cfg.Workload.FetchMaxWaitMs = 1
	res, err = sim.Run(cfg)
	require.NoError(t, err)
	res.Spec.Workload.FetchMaxWaitMs = spec(c, 1).Workload.FetchMaxWaitMs
	require.ErrorContains(t, requireLongPoll(res), "busy polling")

	// Fetches answered a broker tick late (as by a broker that answers held
	// fetches on a timer, not when the HW moves) fail it on the simulator.
	res, err = sim.Run(spec(c, 1))
	require.NoError(t, err)
	late := *res
	late.History = slices.Clone(res.History)
	for i := range late.History {
		if op := &late.History[i]; op.Kind == linearizability.KindFetch && !op.Final {
			op.Return += 15
		}
	}
	require.ErrorContains(t, requireLongPoll(&late), "not answered when the HW moves")
}

// withoutOps returns a copy of r whose history lacks the ops drop matches.
func withoutOps(r *run.Result, drop func(op linearizability.Op) bool) *run.Result {
	c := *r
	c.History = nil
	for _, op := range r.History {
		if !drop(op) {
			c.History = append(c.History, op)
		}
	}
	return &c
}

// The group cases' own expectations catch runs that did not do what the
// case is about, and stay quiet on the runs that did.
func TestGroupCaseExpectationsCatchWhatTheyClaim(t *testing.T) {
	crash := caseNamed("group-member-crash")
	res, err := sim.Run(spec(crash, 1))
	require.NoError(t, err)
	require.NoError(t, requireTakeover(res))
	require.NoError(t, requireConsumedToEnd(res))
	require.NoError(t, requireCommitsEverywhere(res))

	noT0Commits := withoutOps(res, func(op linearizability.Op) bool {
		return op.Kind == linearizability.KindCommit && op.Partition == 0
	})
	require.ErrorContains(t, requireConsumedToEnd(noT0Commits), "t-0 committed 0")
	require.ErrorContains(t, requireCommitsEverywhere(noT0Commits), "t-0")
	noAssignments := withoutOps(res, func(op linearizability.Op) bool { return op.Kind == linearizability.KindAssignment })
	require.ErrorContains(t, requireTakeover(noAssignments), "no member that held partitions crashed")
	// A coordinator that never expires a dead member: the others are not
	// given its partitions until it comes back.
	var crashed run.Note
	for _, n := range res.Notes {
		if n.Fault == run.FaultCrashConsumer && n.Kind == run.NoteFault && n.Member != "" && len(lastAssignment(res.History, n.Member, n.AtMs)) > 0 {
			crashed = n
			break
		}
	}
	require.NotEmpty(t, crashed.Member)
	neverExpired := withoutOps(res, func(op linearizability.Op) bool {
		return op.Kind == linearizability.KindAssignment && op.Member != crashed.Member && op.Return > crashed.AtMs
	})
	require.ErrorContains(t, requireTakeover(neverExpired), "member "+crashed.Member+" crashed at")

	failover := caseNamed("coordinator-failover")
	res, err = sim.Run(spec(failover, 1))
	require.NoError(t, err)
	require.NoError(t, requireResumedFromCommits(res))
	// A commit after the crash that went back below what was committed.
	var crashAt int64 = -1
	for _, n := range res.Notes {
		if n.Kind == run.NoteFault && n.Fault == run.FaultCrash {
			crashAt = n.AtMs
			break
		}
	}
	require.GreaterOrEqual(t, crashAt, int64(0))
	back := *res
	back.History = append([]linearizability.Op(nil), res.History...)
	for i := range back.History {
		op := &back.History[i]
		if op.Kind == linearizability.KindCommit && op.Outcome == linearizability.OutcomeOK && op.Call > crashAt {
			op.Offset = 0
			break
		}
	}
	require.ErrorContains(t, requireResumedFromCommits(&back), "below the")

	// offsets-write-timeout is about writes that timed out: a run whose
	// coordinator never saw one proves nothing.
	timeout := caseNamed("offsets-write-timeout")
	res, err = sim.Run(spec(timeout, 1))
	require.NoError(t, err)
	require.NoError(t, timeout.Require(res))
	noTimeout := *res
	noTimeout.Reached = maps.Clone(res.Reached)
	delete(noTimeout.Reached, run.SitOffsetsAppendFailed)
	require.ErrorContains(t, timeout.Require(&noTimeout), "never reached offsets-append-failed")

	reconsume := caseNamed("reconsume")
	res, err = sim.Run(spec(reconsume, 1))
	require.NoError(t, err)
	require.NoError(t, requireReread(res))
	noSeeks := *res
	noSeeks.Stats.Seeks = 0
	require.ErrorContains(t, requireReread(&noSeeks), "no member sought back")
	// Keep each record's first read only: nothing was read twice.
	seen := map[string]bool{}
	once := withoutOps(res, func(op linearizability.Op) bool {
		if op.Kind != linearizability.KindFetch || op.Final {
			return false
		}
		for _, rec := range op.Records {
			k := fmt.Sprint(op.Client, op.TP(), rec.Offset)
			if seen[k] {
				return true
			}
			seen[k] = true
		}
		return false
	})
	require.ErrorContains(t, requireReread(once), "no record was read twice")
}

// caseNamed is the case called name.
func caseNamed(name string) *Case {
	for i := range Cases {
		if Cases[i].Name == name {
			return &Cases[i]
		}
	}
	panic("no case " + name)
}

// spec is c's run for seed, as the kit runs it.
func spec(c *Case, seed uint64) run.Spec {
	s := c.Spec(seed)
	s.ContinueAfterViolation = true
	return s
}
