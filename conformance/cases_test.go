package conformance_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/conformance/targets"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/failpoints"
	"github.com/watermarkhq/watermark/linearizability"
)

// needsFailpoints skips a failpoint case in a plain build and fails it
// under `make test` (WATERMARK_REQUIRE_FAILPOINTS).
func needsFailpoints(t *testing.T, c *cases.Case) {
	t.Helper()
	if len(c.Spec(1).Failpoints) > 0 {
		failpoints.Require(t)
	}
}

// Every case holds on the reference broker with its own settings, over a
// few seeds each, and each run exercises what the case claims to (its
// Require expectation is part of the verdict).
func TestEveryCaseHoldsOnTheReference(t *testing.T) {
	for i := range cases.Cases {
		c := &cases.Cases[i]
		t.Run(c.Name, func(t *testing.T) {
			needsFailpoints(t, c)
			for seed := uint64(1); seed <= 3; seed++ {
				r, err := conformance.RunOne(c, seed, conformance.Options{Target: targets.Simulator, CheckTimeout: time.Minute})
				require.NoError(t, err)
				if r.Verdict != conformance.Holds {
					t.Fatalf("seed %d: %s\n%s\nreplay: %s", seed, r.Verdict, strings.Join(r.Reasons, "\n"), r.Replay)
				}
				require.Positive(t, r.Ops)
			}
		})
	}
}

// The KIP-101 cases find the data loss and the divergence with truncation
// to the high watermark, in what the clients saw, not only in invariants.
// Reference: KIP-101, scenarios 1 and 2.
func TestKIP101CasesFindTheBugWithHWTruncation(t *testing.T) {
	for _, name := range []string{"kip101-data-loss", "kip101-divergence"} {
		t.Run(name, func(t *testing.T) {
			list, err := cases.Lookup([]string{name})
			require.NoError(t, err)
			c := &list[0]
			needsFailpoints(t, c)
			for seed := uint64(1); seed <= 3; seed++ {
				r, err := conformance.RunOne(c, seed, conformance.Options{Target: targets.Simulator, Variant: variantNamed(t, "hw"), CheckTimeout: time.Minute})
				require.NoError(t, err)
				require.Equal(t, conformance.Violated, r.Verdict, "seed %d", seed)
				names := map[string]bool{}
				for _, a := range r.Found {
					names[a.Name] = true
				}
				assert.True(t, names[linearizability.AnomalyLostWrite] || names[linearizability.AnomalyInconsistentOffsets],
					"seed %d: want lost-write or inconsistent-offsets, got %v", seed, names)
				assert.Equal(t, linearizability.VerdictIllegal, r.Linearizability.Verdict, "seed %d", seed)
			}
		})
	}
}

// With unclean election on, losing committed records is allowed and
// reported as allowed; the case still holds.
func TestUncleanElectionReportsAllowedLoss(t *testing.T) {
	list, err := cases.Lookup([]string{"unclean-election/on"})
	require.NoError(t, err)
	r, err := conformance.RunOne(&list[0], 1, conformance.Options{Target: targets.Simulator, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, conformance.Holds, r.Verdict, strings.Join(r.Reasons, "\n"))
	require.NotEmpty(t, r.Allowed, "the unclean election lost nothing")
	require.Empty(t, r.Found)
}

// A case's guarantees are judged, not assumed: the acks=1 case run with
// acks=all's expectations fails on the loss acks=1 allows.
func TestAllowedAnomaliesAreNeededByAcks1(t *testing.T) {
	list, err := cases.Lookup([]string{"acks-1-leader-crash"})
	require.NoError(t, err)
	strict := list[0]
	strict.Allowed = nil
	sawLoss := false
	for seed := uint64(1); seed <= 10 && !sawLoss; seed++ {
		r, err := conformance.RunOne(&strict, seed, conformance.Options{Target: targets.Simulator, CheckTimeout: time.Minute})
		require.NoError(t, err)
		for _, a := range r.Found {
			require.Contains(t, list[0].Allowed, a.Name, "seed %d: acks=1 showed %s, which the case does not allow", seed, a)
			sawLoss = true
		}
	}
	require.True(t, sawLoss, "ten seeds of acks=1 with leader crashes lost no acknowledged write")
}

func TestLookup(t *testing.T) {
	cs, err := cases.Lookup([]string{"unclean-election"})
	require.NoError(t, err)
	require.Len(t, cs, 2, "a base name selects its variants")
	_, err = cases.Lookup([]string{"no-such-case"})
	require.ErrorContains(t, err, `unknown case "no-such-case"`)
	require.ErrorContains(t, err, "acks-all-leader-crash")
	all, err := cases.Lookup(nil)
	require.NoError(t, err)
	require.Len(t, all, len(cases.Cases))
}

// Producer state that followers do not rebuild lets a retry that straddles
// a leader change be appended twice: dedup-across-failover must find the
// duplicate. Reference: spec/SEMANTICS.md, Known bugs ("dedup across leader
// change").
func TestDedupAcrossFailoverCatchesLeaderOnlyProducerState(t *testing.T) {
	list, err := cases.Lookup([]string{"dedup-across-failover"})
	require.NoError(t, err)
	found := false
	for seed := uint64(1); seed <= 5 && !found; seed++ {
		r, err := conformance.RunOne(&list[0], seed, conformance.Options{Target: targets.Simulator, Variant: variantNamed(t, "producer-state-leader-only"), CheckTimeout: time.Minute})
		require.NoError(t, err)
		found = hasAnomaly(r.Found, linearizability.AnomalyDuplicate) && hasAnomaly(r.Found, linearizability.AnomalyDedupFailure)
	}
	require.True(t, found, "five seeds with leader-only producer state found no duplicate")
}

// At-least-once: without idempotence, retries after lost answers write some
// records twice; the case counts them as allowed, and still holds.
// Reference: spec/SEMANTICS.md, Producer ("Retries without idempotence give
// at-least-once (duplicates possible)").
func TestAtLeastOnceCountsDuplicates(t *testing.T) {
	list, err := cases.Lookup([]string{"at-least-once"})
	require.NoError(t, err)
	dups := 0
	for seed := uint64(1); seed <= 3; seed++ {
		r, err := conformance.RunOne(&list[0], seed, conformance.Options{Target: targets.Simulator, CheckTimeout: time.Minute})
		require.NoError(t, err)
		require.Equal(t, conformance.Holds, r.Verdict, strings.Join(r.Reasons, "\n"))
		for _, a := range r.Allowed {
			if a.Name == linearizability.AnomalyDuplicate {
				dups++
			}
		}
	}
	require.Positive(t, dups, "lost answers and retries wrote nothing twice: the case did not exercise at-least-once")
}

// The delivery-level cases judge what the other one allows: an
// at-least-once run has reprocessing, which the at-most-once case refuses,
// and an at-most-once run has gaps, which the at-least-once case refuses.
// So neither case can hold by not looking.
func TestConsumerDeliveryCasesCatchTheOtherLevel(t *testing.T) {
	least, most := caseNamed(t, "at-least-once-consumer"), caseNamed(t, "at-most-once-consumer")

	res, err := sim.Run(spec(least, 1))
	require.NoError(t, err)
	require.Equal(t, judge.Holds, judge.Judge(least, res, time.Minute).Verdict)
	r := judge.Judge(most, res, time.Minute)
	require.Equal(t, judge.Violated, r.Verdict)
	require.True(t, hasAnomaly(r.Found, linearizability.AnomalyReprocessed), "%v", r.Reasons)

	res, err = sim.Run(spec(most, 1))
	require.NoError(t, err)
	require.Equal(t, judge.Holds, judge.Judge(most, res, time.Minute).Verdict)
	r = judge.Judge(least, res, time.Minute)
	require.Equal(t, judge.Violated, r.Verdict)
	require.True(t, hasAnomaly(r.Found, linearizability.AnomalyUnprocessed), "%v", r.Reasons)
}

// hasAnomaly reports whether as holds an anomaly called name.
func hasAnomaly(as []linearizability.Anomaly, name string) bool {
	for _, a := range as {
		if a.Name == name {
			return true
		}
	}
	return false
}

// caseNamed is the case called name.
func caseNamed(t *testing.T, name string) *cases.Case {
	t.Helper()
	list, err := cases.Lookup([]string{name})
	require.NoError(t, err)
	require.Len(t, list, 1)
	return &list[0]
}

// spec is c's run for seed, as the kit runs it.
func spec(c *cases.Case, seed uint64) run.Spec {
	s, err := conformance.Options{Target: targets.Simulator}.Spec(c, seed)
	if err != nil {
		panic(err)
	}
	return s
}

// variantNamed is the variant called name.
func variantNamed(t *testing.T, name string) variant.Variant {
	t.Helper()
	v, err := variant.Runnable(name)
	require.NoError(t, err)
	return v
}
