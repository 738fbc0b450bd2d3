package variant_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// One vocabulary: every variant is found by its name; every model variant
// of spec/protocol is one of them, under the same name; and each variant
// is defined somewhere, by its change to a run or by its model.
func TestOneSetOfNames(t *testing.T) {
	for _, v := range variant.All {
		got, err := variant.Lookup(v.Name)
		require.NoError(t, err)
		assert.Equal(t, v.Name, got.Name)
		_, model := v.Model()
		assert.True(t, model || v.Apply != nil, "%s is neither in the model nor in the broker", v.Name)
	}
	for _, m := range protocol.Variants {
		v, err := variant.Lookup(m.Name)
		require.NoError(t, err, "model variant %s has no variant of the same name", m.Name)
		got, ok := v.Model()
		require.True(t, ok)
		assert.Equal(t, m.Variant, got.Variant)
	}
	for _, v := range variant.All {
		m, ok := v.Model()
		if ok && v.Apply != nil {
			assert.Equal(t, m.Safe, v.Sound, "%s: sound in the broker and safe in the model alike", v.Name)
		}
	}
	_, err := variant.Lookup("nope")
	require.ErrorContains(t, err, "hw-below-min-isr")
	_, err = variant.Runnable("no-fencing")
	require.ErrorContains(t, err, "explore --variant no-fencing")
}

// A variant's run, mapped onto the model, is its model variant: what trace
// validation judges a run of the variant by is what the explorer explores.
func TestModelOfAVariantsRunIsItsModel(t *testing.T) {
	for _, v := range variant.All {
		m, ok := v.Model()
		if !ok || v.Apply == nil {
			continue
		}
		s := run.DefaultSpec(1)
		v.Apply(&s)
		assert.Equal(t, m.Variant, variant.ModelOf(s.Settings), v.Name)
	}
}
