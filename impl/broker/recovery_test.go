package broker_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// logInfo asks broker id, as the controller would, where its log of tp
// ends, and returns the answers it sent.
func logInfo(t *testing.T, c *cluster, id broker.NodeID, req kafka.ReplicaLogInfoRequest) []kafka.ReplicaLogInfo {
	t.Helper()
	b := c.broker(id)
	require.NoError(t, b.Handle(broker.Envelope{From: broker.VoterNode(1), To: id, Msg: req}, c.now))
	var out []kafka.ReplicaLogInfo
	for _, env := range b.TakeOutbox() {
		if m, ok := env.Msg.(kafka.ReplicaLogInfo); ok {
			require.Equal(t, broker.VoterNode(1), env.To)
			out = append(out, m)
		}
	}
	return out
}

// A broker answers an unclean recovery's question with where its log
// ends: the epoch of its last record (not the newest epoch it knows, which
// may hold none yet) and its LEO, echoing the partition epoch asked about.
// A question for another process of it goes unanswered; a partition it
// does not host has an empty log.
// Reference: KIP-966, GetReplicaLogInfo (LastWrittenLeaderEpoch, LogEndOffset).
func TestBrokerAnswersWhereItsLogEnds(t *testing.T) {
	c := newCluster(t, opts{})
	c.createTopic("t", 1, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	c.produceOK(1, tp, "a", "b", "c")
	c.tick(100)
	ask := func(id broker.NodeID) kafka.ReplicaLogInfoRequest {
		return kafka.ReplicaLogInfoRequest{TopicPartition: tp, BrokerID: int32(id), Incarnation: c.broker(id).Incarnation(), PartitionEpoch: 7}
	}
	got := logInfo(t, c, 2, ask(2))
	require.Len(t, got, 1)
	assert.Equal(t, kafka.ReplicaLogInfo{TopicPartition: tp, BrokerID: 2, Incarnation: c.broker(2).Incarnation(), PartitionEpoch: 7,
		LogEnd: kafka.LogEnd{LastEpoch: 0, Offset: 3}}, got[0])

	other := ask(2)
	other.Incarnation++
	assert.Empty(t, logInfo(t, c, 2, other), "meant for another process")
	wrong := ask(3)
	wrong.BrokerID = 2
	assert.Empty(t, logInfo(t, c, 3, wrong), "meant for another broker")
	none := ask(2)
	none.TopicPartition = kafka.TopicPartition{Topic: "none", Partition: 0}
	got = logInfo(t, c, 2, none)
	require.Len(t, got, 1)
	assert.Equal(t, kafka.LogEnd{LastEpoch: -1}, got[0].LogEnd, "no replica here: an empty log")

	// Broker 2 leads in epoch 1 and has written nothing in it yet.
	c.crash(1)
	c.tickUntil(2*sessionTimeoutMs, func() bool { return c.state(tp).Leader == 2 }, "broker 2 to lead")
	require.Equal(t, int32(1), c.replica(2, tp).LeaderEpoch())
	got = logInfo(t, c, 2, ask(2))
	require.Len(t, got, 1)
	assert.Equal(t, kafka.LogEnd{LastEpoch: 0, Offset: 3}, got[0].LogEnd, "epoch 1 holds no record")
	c.produce(2, tp, partition.AcksLeader, "d")
	got = logInfo(t, c, 2, ask(2))
	require.Len(t, got, 1)
	assert.Equal(t, kafka.LogEnd{LastEpoch: 1, Offset: 4}, got[0].LogEnd)
}

// End to end, through the controller's host: both followers fall out of
// the ISR, broker 2 with more than broker 3, and the leader dies. With
// unclean_recovery the controller asks both, broker 2 leads with the ISR
// set to it, and broker 3 follows it; without, the partition stays
// offline, waiting for broker 1.
// Reference: KIP-966, Unclean Recovery.
func TestUncleanRecoveryElectsTheLongerFollower(t *testing.T) {
	for _, strategy := range []controller.RecoveryStrategy{controller.RecoveryAggressive, controller.RecoveryNone} {
		t.Run(strategy.String(), func(t *testing.T) {
			c := newCluster(t, opts{lagMs: 500, recovery: strategy})
			c.createTopic("t", 1, 3)
			tp := kafka.TopicPartition{Topic: "t", Partition: 0}
			require.Equal(t, int32(1), c.state(tp).Leader)
			c.produceOK(1, tp, "a")
			c.pause(3)
			c.produce(1, tp, partition.AcksLeader, "b")
			c.tick(100) // broker 2 fetches b
			c.pause(2)
			c.produce(1, tp, partition.AcksLeader, "c")
			c.tickUntil(2000, func() bool { return len(c.state(tp).ISR) == 1 }, "the ISR to shrink to the leader")
			require.Equal(t, []int32{1}, c.state(tp).ISR)

			// The leader dies with its connections: the fetch answers it
			// sent the paused followers (b, then c) are lost.
			c.crash(1)
			for _, id := range []broker.NodeID{2, 3} {
				n := c.nodes[id]
				n.held = slices.DeleteFunc(n.held, func(env broker.Envelope) bool { return env.From == 1 })
			}
			c.resume(2, 3)
			require.Equal(t, int64(2), c.replica(2, tp).LEO())
			require.Equal(t, int64(1), c.replica(3, tp).LEO())
			c.tickUntil(2*sessionTimeoutMs, func() bool { return !c.ctrl.Controller().IsAlive(1) }, "broker 1 to be seen dead")
			c.tick(100)
			s := c.state(tp)
			if strategy == controller.RecoveryNone {
				assert.Equal(t, kafka.NoLeader, s.Leader, "no recovery: offline until broker 1 is back")
				return
			}
			assert.Equal(t, int32(2), s.Leader, "broker 2's log is the longer")
			c.tickUntil(2000, func() bool { return c.replica(3, tp).LEO() == 2 }, "broker 3 to follow broker 2")
			assert.Equal(t, []string{"a", "b"}, values(c.read(2, tp, 0).Batches))
		})
	}
}
