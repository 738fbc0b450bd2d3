package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// A StateUpdate lost on its way costs a heartbeat interval, not the
// partition: the broker's next heartbeat reports the last version it
// applied, the controller sees it behind and sends the whole state again.
// Without the version, broker 2 would never learn it holds a replica of
// the new topic (random search found a partition whose leader never knew).
func TestLostStateUpdateIsSentAgain(t *testing.T) {
	c := newCluster(t, opts{})
	tp := kafka.TopicPartition{Topic: "late", Partition: 0}
	corr := c.nextCorr()
	c.queue = append(c.queue, broker.Envelope{From: adminID, To: broker.VoterNode(1),
		Msg: broker.CreateTopic{Correlation: corr, Name: tp.Topic, Partitions: 1, ReplicationFactor: 3}})
	// Deliver the creation, then lose every update meant for broker 2.
	c.deliver(c.queue[0])
	c.queue = c.queue[1:]
	lost := 0
	kept := c.queue[:0]
	for _, env := range c.queue {
		if _, ok := env.Msg.(broker.StateUpdate); ok && env.To == 2 {
			lost++
			continue
		}
		kept = append(kept, env)
	}
	c.queue = kept
	require.Positive(t, lost)
	c.settle()
	_, ok := c.broker(2).Replica(tp)
	require.False(t, ok, "the update was lost")

	c.tickUntil(3*heartbeatMs, func() bool { _, ok := c.broker(2).Replica(tp); return ok },
		"broker 2 to learn of its replica from the state sent again")
}
