package failpoints_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// truncations maps the spec's truncation rules to the implementation's.
var truncations = map[protocol.Truncation]partition.Truncation{
	protocol.TruncateEpoch:       partition.TruncateToEpoch,
	protocol.TruncateHW:          partition.TruncateToHW,
	protocol.TruncateEpochKIP101: partition.TruncateToEpochKIP101,
	protocol.TruncateEpochNoBump: partition.TruncateToEpochNoBump,
}

// bugOf says what makes a spec variant unsafe, as a check on a run file's
// configuration: the file must run the implementation with the same flaw.
func bugOf(v protocol.Variant) (string, func(sim.Config) bool) {
	switch {
	case v.Truncation != protocol.TruncateEpoch:
		want := truncations[v.Truncation]
		return "truncation " + want.String(), func(c sim.Config) bool { return c.Broker.Truncation == want }
	case v.Unclean:
		return "unclean election", func(c sim.Config) bool { return c.Controller.UncleanLeaderElection }
	case v.HWBelowMinISR:
		return "HW advancing below min ISR", func(c sim.Config) bool { return c.Broker.AdvanceHWBelowMinISR }
	}
	return "", nil
}

// Every unsafe variant of the spec that stands for a known bug names the
// repro file that reproduces its counterexample on the implementation. The
// file must exist, run the implementation with the same flaw, expect a
// history anomaly (what the invariant's failure looks like to clients), and
// have a fixed variant; TestReproLibrary runs it both ways (with the
// failpoint build). The explorer finding the counterexample is
// spec/protocol's TestUnsafeVariantsYieldCounterexamples.
func TestExplorerCounterexamplesHaveRepros(t *testing.T) {
	var linked int
	for _, v := range protocol.Variants {
		if v.Safe || v.Repro == "" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			linked++
			f, err := conformance.LoadRunFile(filepath.Join("repro", v.Repro))
			require.NoError(t, err, "variant %s names %s", v.Name, v.Repro)
			what, has := bugOf(v.Variant)
			require.NotNil(t, has, "variant %s: no flaw to look for", v.Name)
			assert.True(t, has(f.SimConfig()), "%s does not run the implementation with %s", v.Repro, what)
			assert.NotEmpty(t, f.Expect.Found, "%s expects no anomaly", v.Repro)
			_, fixed := fixes[v.Repro]
			assert.True(t, fixed, "%s has no fixed variant in fixes", v.Repro)
		})
	}
	// At least the KIP-101 data-loss trace is linked, as the issue asks.
	hw, err := protocol.Lookup("hw")
	require.NoError(t, err)
	assert.Equal(t, "kip101-data-loss.yaml", hw.Repro)
	assert.GreaterOrEqual(t, linked, 5)
}

// The variants the spec explores without a repro file are those whose flaw
// the implementation cannot be configured with; say which, so that adding
// such a knob to the implementation means adding the file.
func TestVariantsWithoutReproCannotBeConfigured(t *testing.T) {
	for _, v := range protocol.Variants {
		if v.Safe || v.Repro != "" {
			continue
		}
		// KIP-320 fencing is always on in the reference broker.
		assert.True(t, v.Variant.NoFencing, "variant %s has no repro file", v.Name)
	}
}
