package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A quorum of three controllers runs the same cluster: broker faults
// under it break no invariant, and every run replays from its seed.
func TestThreeControllersHoldUnderBrokerFaults(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		cfg := faulty(seed)
		cfg.Quorum.Voters = 3
		res, err := Run(cfg)
		require.NoError(t, err)
		if v := firstViolation(res); v != nil {
			t.Fatalf("%v\n%s, quorum.controllers=3\nlast steps:\n%s", v, replay(cfg), join(v.Trace))
		}
		require.True(t, res.Stats.FinalReadDone, "seed %d: the final read did not finish", seed)
		again, err := Run(cfg)
		require.NoError(t, err)
		require.Equal(t, res.TraceHash, again.TraceHash, "seed %d: two runs differ", seed)
	}
}
