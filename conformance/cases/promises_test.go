package cases

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/linearizability"
)

// min-isr-refuses holds on the reference; the same run with one send
// acknowledged while both followers were down is a broken promise (not
// "not exercised"), and one without any refusal is not exercised.
func TestMinISRRefusesIsABrokenPromise(t *testing.T) {
	c := caseNamed("min-isr-refuses")
	res, err := sim.Run(spec(c, 1))
	require.NoError(t, err)
	require.NoError(t, c.Require(res))

	late := *res
	late.History = append([]linearizability.Op(nil), res.History...)
	late.History = append(late.History, linearizability.Op{Kind: linearizability.KindProduce, Outcome: linearizability.OutcomeOK,
		Call: 6000, Return: 6100, Topic: "t", Offset: 999})
	err = c.Require(&late)
	var broken *BrokenPromise
	require.True(t, errors.As(err, &broken), "want a broken promise, got %v", err)
	require.Equal(t, PromiseMinISR, broken.Name)

	none := *res
	none.History = nil
	err = c.Require(&none)
	require.Error(t, err)
	require.False(t, errors.As(err, &broken), "no refusal seen: not exercised, not broken")
}

// long-poll's failures are broken promises: busy polling is one.
func TestLongPollFailuresAreBrokenPromises(t *testing.T) {
	c := caseNamed("long-poll")
	cfg := spec(c, 1)
	cfg.Workload.FetchMaxWaitMs = 1
	res, err := sim.Run(cfg)
	require.NoError(t, err)
	res.Spec.Workload.FetchMaxWaitMs = spec(c, 1).Workload.FetchMaxWaitMs
	var broken *BrokenPromise
	require.True(t, errors.As(requireLongPoll(res), &broken))
	require.Equal(t, PromiseLongPollBusy, broken.Name)
}

// A failover is judged by the session timeout the run says the cluster
// has (the cluster's own on --target kafka): a broker whose leader was
// replaced 11 s after its crash holds against Kafka's 9 s sessions and
// breaks its promise against the harness's 1.5 s ones, the message giving
// the time measured. A run whose only crash comes too late to judge is
// no pass.
func TestFailoverJudgedByTheDeclaredSessionTimeout(t *testing.T) {
	res := func(sessionMs int64, crashAt int64) *run.Result {
		spec := run.DefaultSpec(1)
		spec.Controller.SessionTimeoutMs, spec.DurationMs = sessionMs, 30000
		r := &run.Result{Spec: spec, Live: true}
		r.Stats.Faults = 1
		r.Notes = []run.Note{
			{AtMs: crashAt, Kind: run.NoteFault, Fault: run.FaultCrash, Node: 1},
			{AtMs: crashAt + 11000, Kind: run.NoteElection, Leader: 2},
		}
		return r
	}
	require.NoError(t, requireFailover(res(9000, 1000)))
	err := requireFailover(res(1500, 1000))
	var broken *BrokenPromise
	require.ErrorAs(t, err, &broken)
	require.Equal(t, PromiseFailover, broken.Name)
	require.Contains(t, err.Error(), "elected only after 11000 ms, past the bound of 3000 ms (session timeout 1500 ms)")

	err = requireFailover(res(9000, 20000))
	require.Error(t, err)
	require.NotErrorAs(t, err, &broken, "too late to judge: not exercised, not broken")
	require.Contains(t, err.Error(), "no failover could be judged")
}

// epoch-unknown-to-leader holds on the reference, broker 2 back in the ISR
// at the end; the same run with a live replica still out of the ISR (a
// follower told of its divergence again and again, as a wrong truncation
// on the fetch path leaves it) is a broken promise.
func TestEpochUnknownToLeaderNeedsTheFollowerBack(t *testing.T) {
	c := caseNamed("epoch-unknown-to-leader")
	res, err := sim.Run(spec(c, 1))
	require.NoError(t, err)
	require.NoError(t, c.Require(res))
	require.Empty(t, res.Stats.OutOfISRAtEnd)

	stuck := *res
	stuck.Stats.OutOfISRAtEnd = []string{"t-0/2"}
	err = c.Require(&stuck)
	var broken *BrokenPromise
	require.True(t, errors.As(err, &broken), "want a broken promise, got %v", err)
	require.Equal(t, PromiseCaughtUp, broken.Name)
}

// A run whose settings allow an unclean election or recovery, or whose
// faults may cost a correct broker committed records (LossByFault), is
// judged as a case that allows loss, whatever the case says; other runs
// are not.
func TestLossByDesignAllowsTheConsequencesOfLoss(t *testing.T) {
	c := Case{Name: "x", Allowed: []string{linearizability.AnomalyReprocessed}}
	r := &run.Result{Spec: run.DefaultSpec(1)}
	assert.False(t, c.LossAllowedIn(r))
	assert.Equal(t, []string{linearizability.AnomalyReprocessed}, c.AllowedIn(r))
	byFault := *r
	byFault.LossByFault = []string{"damage-log on broker 1, t-0's only ISR member, ..."}
	r.Spec.Controller.UncleanRecovery = settings.RecoveryAggressive
	for _, r := range []*run.Result{r, &byFault} {
		assert.True(t, c.LossAllowedIn(r))
		for _, a := range UncleanAnomalies {
			assert.Contains(t, c.AllowedIn(r), a)
		}
		assert.Contains(t, c.AllowedIn(r), linearizability.AnomalyReprocessed)
	}
	assert.Len(t, c.Allowed, 1, "AllowedIn does not change the case")
}
