package sim

import (
	"testing"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/failpoints"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// requireFailpoints skips a failpoint-driven test in a plain build, and
// fails it under `make test`, which sets WATERMARK_REQUIRE_FAILPOINTS.
func requireFailpoints(t *testing.T) {
	t.Helper()
	failpoints.Require(t)
}

// With truncation to the high watermark, a follower that restarts drops a
// record the leader already acknowledged, and if the leader then dies it is
// elected without it: the committed log loses a record.
// Reference: KIP-101, scenario 1.
func TestKIP101DataLossWithHWTruncation(t *testing.T) {
	requireFailpoints(t)
	res, err := Run(cases.KIP101DataLoss(1, partition.TruncateToHW))
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Stats.FailpointsFired, 2, "the scenario's failpoints must fire")
	require.NotNil(t, firstViolation(res), "truncation=hw must lose the acknowledged record")
	require.Contains(t, []string{run.InvTrueHWMonotonic, run.InvLeaderCompleteness}, firstViolation(res).Invariant, firstViolation(res).Error())
}

// The same schedule with leader epochs: the restarted follower asks the
// leader where its epoch ended instead of trusting its HW, keeps m2, and the
// election loses nothing.
// Reference: KIP-101, scenario 1, with the fix.
func TestKIP101DataLossFixedByEpochTruncation(t *testing.T) {
	requireFailpoints(t)
	for _, tr := range epochPaths {
		res, err := Run(cases.KIP101DataLoss(1, tr))
		require.NoError(t, err)
		require.GreaterOrEqual(t, res.Stats.FailpointsFired, 2, "the scenario's failpoints must fire")
		require.Nil(t, firstViolation(res), tr.String())
	}
}

// A follower that lost an unsynced tail in a power loss leads and writes a
// new record where the old leader still holds one. With truncation=hw the
// old leader keeps its record when it returns: the replicas diverge for
// good. Reference: KIP-101, scenario 2.
func TestKIP101DivergenceWithHWTruncation(t *testing.T) {
	requireFailpoints(t)
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := cases.KIP101Divergence(seed, partition.TruncateToHW)
		res, err := Run(cfg)
		require.NoError(t, err)
		require.GreaterOrEqual(t, res.Stats.FailpointsFired, 1, "the scenario's failpoint must fire; %s", replay(cfg))
		require.NotNil(t, firstViolation(res), "truncation=hw must diverge; %s", replay(cfg))
		require.Equal(t, run.InvLogMatching, firstViolation(res).Invariant, firstViolation(res).Error())
	}
}

// The same schedule with leader epochs: the returning leader learns that
// epoch 0 ended at offset 1, drops its stale record and copies the new one.
// Reference: KIP-101, scenario 2, with the fix.
func TestKIP101DivergenceFixedByEpochTruncation(t *testing.T) {
	requireFailpoints(t)
	for _, tr := range epochPaths {
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := cases.KIP101Divergence(seed, tr)
			res, err := Run(cfg)
			require.NoError(t, err)
			require.GreaterOrEqual(t, res.Stats.FailpointsFired, 1, "the scenario's failpoint must fire; %s", replay(cfg))
			if firstViolation(res) != nil {
				t.Fatalf("%s: %v\n%s", tr, firstViolation(res), replay(cfg))
			}
		}
	}
}

// The truncation failpoints fire on the fetch path too: KIP-101 scenario
// 2's old leader, told of its divergence by a fetch answer, crashes just
// before its log is cut (beforeTruncate); restarted, it is told again,
// truncates, and the run holds. On epoch-query the same crash comes on the
// epoch answer. Reference: failpoints/doc.go (beforeTruncate), KAFKA-10554.
func TestTruncationFailpointFiresOnBothEpochPaths(t *testing.T) {
	requireFailpoints(t)
	for _, tr := range epochPaths {
		base, err := Run(cases.KIP101Divergence(1, tr))
		require.NoError(t, err)
		cfg := cases.KIP101Divergence(1, tr)
		cfg.Failpoints = append(cfg.Failpoints, run.Failpoint{Name: broker.FPBeforeTruncate, Term: `1*return("crash")`,
			Node: 1, When: run.Trigger{AfterAcks: 1}, DownMs: 1000})
		res, err := Run(cfg)
		require.NoError(t, err)
		require.Equal(t, base.Stats.FailpointsFired+1, res.Stats.FailpointsFired, "%s: the truncation's failpoint must fire; %s", tr, replay(cfg))
		require.Nil(t, firstViolation(res), "%s: %v", tr, firstViolation(res))
	}
}
