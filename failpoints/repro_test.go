package failpoints_test

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/failpoints"
	"github.com/watermarkhq/watermark/impl/partition"
)

// fix is how a repro file's bug is fixed: fix applies the fixed variant to
// the file's configuration. When the fix is a `watermark repro` flag (file
// is ""), the same file is rerun with it; otherwise repro/fixed/<file> is the
// same schedule with the fix, and must equal the override.
type fix struct {
	apply func(*run.Spec)
	file  string
}

// fixes maps each file of repro/ to its fixed variant. A new file must add
// a row here. The truncation bugs (hw, epoch-kip101, epoch-no-bump) live on
// the OffsetsForLeaderEpoch path, and so does their fix (KIP-101, KIP-279,
// KAFKA-7164's): epoch-query, the same path with nothing else changed.
// Truncation on fetch, the default, holds on the same schedules too
// (conformance/sim's KIP-101, KAFKA-6361 and KAFKA-7164 tests run both).
var fixes = map[string]fix{
	"kip101-data-loss.yaml":           {apply: func(c *run.Spec) { c.Broker.Truncation = partition.TruncateToEpochQuery }},
	"kip101-divergence.yaml":          {apply: func(c *run.Spec) { c.Broker.Truncation = partition.TruncateToEpochQuery }},
	"kafka-6361.yaml":                 {apply: func(c *run.Spec) { c.Broker.Truncation = partition.TruncateToEpochQuery }},
	"kafka-7164.yaml":                 {apply: func(c *run.Spec) { c.Broker.Truncation = partition.TruncateToEpochQuery }},
	"kafka-14139.yaml":                {apply: func(c *run.Spec) { c.Controller.ISRWithoutBrokerEpoch = false }, file: "kafka-14139.yaml"},
	"dedup-across-leader-change.yaml": {apply: func(c *run.Spec) { c.Broker.ProducerState = partition.ProducerStateReplicated }},
	"unclean-election.yaml":           {apply: func(c *run.Spec) { c.Controller.UncleanLeaderElection = false }, file: "unclean-election.yaml"},
	"acks1-loss.yaml":                 {apply: func(c *run.Spec) { c.Workload.Acks = partition.AcksAll }, file: "acks1-loss.yaml"},
	"last-replica-standing.yaml":      {apply: func(c *run.Spec) { c.Broker.AdvanceHWBelowMinISR = false }, file: "last-replica-standing.yaml"},
}

// found is every anomaly and invariant failure r shows, as `watermark
// repro` lists them.
func found(r *judge.RunResult) []string {
	var out []string
	for _, a := range append(slices.Clone(r.Found), r.Allowed...) {
		out = append(out, a.Name)
	}
	for _, v := range r.Invariants {
		out = append(out, v.Invariant)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tolerated is what f lets a run show besides its expectation.
func tolerated(f *run.File) []string {
	t := slices.Clone(f.Allowed)
	if f.LossAllowed {
		t = append(t, run.Invariants...)
	}
	return t
}

func runFile(t *testing.T, f *run.File, cfg run.Spec) *judge.RunResult {
	t.Helper()
	res, err := sim.Run(cfg)
	require.NoError(t, err)
	return judge.Judge(cases.FromFile(f), res, 30*time.Second)
}

func TestReproLibrary(t *testing.T) {
	failpoints.Require(t)
	files, err := filepath.Glob(filepath.Join("repro", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			f, err := run.LoadFile(path)
			require.NoError(t, err)
			require.False(t, f.Expect.Holds, "a repro file expects the bug's anomalies, not holds")
			fx, ok := fixes[name]
			require.True(t, ok, "add %s's fixed variant to fixes in repro_test.go", name)

			// The buggy variant: REPRODUCED, every expected name found and
			// nothing neither expected nor allowed.
			r := runFile(t, f, f.Spec.Clone())
			got := found(r)
			for _, n := range f.Expect.Found {
				assert.Contains(t, got, n, "%s: expected %s not found (found %v)", path, n, got)
			}
			for _, n := range got {
				if !slices.Contains(f.Expect.Found, n) && !slices.Contains(tolerated(f), n) {
					t.Errorf("%s: unexpected %s (found %v)", path, n, got)
				}
			}

			// The fixed variant: none of the expected names, nothing beyond
			// what the file allows.
			fixedFile, fixedCfg := f, f.Spec.Clone()
			fx.apply(&fixedCfg)
			if fx.file != "" {
				fixedFile, err = run.LoadFile(filepath.Join("repro", "fixed", fx.file))
				require.NoError(t, err)
				require.True(t, fixedFile.Expect.Holds, "a fixed file expects holds")
				require.True(t, reflect.DeepEqual(fixedCfg, fixedFile.Spec),
					"repro/fixed/%s is not %s with only the fix applied", fx.file, name)
			}
			r = runFile(t, fixedFile, fixedCfg)
			got = found(r)
			for _, n := range got {
				assert.NotContains(t, f.Expect.Found, n, "%s: the fixed variant still shows %s", path, n)
				assert.Contains(t, tolerated(fixedFile), n, "%s: the fixed variant shows %s", path, n)
			}
			if fixedFile.Expect.Holds {
				assert.NotEqual(t, judge.Violated, r.Verdict, "%s: %v", fx.file, r.Reasons)
			}
		})
	}
}
