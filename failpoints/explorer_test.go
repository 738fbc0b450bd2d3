package failpoints_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/spec/protocol"
)

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
			f, err := run.LoadFile(filepath.Join("repro", v.Repro))
			require.NoError(t, err, "variant %s names %s", v.Name, v.Repro)
			// The file runs the implementation with the variant's flaw: its
			// settings, seen as the model, break the same rule (a file may
			// need more, such as unclean election to let a stale leader back).
			m := variant.ModelOf(f.Settings)
			switch {
			case v.Variant.Truncation != protocol.TruncateEpoch:
				assert.Equal(t, v.Variant.Truncation, m.Truncation, "%s: truncation", v.Repro)
			case v.Variant.Unclean:
				assert.True(t, m.Unclean, "%s: unclean election", v.Repro)
			case v.Variant.HWBelowMinISR:
				assert.True(t, m.HWBelowMinISR, "%s: HW below min ISR", v.Repro)
			default:
				t.Fatalf("variant %s: no flaw to look for", v.Name)
			}
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
