package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// drain is Ready then Advance: a test's driver carries out each Ready at
// once (kafka.Handover). It replays the Ready's records into c's shadow
// image and panics unless that holds c's durable state (replay_test.go),
// so every test that drains checks the records too.
func drain(c *Controller) Ready {
	m := shadow(c)
	rd := c.Ready()
	c.Advance()
	mustReplay(m, c, rd)
	return rd
}

// answerTo has c decide req and returns its answer, the last of the Ready
// it drains (events, updates and earlier answers included).
func answerTo(c *Controller, req kafka.AlterPartition, now int64) kafka.AlterPartitionAnswer {
	c.AlterPartition(req, now)
	rd := drain(c)
	if len(rd.Answers) == 0 {
		panic("no answer in the Ready")
	}
	a, ok := rd.Answers[len(rd.Answers)-1].Msg.(kafka.AlterPartitionAnswer)
	if !ok {
		panic(fmt.Sprintf("the last answer is %T, not an AlterPartition's", rd.Answers[len(rd.Answers)-1].Msg))
	}
	return a
}

func TestReadyIsHandedOverOnceUntilAdvanced(t *testing.T) {
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	m := shadow(c)
	mustReplay(m, c, c.Ready())
	assert.Panics(t, func() { c.Ready() }, "a second Ready before Advance")
	c.Advance()
	assert.NotPanics(t, func() { mustReplay(m, c, c.Ready()) })
}

// createTopic asks c for a topic as broker 0 would and returns the
// controller's answer, leaving the Ready to the test (white-box: the
// answer is the last one queued).
func createTopic(c *Controller, name string, partitions int32, rf int, cfg kafka.TopicConfig, now int64) error {
	c.CreateTopic(0, kafka.CreateTopic{Name: name, Partitions: partitions, ReplicationFactor: rf, Config: cfg}, now)
	return c.answers[len(c.answers)-1].Msg.Failure()
}
