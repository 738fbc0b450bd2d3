package kitclient

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// TestConsumerFetchLeaderFailover: the leader of the partition a consumer
// reads crashes; the consumer's fetch is lost, it refreshes metadata,
// fetches from the new leader with the new epoch, and reads every record,
// once, in order. Reference: KIP-320.
func TestConsumerFetchLeaderFailover(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 1, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	lc.produce(tp, "r0", "r1", "r2")
	n := lc.addConsumer(manualConfig(ResetEarliest))
	lc.do(n, func(c *Consumer) { require.NoError(t, c.Assign([]kafka.TopicPartition{tp}, lc.now)) })
	lc.pollUntil(n, tp, 3, 2000)

	old := lc.leader(tp)
	lc.crash(old)
	lc.tickUntil(5000, func() bool { l := lc.leader(tp); return l > 0 && l != old }, "a new leader")
	lc.produce(tp, "r3", "r4")
	lc.pollUntil(n, tp, 5, 10000)
	require.Equal(t, []string{"r0", "r1", "r2", "r3", "r4"}, polledValues(n.records[tp]))
	require.Equal(t, []int64{0, 1, 2, 3, 4}, polledOffsets(n.records[tp]))

	var last broker.FetchRequest
	var to broker.NodeID
	for _, env := range n.sent {
		if f, ok := env.Msg.(broker.FetchRequest); ok {
			last, to = f, env.To
		}
	}
	require.Equal(t, lc.leader(tp), to)
	require.Positive(t, last.CurrentLeaderEpoch)
}

// TestConsumerCoordinatorFailover: the broker hosting the group's
// coordinator crashes; the members find the new coordinator (the new
// leader of the group's offsets partition), which loaded the group and
// its offsets from the log: the group is stable again over every
// partition, commits succeed, and the offsets committed before the crash
// are still there. The members come back within their session, so the
// group keeps its generation.
func TestConsumerCoordinatorFailover(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 4, 3)
	all := partitionsOf("t", 4)
	a, b := lc.addConsumer(groupConfig(AssignorRange)), lc.addConsumer(groupConfig(AssignorRange))
	var gen int32
	lc.tickUntil(5000, func() bool { var ok bool; gen, ok = stableIn([]*liveConsumer{a, b}, 4); return ok }, "group stable")

	for i, n := range []*liveConsumer{a, b} {
		asg, _ := lastAssigned(n)
		offsets := map[kafka.TopicPartition]int64{}
		for _, tp := range asg.Partitions {
			offsets[tp] = int64(10*i) + int64(tp.Partition)
		}
		lc.do(n, func(c *Consumer) { c.Commit(offsets, lc.now) })
		lc.tickUntil(1000, func() bool { return len(eventsOf[*Committed](n)) > 0 }, "commit answered")
		require.NoError(t, eventsOf[*Committed](n)[0].Err)
	}
	want := map[kafka.TopicPartition]int64{}
	for _, n := range []*liveConsumer{a, b} {
		for tp, off := range eventsOf[*Committed](n)[0].Offsets {
			want[tp] = off
		}
	}

	otp := kafka.TopicPartition{Topic: broker.OffsetsTopic, Partition: group.PartitionFor("g", 3)}
	old := lc.leader(otp)
	require.Equal(t, broker.NodeID(a.c.g.coord), old)
	// Every group event names the broker that answered: the coordinator.
	for _, n := range []*liveConsumer{a, b} {
		joins := eventsOf[*Joined](n)
		s, _ := lastAssigned(n)
		require.Equal(t, old, joins[len(joins)-1].Coordinator)
		require.Equal(t, old, s.Coordinator)
		require.Equal(t, old, eventsOf[*Committed](n)[0].Coordinator)
	}
	lc.crash(old)
	lc.tickUntil(15000, func() bool {
		_, ok := stableIn([]*liveConsumer{a, b}, 4)
		return ok && a.c.g.coordKnown && broker.NodeID(a.c.g.coord) != old &&
			b.c.g.coordKnown && broker.NodeID(b.c.g.coord) != old
	}, "group stable at the new coordinator")
	require.Equal(t, lc.leader(otp), broker.NodeID(a.c.g.coord))
	after, _ := stableIn([]*liveConsumer{a, b}, 4)
	require.Equal(t, gen, after, "the new coordinator loaded the members: no rebalance")

	for _, n := range []*liveConsumer{a, b} {
		asg, _ := lastAssigned(n)
		before := len(eventsOf[*Committed](n))
		lc.do(n, func(c *Consumer) { c.Commit(map[kafka.TopicPartition]int64{asg.Partitions[0]: 100}, lc.now) })
		lc.tickUntil(4000, func() bool { return len(eventsOf[*Committed](n)) > before }, "commit answered")
		cm := eventsOf[*Committed](n)[before]
		require.NoError(t, cm.Err, "commit after failover")
		require.Equal(t, lc.leader(otp), cm.Coordinator, "the new coordinator answered")
		want[asg.Partitions[0]] = 100
	}

	cfg := manualConfig(ResetNone)
	cfg.Group = "g"
	reader := lc.addConsumer(cfg)
	lc.do(reader, func(c *Consumer) { require.NoError(t, c.Assign(all, lc.now)) })
	lc.tickUntil(5000, func() bool { return len(eventsOf[*OffsetsFetched](reader)) == 4 }, "offsets fetched")
	got := map[kafka.TopicPartition]int64{}
	for _, e := range eventsOf[*OffsetsFetched](reader) {
		got[e.TP] = e.Offset
		require.Equal(t, lc.leader(otp), e.Coordinator)
	}
	require.Equal(t, want, got, "offsets at the new coordinator")
}
