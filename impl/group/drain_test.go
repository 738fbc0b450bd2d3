package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drain is Ready then Advance: a test's driver carries out each Ready at
// once (kafka.Handover).
func drain(c *Coordinator) Ready {
	rd := c.Ready()
	c.Advance()
	return rd
}

func TestReadyIsHandedOverOnceUntilAdvanced(t *testing.T) {
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	c.Ready()
	assert.Panics(t, func() { c.Ready() }, "a second Ready before Advance")
	c.Advance()
	assert.NotPanics(t, func() { c.Ready() })
}
