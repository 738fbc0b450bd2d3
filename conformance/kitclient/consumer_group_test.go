package kitclient

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
)

func groupConfig(assignor string) ConsumerConfig {
	cfg := DefaultConsumerConfig()
	cfg.Group, cfg.Topics, cfg.Assignor = "g", []string{"t"}, assignor
	cfg.AutoOffsetReset = ResetEarliest
	return cfg
}

// stableIn reports whether every consumer's latest assignment is for the
// same generation gen, none has revoked it since, and they hold all
// partitions of their topic between them.
func stableIn(ns []*liveConsumer, partitions int) (int32, bool) {
	gen := int32(-1)
	total := 0
	for _, n := range ns {
		a, ok := lastAssigned(n)
		if !ok || n.c.g.state != gsStable || (gen >= 0 && a.Generation != gen) {
			return -1, false
		}
		gen = a.Generation
		total += len(a.Partitions)
	}
	return gen, total == partitions
}

func partitionsOf(topic string, n int32) []kafka.TopicPartition {
	var out []kafka.TopicPartition
	for i := range n {
		out = append(out, kafka.TopicPartition{Topic: topic, Partition: i})
	}
	return out
}

// TestConsumerGroupSplitsPartitions: two members of one group get
// disjoint partitions covering the topic, in one generation, read what
// was produced to their partitions, and commit under that generation.
// Reference: KIP-394 (join with MEMBER_ID_REQUIRED).
func TestConsumerGroupSplitsPartitions(t *testing.T) {
	for _, assignor := range []string{AssignorRange, AssignorRoundRobin} {
		t.Run(assignor, func(t *testing.T) {
			lc := newLiveCluster(t, 3)
			lc.createTopic("t", 4, 3)
			all := partitionsOf("t", 4)
			for _, tp := range all {
				lc.produce(tp, fmt.Sprintf("%d-0", tp.Partition), fmt.Sprintf("%d-1", tp.Partition))
			}
			a, b := lc.addConsumer(groupConfig(assignor)), lc.addConsumer(groupConfig(assignor))
			var gen int32
			lc.tickUntil(5000, func() bool { var ok bool; gen, ok = stableIn([]*liveConsumer{a, b}, 4); return ok }, "group stable")

			aa, _ := lastAssigned(a)
			ab, _ := lastAssigned(b)
			require.Len(t, aa.Partitions, 2)
			require.Len(t, ab.Partitions, 2)
			union := slices.SortedFunc(slices.Values(append(slices.Clone(aa.Partitions), ab.Partitions...)), kafka.TopicPartition.Compare)
			require.Equal(t, all, union, "disjoint and covering")
			require.NotEqual(t, aa.MemberID, ab.MemberID)
			leaders := 0
			for _, n := range []*liveConsumer{a, b} {
				js := eventsOf[*Joined](n)
				require.Equal(t, gen, js[len(js)-1].Generation)
				if js[len(js)-1].Leader {
					leaders++
				}
			}
			require.Equal(t, 1, leaders)

			for _, n := range []*liveConsumer{a, b} {
				asg, _ := lastAssigned(n)
				for _, tp := range asg.Partitions {
					lc.pollUntil(n, tp, 2, 2000)
					require.Equal(t, []string{fmt.Sprintf("%d-0", tp.Partition), fmt.Sprintf("%d-1", tp.Partition)}, polledValues(n.records[tp]))
				}
				var id uint64
				lc.do(n, func(c *Consumer) { id = c.Commit(map[kafka.TopicPartition]int64{asg.Partitions[0]: 2}, lc.now) })
				lc.tickUntil(1000, func() bool { return len(eventsOf[*Committed](n)) > 0 }, "commit answered")
				cm := eventsOf[*Committed](n)[0]
				require.Equal(t, id, cm.ID)
				require.NoError(t, cm.Err)
				require.Equal(t, gen, cm.Generation)
				require.Equal(t, asg.MemberID, cm.MemberID)
			}
			// A member's delivery names the generation it was fetched in.
			for _, f := range eventsOf[*Fetched](a) {
				require.Contains(t, aa.Partitions, f.TP)
			}
		})
	}
}

// TestConsumerStaleGenerationCommitRefused: a commit sent in generation G
// that reaches the coordinator after a third member joined and the group
// moved to G+1 is refused with ILLEGAL_GENERATION, and the member, already
// in G+1, stays there; its commits in G+1 succeed. Reference: KIP-98's
// generation fencing of OffsetCommit (Kafka's GroupCoordinator).
func TestConsumerStaleGenerationCommitRefused(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 3, 3)
	a, b := lc.addConsumer(groupConfig(AssignorRange)), lc.addConsumer(groupConfig(AssignorRange))
	var gen int32
	lc.tickUntil(5000, func() bool { var ok bool; gen, ok = stableIn([]*liveConsumer{a, b}, 3); return ok }, "group stable")

	lc.hold = func(env broker.Envelope) bool {
		gr, ok := env.Msg.(broker.GroupRequest)
		if !ok || env.From != a.id {
			return false
		}
		_, commit := gr.Req.(group.CommitRequest)
		return commit
	}
	asg, _ := lastAssigned(a)
	var stale uint64
	lc.do(a, func(c *Consumer) { stale = c.Commit(map[kafka.TopicPartition]int64{asg.Partitions[0]: 1}, lc.now) })
	require.Len(t, lc.held, 1)
	lc.hold = nil

	c3 := lc.addConsumer(groupConfig(AssignorRange))
	var gen2 int32
	lc.tickUntil(10000, func() bool {
		var ok bool
		gen2, ok = stableIn([]*liveConsumer{a, b, c3}, 3)
		return ok && gen2 > gen
	}, "group stable with three members")
	require.NotEmpty(t, eventsOf[*Revoked](a), "a rebalance revokes")

	lc.release()
	lc.tickUntil(1000, func() bool { return len(eventsOf[*Committed](a)) > 0 }, "stale commit answered")
	cm := eventsOf[*Committed](a)[0]
	require.Equal(t, stale, cm.ID)
	require.Equal(t, gen, cm.Generation)
	require.ErrorIs(t, cm.Err, kafka.ErrIllegalGeneration)
	require.False(t, cm.Unknown)

	lc.tick(500)
	now, ok := stableIn([]*liveConsumer{a, b, c3}, 3)
	require.True(t, ok)
	require.Equal(t, gen2, now, "a refused old commit does not make the member rejoin")

	cur, _ := lastAssigned(a)
	parts := map[kafka.TopicPartition]int64{}
	for _, tp := range cur.Partitions {
		parts[tp] = 0
	}
	var fresh uint64
	lc.do(a, func(c *Consumer) { fresh = c.Commit(parts, lc.now) })
	lc.tickUntil(1000, func() bool { return len(eventsOf[*Committed](a)) > 1 }, "commit answered")
	cm = eventsOf[*Committed](a)[1]
	require.Equal(t, fresh, cm.ID)
	require.NoError(t, cm.Err)
	require.Equal(t, gen2, cm.Generation)
}

// TestConsumerCommitWhileRebalancing: a member without a stable
// assignment refuses a commit at once with REBALANCE_IN_PROGRESS, as
// Kafka's consumer does, without sending it.
func TestConsumerCommitWhileRebalancing(t *testing.T) {
	c, err := NewConsumer(broker.ClientIDBase, groupConfig(AssignorRange), rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	c.Commit(map[kafka.TopicPartition]int64{{Topic: "t"}: 3}, 10)
	out, ev := c.Ready()
	for _, env := range out {
		_, isGroup := env.Msg.(broker.GroupRequest)
		require.False(t, isGroup, "nothing goes to a coordinator")
	}
	require.Len(t, ev, 1)
	require.ErrorIs(t, ev[0].(*Committed).Err, kafka.ErrRebalanceInProgress)
}

// TestConsumerSessionTimeoutMovesPartitions: a member that goes silent
// (its process stopped) is removed after session.timeout.ms; the survivor
// rebalances, takes its partitions and resumes them from the offsets the
// silent member committed.
func TestConsumerSessionTimeoutMovesPartitions(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 4, 3)
	all := partitionsOf("t", 4)
	for _, tp := range all {
		lc.produce(tp, "v0", "v1", "v2")
	}
	a, b := lc.addConsumer(groupConfig(AssignorRoundRobin)), lc.addConsumer(groupConfig(AssignorRoundRobin))
	var gen int32
	lc.tickUntil(5000, func() bool { var ok bool; gen, ok = stableIn([]*liveConsumer{a, b}, 4); return ok }, "group stable")

	// Each processes the first two records of each of its partitions and
	// commits their next offset, 2.
	for _, n := range []*liveConsumer{a, b} {
		asg, _ := lastAssigned(n)
		offsets := map[kafka.TopicPartition]int64{}
		for _, tp := range asg.Partitions {
			lc.pollUntil(n, tp, 3, 2000)
			offsets[tp] = 2
		}
		lc.do(n, func(c *Consumer) { c.Commit(offsets, lc.now) })
		lc.tickUntil(1000, func() bool { return len(eventsOf[*Committed](n)) > 0 }, "commit answered")
		require.NoError(t, eventsOf[*Committed](n)[0].Err)
	}
	aParts, _ := lastAssigned(a)

	a.stopped = true
	stoppedAt := lc.now
	lc.tickUntil(10000, func() bool {
		asg, ok := lastAssigned(b)
		return ok && asg.Generation > gen && len(asg.Partitions) == 4 && b.c.g.state == gsStable
	}, "survivor holds every partition")
	took := lc.now - stoppedAt
	require.GreaterOrEqual(t, took, int64(3000), "not before the session timeout")
	require.Less(t, took, int64(3000+2*500+1000), "soon after it")

	// The survivor starts A's partitions from A's commits and reads on.
	for _, tp := range aParts.Partitions {
		lc.pollUntil(b, tp, 1, 2000)
		require.Equal(t, []int64{2}, polledOffsets(b.records[tp]))
		require.Equal(t, []string{"v2"}, polledValues(b.records[tp]))
	}
	var fetched []int64
	for _, ev := range eventsOf[*Positioned](b) {
		if slices.Contains(aParts.Partitions, ev.TP) {
			require.Equal(t, WhyCommitted, ev.Why)
			fetched = append(fetched, ev.Offset)
		}
	}
	require.Equal(t, []int64{2, 2}, fetched)
	for _, d := range eventsOf[*OffsetsFetched](b) {
		if slices.Contains(aParts.Partitions, d.TP) {
			require.EqualValues(t, 2, d.Offset)
		}
	}
}

// TestConsumerCloseLeavesGroup: Close sends LeaveGroup, so the survivor
// rebalances at once rather than after the session timeout.
func TestConsumerCloseLeavesGroup(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 2, 3)
	a, b := lc.addConsumer(groupConfig(AssignorRange)), lc.addConsumer(groupConfig(AssignorRange))
	var gen int32
	lc.tickUntil(5000, func() bool { var ok bool; gen, ok = stableIn([]*liveConsumer{a, b}, 2); return ok }, "group stable")
	lc.do(a, func(c *Consumer) { c.Close(lc.now) })
	require.Empty(t, a.c.Assignment())
	closedAt := lc.now
	lc.tickUntil(3000, func() bool {
		asg, ok := lastAssigned(b)
		return ok && asg.Generation > gen && len(asg.Partitions) == 2
	}, "survivor holds both partitions")
	require.Less(t, lc.now-closedAt, int64(1500), "well before the session timeout")
}

// TestConsumerSimpleCommitManualAssign: a consumer with a group id but
// assigned by hand commits "simple" commits (generation -1, no member),
// and a later consumer of the group assigned the same partition starts
// from that commit.
func TestConsumerSimpleCommitManualAssign(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 1, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	lc.produce(tp, "r0", "r1", "r2")
	cfg := manualConfig(ResetEarliest)
	cfg.Group = "simple"
	a := lc.addConsumer(cfg)
	lc.do(a, func(c *Consumer) { require.NoError(t, c.Assign([]kafka.TopicPartition{tp}, lc.now)) })
	lc.pollUntil(a, tp, 3, 3000)
	require.Equal(t, []int64{-1}, offsetsFetched(a))
	lc.do(a, func(c *Consumer) { c.Commit(map[kafka.TopicPartition]int64{tp: 2}, lc.now) })
	lc.tickUntil(1000, func() bool { return len(eventsOf[*Committed](a)) > 0 }, "commit answered")
	cm := eventsOf[*Committed](a)[0]
	require.NoError(t, cm.Err)
	require.EqualValues(t, -1, cm.Generation)
	require.Empty(t, cm.MemberID)

	b := lc.addConsumer(cfg)
	lc.do(b, func(c *Consumer) { require.NoError(t, c.Assign([]kafka.TopicPartition{tp}, lc.now)) })
	lc.pollUntil(b, tp, 1, 3000)
	require.Equal(t, []int64{2}, offsetsFetched(b))
	require.Equal(t, []string{"r2"}, polledValues(b.records[tp]))
}

func offsetsFetched(n *liveConsumer) []int64 {
	var out []int64
	for _, e := range eventsOf[*OffsetsFetched](n) {
		out = append(out, e.Offset)
	}
	return out
}
