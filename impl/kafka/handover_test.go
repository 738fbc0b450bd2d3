package kafka

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHandoverHandsOverOnceUntilAdvanced(t *testing.T) {
	var h Handover
	h.Take("core")
	assert.PanicsWithValue(t, "core: Ready called before the previous Ready was advanced", func() { h.Take("core") })
	h.Done("core")
	assert.NotPanics(t, func() { h.Take("core") }, "advanced: the next Ready may be taken")
	h.Done("core")
	assert.PanicsWithValue(t, "core: Advance without a Ready handed over", func() { h.Done("core") })
}
