package search

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/live"
	"github.com/watermarkhq/watermark/conformance/run"
)

// ForLive turns every random schedule into one real processes can carry
// out, keeps the faults they can take, and is deterministic; without it,
// many schedules cannot run on a cluster at all.
func TestForLiveMakesSchedulesRunnable(t *testing.T) {
	opts := ScheduleOptions{AllKinds: true, NoFailpoints: true}
	unrunnable, clean, crashes := 0, 0, 0
	for seed := uint64(1); seed <= 300; seed++ {
		s := RandomSchedule(seed, opts)
		if live.Unsupported(s) != "" {
			unrunnable++
		}
		before := len(s.Faults)
		kept := 0
		for _, f := range s.Faults {
			if f.Kind != run.FaultMessages && f.Kind != run.FaultPowerLossAll {
				kept++
			}
		}
		ForLive(&s)
		require.Empty(t, live.Unsupported(s), "seed %d", seed)
		require.Len(t, s.Faults, kept, "seed %d: only single-message faults and whole-cluster power loss go (of %d)", seed, before)
		again := RandomSchedule(seed, opts)
		ForLive(&again)
		require.Equal(t, s, again, "seed %d: not deterministic", seed)
		for _, f := range s.Faults {
			switch f.Kind {
			case run.FaultStop, run.FaultRollingStop:
				clean++
			case run.FaultCrash:
				crashes++
			}
		}
	}
	require.Positive(t, unrunnable, "no drawn schedule needed ForLive: the test proves nothing")
	require.Positive(t, clean, "no clean stop survived")
	require.Positive(t, crashes, "no crash survived")
}
