package sim

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/partition"
)

// violated lists the invariants a run broke, first failures only.
func violated(res *run.Result) []string {
	var out []string
	for _, v := range res.Violations {
		out = append(out, v.Invariant)
	}
	return out
}

// KIP-101 without KIP-279's end-offset rule: the follower that led an
// epoch the new leader never saw is told an end offset past the point where
// the logs diverge, keeps its record and the replicas diverge for good.
// Reference: KAFKA-6361.
func TestKAFKA6361WithKIP101Truncation(t *testing.T) {
	requireFailpoints(t)
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := cases.KAFKA6361(seed, partition.TruncateToEpochKIP101)
		cfg.ContinueAfterViolation = true
		res, err := Run(cfg)
		require.NoError(t, err)
		require.GreaterOrEqual(t, res.Stats.FailpointsFired, 2, "the scenario's failpoints must fire; %s", replay(cfg))
		require.True(t, slices.Contains(violated(res), run.InvLogMatching), "epoch-kip101 must diverge (got %v); %s", violated(res), replay(cfg))
	}
}

// The same schedule with KIP-279: the leader names the floor epoch and the
// follower truncates to its own end of it.
// Reference: KAFKA-6361, KIP-279.
func TestKAFKA6361FixedByKIP279(t *testing.T) {
	requireFailpoints(t)
	for _, tr := range epochPaths {
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := cases.KAFKA6361(seed, tr)
			res, err := Run(cfg)
			require.NoError(t, err)
			require.GreaterOrEqual(t, res.Stats.FailpointsFired, 2, "the scenario's failpoints must fire; %s", replay(cfg))
			if firstViolation(res) != nil {
				t.Fatalf("%s: %v\n%s", tr, firstViolation(res), replay(cfg))
			}
		}
	}
}

// epochPaths are the two safe truncation rules: on fetch (the default,
// KAFKA-10554) and by OffsetsForLeaderEpoch first (epoch-query).
var epochPaths = []partition.Truncation{partition.TruncateToEpoch, partition.TruncateToEpochQuery}

// A follower that missed an epoch and is told to follow the same leader in
// a newer one skips truncation and keeps records that leader no longer has.
// Reference: KAFKA-7164.
func TestKAFKA7164WithoutTruncationOnEpochBump(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := cases.KAFKA7164(seed, partition.TruncateToEpochNoBump)
		cfg.ContinueAfterViolation = true
		res, err := Run(cfg)
		require.NoError(t, err)
		require.True(t, slices.Contains(violated(res), run.InvLogMatching), "truncation=epoch-no-bump must diverge (got %v); %s", violated(res), replay(cfg))
	}
}

// The same schedule with truncation on every epoch change.
// Reference: KAFKA-7164, fixed.
func TestKAFKA7164FixedByTruncationOnEpochBump(t *testing.T) {
	for _, tr := range epochPaths {
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := cases.KAFKA7164(seed, tr)
			res, err := Run(cfg)
			require.NoError(t, err)
			if firstViolation(res) != nil {
				t.Fatalf("%s: %v\n%s", tr, firstViolation(res), replay(cfg))
			}
		}
	}
}

// A leader's ISR expansion, decided on the fetches of a follower's earlier
// process, is accepted after the follower came back on an empty disk; the
// empty replica is elected ahead of one holding every committed record.
// Reference: KAFKA-14139.
func TestKAFKA14139WithoutBrokerEpochCheck(t *testing.T) {
	requireFailpoints(t)
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := cases.KAFKA14139(seed, true)
		cfg.ContinueAfterViolation = true
		res, err := Run(cfg)
		require.NoError(t, err)
		require.Equal(t, 1, res.Stats.DiskReplacements, "the disk must be replaced; %s", replay(cfg))
		require.GreaterOrEqual(t, res.Stats.FailpointsFired, 1, "the scenario's failpoint must fire; %s", replay(cfg))
		got := violated(res)
		require.True(t, slices.Contains(got, run.InvStrongISR) && slices.Contains(got, run.InvTrueHWMonotonic),
			"isr-without-broker-epoch must put the empty replica in the ISR and elect it (got %v); %s", got, replay(cfg))
	}
}

// The same schedule with KIP-903: the controller refuses the addition, as
// the incarnation the leader names is not the registered one.
// Reference: KAFKA-14139, KIP-903.
func TestKAFKA14139FixedByKIP903(t *testing.T) {
	requireFailpoints(t)
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := cases.KAFKA14139(seed, false)
		res, err := Run(cfg)
		require.NoError(t, err)
		require.Equal(t, 1, res.Stats.DiskReplacements, "the disk must be replaced; %s", replay(cfg))
		require.GreaterOrEqual(t, res.Stats.FailpointsFired, 1, "the scenario's failpoint must fire; %s", replay(cfg))
		if firstViolation(res) != nil {
			t.Fatalf("%v\n%s", firstViolation(res), replay(cfg))
		}
	}
}
