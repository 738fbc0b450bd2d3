package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// drain is Ready then Advance: a test's driver carries out each Ready at
// once (kafka.Handover).
func drain(c *Controller) Ready {
	rd := c.Ready()
	c.Advance()
	return rd
}

// answerTo has c decide req and returns its answer, from the Ready it
// drains (events and updates included).
func answerTo(c *Controller, req kafka.AlterPartition, now int64) kafka.AlterPartitionAnswer {
	c.AlterPartition(req, now)
	rd := drain(c)
	if len(rd.Answers) != 1 {
		panic(fmt.Sprintf("want one answer in the Ready, got %d", len(rd.Answers)))
	}
	return rd.Answers[0].Msg.(kafka.AlterPartitionAnswer)
}

func TestReadyIsHandedOverOnceUntilAdvanced(t *testing.T) {
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	c.Ready()
	assert.Panics(t, func() { c.Ready() }, "a second Ready before Advance")
	c.Advance()
	assert.NotPanics(t, func() { c.Ready() })
}
