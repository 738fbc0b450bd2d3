package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/linearizability"
)

// The delivery-level cases judge what the other one allows: an
// at-least-once run has reprocessing, which the at-most-once case refuses,
// and an at-most-once run has gaps, which the at-least-once case refuses.
// So neither case can hold by not looking.
func TestConsumerDeliveryCasesCatchTheOtherLevel(t *testing.T) {
	least, most := caseNamed("at-least-once-consumer"), caseNamed("at-most-once-consumer")

	res, err := sim.Run(least.config(1, Options{}))
	require.NoError(t, err)
	require.Equal(t, Holds, Judge(least, res, time.Minute).Verdict)
	r := Judge(most, res, time.Minute)
	require.Equal(t, Violated, r.Verdict)
	require.True(t, hasAnomaly(r.Found, linearizability.AnomalyReprocessed), "%v", r.Reasons)

	res, err = sim.Run(most.config(1, Options{}))
	require.NoError(t, err)
	require.Equal(t, Holds, Judge(most, res, time.Minute).Verdict)
	r = Judge(least, res, time.Minute)
	require.Equal(t, Violated, r.Verdict)
	require.True(t, hasAnomaly(r.Found, linearizability.AnomalyUnprocessed), "%v", r.Reasons)
}

// long-poll's busy-polling bound is not vacuous: the same run with the
// wait cut to nothing polls far more, and the case says so.
func TestLongPollCatchesBusyPolling(t *testing.T) {
	c := caseNamed("long-poll")
	cfg := c.config(1, Options{})
	res, err := sim.Run(cfg)
	require.NoError(t, err)
	require.NoError(t, requireLongPoll(res))

	// A consumer that does not hold its fetches (a 1 ms wait where the
	// case asks for 5 s) polls in a loop; judged as the case's, it fails.
	cfg.Workload.FetchMaxWaitMs = 1
	res, err = sim.Run(cfg)
	require.NoError(t, err)
	res.Config.Workload.FetchMaxWaitMs = c.config(1, Options{}).Workload.FetchMaxWaitMs
	require.ErrorContains(t, requireLongPoll(res), "busy polling")
}
