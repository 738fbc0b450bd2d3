package cases

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
)

// unclean-recovery holds on the reference in both strategies, having
// chosen between two live replicas; a recovery that elected a shorter
// replica than another live one is a broken promise, and a run in which
// no recovery chose between two is not exercised.
// Reference: KIP-966, Unclean Recovery.
func TestUncleanRecoveryElectsTheLongestOrBreaksItsPromise(t *testing.T) {
	for _, name := range []string{"unclean-recovery/aggressive", "unclean-recovery/balanced"} {
		c := caseNamed(name)
		res, err := sim.Run(spec(c, 1))
		require.NoError(t, err, name)
		require.NoError(t, c.Require(res), name)
		assert.Equal(t, 1, res.Stats.RecoveryElections, name)
		assert.Positive(t, res.Reached[run.SitRecoveryChoice], name)

		short := *res
		short.Stats.RecoveryNotLongest = 1
		var broken *BrokenPromise
		require.True(t, errors.As(c.Require(&short), &broken), name)
		assert.Equal(t, PromiseRecoveryLongest, broken.Name)

		none := *res
		none.Reached = nil
		err = c.Require(&none)
		require.Error(t, err, name)
		assert.False(t, errors.As(err, &broken), "%s: no choice made: not exercised, not broken", name)
	}
}

// The damage cases strike where recovery can see the loss, so none of
// their runs counts as one that may lose committed records by its faults
// (run.Result.LossByFault): they keep their promise that nothing
// committed is lost.
// Reference: spec/SEMANTICS.md, Durability ("Lost data").
func TestDamageCasesAreNotLossByFault(t *testing.T) {
	for _, name := range []string{"damaged-log", "damaged-last-isr-member", "clean-stop-damage"} {
		c := caseNamed(name)
		for seed := uint64(1); seed <= 4; seed++ {
			res, err := sim.Run(spec(c, seed))
			require.NoError(t, err, name)
			require.Positive(t, res.Stats.DamagedLogs, "%s seed %d", name, seed)
			require.Empty(t, res.LossByFault, "%s seed %d", name, seed)
			require.False(t, c.LossAllowedIn(res), "%s seed %d", name, seed)
		}
	}
}
