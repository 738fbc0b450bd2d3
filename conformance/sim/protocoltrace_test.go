package sim_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// validate runs cfg with trace validation.
func validate(t *testing.T, cfg run.Spec) *run.ProtocolReport {
	t.Helper()
	cfg.ValidateProtocol = true
	res, err := sim.Run(cfg)
	require.NoError(t, err)
	require.NotNil(t, res.Protocol)
	return res.Protocol
}

// Every replication step of every conformance case's runs (those without
// failpoints, which need the failpoint build), over several seeds, is a
// transition spec/protocol's model allows. The model is judged by the
// variant each run's brokers are configured with. One more seed runs each
// case whose brokers take the default truncation on the OffsetsForLeaderEpoch
// path (epoch-query), so that both paths are judged.
func TestTraceValidationOverCases(t *testing.T) {
	const seeds = 3
	checked, skipped := map[string]int{}, map[string]int{}
	for _, c := range cases.Cases {
		for seed := uint64(1); seed <= seeds; seed++ {
			cfg := c.Spec(seed)
			if len(cfg.Failpoints) > 0 {
				continue
			}
			if seed == seeds {
				if cfg.Broker.Truncation != partition.TruncateToEpoch {
					continue
				}
				cfg.Broker.Truncation = partition.TruncateToEpochQuery
			}
			// A leader that holds a fetch answers it later with what it has
			// then; the model answers at once. Validation runs without holds.
			cfg.Broker.ReplicaFetchWaitMaxMs = 0
			p := validate(t, cfg)
			if p.Failure != "" {
				t.Errorf("case %s seed %d: the model does not allow a step (replay: conformance case %s, seed %d, run.Spec.ValidateProtocol and Broker.ReplicaFetchWaitMaxMs 0):\n%s",
					c.Name, seed, c.Name, seed, p.Failure)
				continue
			}
			for k, v := range p.Checked {
				checked[k] += v
			}
			for k, v := range p.Skipped {
				skipped[k] += v
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(checked)) {
		t.Logf("checked %-28s %8d", k, checked[k])
	}
	for _, k := range slices.Sorted(maps.Keys(skipped)) {
		t.Logf("skipped %-28s %8d", k, skipped[k])
	}
	// Each kind of protocol step was exercised, so a clean verdict covers
	// them all.
	for _, k := range []string{"deliver fetch", "deliver fetch-answer", "deliver diverging fetch-answer", "deliver epoch-query", "deliver epoch-answer",
		"produce", "learn", "learn-isr", "shrink-isr", "expand-isr", "fence", "restart", "crash"} {
		assert.Positive(t, checked[k], "no %q step was checked", k)
	}
}

// Validation catches a broker that does not follow the model: KAFKA-7164's
// run on the broker that skips truncation when the same leader returns,
// judged by the model of the fixed rule, fails at the step where the
// follower keeps fetching instead of truncating; judged by the model of
// its own rule, it passes. Reference: KAFKA-7164.
func TestTraceValidationCatchesADifferentTruncationRule(t *testing.T) {
	cfg := cases.KAFKA7164(1, partition.TruncateToEpochNoBump)
	cfg.Broker.ReplicaFetchWaitMaxMs = 0
	own := validate(t, cfg)
	require.Empty(t, own.Failure)

	fixed := protocol.Variant{Truncation: protocol.TruncateEpochQuery, MinISR: cfg.Broker.MinInsyncReplicas,
		KeepISROnRestart: cfg.Controller.KeepISROnRestart, Unclean: cfg.Controller.UncleanLeaderElection}
	cfg.ProtocolModel = &fixed
	judged := validate(t, cfg)
	require.NotEmpty(t, judged.Failure, "a broker skipping truncation passed as one that truncates")
	assert.Contains(t, judged.Failure, "learns")
	t.Log(judged.Failure)
}

// And the other way: a broker that truncates by epochs, judged by the
// model of truncation to the HW, fails when a replica becomes a follower.
func TestTraceValidationCatchesEpochTruncationJudgedAsHW(t *testing.T) {
	c, err := cases.Lookup([]string{"acks-all-leader-crash"})
	require.NoError(t, err)
	cfg := c[0].Spec(1)
	cfg.Broker.ReplicaFetchWaitMaxMs = 0
	cfg.Broker.Truncation = partition.TruncateToEpochQuery
	v := protocol.Variant{Truncation: protocol.TruncateHW, MinISR: cfg.Broker.MinInsyncReplicas}
	cfg.ProtocolModel = &v
	p := validate(t, cfg)
	require.NotEmpty(t, p.Failure)
	assert.Contains(t, p.Failure, "learns")
}

// The two epoch paths are told apart: a broker truncating on fetch,
// judged by the model of the OffsetsForLeaderEpoch path, fails at its
// first fetch naming its last epoch; judged by its own, it passes.
// Reference: KAFKA-10554.
func TestTraceValidationTellsTheTwoEpochPaths(t *testing.T) {
	c, err := cases.Lookup([]string{"acks-all-leader-crash"})
	require.NoError(t, err)
	cfg := c[0].Spec(1)
	cfg.Broker.ReplicaFetchWaitMaxMs = 0
	require.Empty(t, validate(t, cfg).Failure)
	v := protocol.Variant{Truncation: protocol.TruncateEpochQuery, MinISR: cfg.Broker.MinInsyncReplicas}
	cfg.ProtocolModel = &v
	p := validate(t, cfg)
	require.NotEmpty(t, p.Failure)
	assert.Contains(t, p.Failure, "last epoch")
}
