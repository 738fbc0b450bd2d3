package search

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/report"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/failpoints"
	"github.com/watermarkhq/watermark/impl/partition"
)

func TestRandomScheduleIsAPureFunctionOfTheSeed(t *testing.T) {
	assert.Equal(t, RandomSchedule(7, ScheduleOptions{}), RandomSchedule(7, ScheduleOptions{}))
	assert.NotEqual(t, RandomSchedule(7, ScheduleOptions{}).Faults, RandomSchedule(8, ScheduleOptions{}).Faults)
}

func TestRandomScheduleStaysInItsLimits(t *testing.T) {
	kinds := map[run.FaultKind]bool{}
	withFailpoints := 0
	for seed := uint64(1); seed <= 300; seed++ {
		cfg := RandomSchedule(seed, ScheduleOptions{})
		require.NoError(t, cfg.Validate(), "seed %d", seed)
		assert.Equal(t, seed, cfg.Seed)
		assert.Contains(t, []int{2, 3}, cfg.Brokers)
		rf := cfg.Topics[0].ReplicationFactor
		assert.True(t, rf >= 2 && rf <= cfg.Brokers, "seed %d: RF %d", seed, rf)
		assert.Contains(t, []int{1, 2}, cfg.Broker.MinInsyncReplicas)
		// The safe reference settings: the variant is applied on top.
		assert.Equal(t, partition.TruncateToEpoch, cfg.Broker.Truncation)
		assert.False(t, cfg.Controller.KeepISROnRestart || cfg.Controller.UncleanLeaderElection)
		assert.Equal(t, partition.AcksAll, cfg.Workload.Acks)

		assert.True(t, len(cfg.Faults) >= 1 && len(cfg.Faults) <= 4)
		assert.LessOrEqual(t, len(cfg.Failpoints), 3)
		powerLosses := 0
		for _, f := range cfg.Faults {
			kinds[f.Kind] = true
			if f.Kind == run.FaultPowerLoss {
				powerLosses++
			}
			assert.Less(t, f.When.AtMs+f.ForMs, cfg.DurationMs, "seed %d: %+v outlasts the workload", seed, f)
		}
		for _, fp := range cfg.Failpoints {
			assert.True(t, strings.HasPrefix(fp.Term, `1*return("`), "single-shot term %q", fp.Term)
			if strings.Contains(fp.Term, "powerloss") {
				powerLosses++
			}
		}
		assert.LessOrEqual(t, powerLosses, 1, "seed %d", seed)
		if powerLosses > 0 {
			assert.Equal(t, 3, rf, "seed %d: power loss only with RF 3", seed)
			assert.Equal(t, 2, cfg.Broker.MinInsyncReplicas, "seed %d: power loss only with min ISR 2", seed)
			touched := map[int]bool{}
			for _, f := range cfg.Faults {
				assert.Equal(t, run.RoleAny, f.Role, "seed %d", seed)
				touched[f.Node] = true
			}
			for _, fp := range cfg.Failpoints {
				assert.NotZero(t, fp.Node, "seed %d", seed)
				touched[fp.Node] = true
				if _, target, ok := strings.Cut(strings.TrimSuffix(fp.Term, `")`), ":"); ok {
					touched[int(target[0]-'0')] = true
				}
			}
			assert.LessOrEqual(t, len(touched), 2, "seed %d: a power-loss run touches two brokers: %v", seed, touched)
		}
		if len(cfg.Failpoints) > 0 {
			withFailpoints++
		}
		assert.Empty(t, RandomSchedule(seed, ScheduleOptions{NoFailpoints: true}).Failpoints)
	}
	assert.Len(t, kinds, 5, "every fault kind is drawn: %v", kinds)
	assert.Greater(t, withFailpoints, 100)
}

// Search finds the HW-truncation bug within a few schedules, and the same
// schedules (and more) hold on the safe reference settings.
func TestSearchFindsHWTruncationAndTheSafeSettingsHold(t *testing.T) {
	failpoints.Require(t)
	hw, err := variant.Runnable("hw")
	require.NoError(t, err)
	found, tries, err := Search(hw, Options{FirstSeed: 1, Tries: 20, CheckTimeout: 30 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, found, "nothing found in %d tries", tries)
	assert.Equal(t, judge.Violated, found.Verdict)
	assert.Equal(t, "search-hw", found.Case)
	assert.Equal(t, partition.TruncateToHW, found.Run.Spec.Broker.Truncation)
	assert.Equal(t, uint64(tries), found.Seed, "seeds start at 1")

	// The run file of the find replays it exactly.
	f, err := run.ParseFile("run.yaml", report.RunFileFor(found, nil).Marshal())
	require.NoError(t, err)
	res, err := sim.Run(f.Spec)
	require.NoError(t, err)
	again := judge.Judge(cases.FromFile(f), res, 30*time.Second)
	assert.Equal(t, judge.Violated, again.Verdict)
	assert.Equal(t, report.FoundNames(found, false), report.FoundNames(again, false))

	const safeSeeds = 50
	var notHolding []uint64
	none, n, err := Search(variant.Safe, Options{FirstSeed: 1, Tries: safeSeeds, CheckTimeout: 30 * time.Second,
		Progress: func(_ int, r *judge.RunResult) {
			if r.Verdict != judge.Holds {
				notHolding = append(notHolding, r.Seed)
			}
		}})
	require.NoError(t, err)
	assert.Nil(t, none)
	assert.Equal(t, safeSeeds, n)
	assert.Empty(t, notHolding, "seeds not holding on the safe settings")
}

// Without failpoints (a plain build) the faults alone find acks=1's loss.
func TestSearchWithoutFailpoints(t *testing.T) {
	v, err := variant.Runnable("acks1")
	require.NoError(t, err)
	found, tries, err := Search(v, Options{FirstSeed: 1, Tries: 30, CheckTimeout: 30 * time.Second,
		Schedule: ScheduleOptions{NoFailpoints: true}})
	require.NoError(t, err)
	require.NotNil(t, found, "nothing found in %d tries", tries)
	assert.Empty(t, found.Run.Spec.Failpoints)
	assert.Equal(t, judge.Violated, found.Verdict)
}

// KAFKA-6361 by random search: leaders change in quick succession with
// unclean election on, and epoch truncation without KIP-279's rule lets
// replicas diverge; the very same schedules on the fixed truncation
// (epoch) lose what unclean election loses by design, but never diverge.
// Reference: KAFKA-6361, KIP-279.
func TestSearchFindsKAFKA6361AndEpochTruncationDoesNotDiverge(t *testing.T) {
	failpoints.Require(t)
	v, err := variant.Runnable("epoch-kip101")
	require.NoError(t, err)
	found, tries, err := Search(v, Options{FirstSeed: 1, Tries: 150, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.NotNil(t, found, "150 fast-failover schedules did not find KAFKA-6361")
	diverged := false
	for _, inv := range found.Invariants {
		diverged = diverged || inv.Invariant == run.InvLogMatching
	}
	assert.True(t, diverged, "the find must be a divergence: %v", found.Reasons)

	fixed := v
	fixed.Apply = func(cfg *run.Spec) {
		v.Apply(cfg)
		cfg.Broker.Truncation = partition.TruncateToEpoch
	}
	none, n, err := Search(fixed, Options{FirstSeed: 1, Tries: tries + 40, CheckTimeout: time.Minute})
	require.NoError(t, err)
	if none != nil {
		t.Fatalf("epoch truncation diverged on seed %d: %v", none.Seed, none.Reasons)
	}
	require.Equal(t, tries+40, n)
}

// KAFKA-7164 by random search: a follower that missed an epoch follows the
// same leader again in a newer one and, without truncating, keeps a tail
// the leader no longer has (divergence at offset 0 in the JIRA). Epoch
// truncation on the same schedules never diverges.
// Reference: KAFKA-7164.
func TestSearchFindsKAFKA7164AndEpochTruncationDoesNotDiverge(t *testing.T) {
	failpoints.Require(t)
	v, err := variant.Runnable("epoch-no-bump")
	require.NoError(t, err)
	// The bug needs a rare interleaving: seed 283 found it before the
	// controller quorum, 843 since (its answers shift every draw).
	found, tries, err := Search(v, Options{FirstSeed: 1, Tries: 1000, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.NotNil(t, found, "1000 fast-failover schedules did not find KAFKA-7164")
	assert.Contains(t, strings.Join(found.Reasons, "\n"), "LogMatching")

	fixed := v
	fixed.Apply = func(cfg *run.Spec) {
		v.Apply(cfg)
		cfg.Broker.Truncation = partition.TruncateToEpoch
	}
	none, _, err := Search(fixed, Options{FirstSeed: 1, Tries: min(tries, 300), CheckTimeout: time.Minute})
	require.NoError(t, err)
	if none != nil {
		t.Fatalf("epoch truncation diverged on seed %d: %v", none.Seed, none.Reasons)
	}
}
