package cases

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/sim"
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
