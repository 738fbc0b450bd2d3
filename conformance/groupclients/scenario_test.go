package groupclients

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/watermarkhq/watermark/impl/node"
)

// member is one consumer of the group, run by some client library.
type member interface {
	// stop closes the member cleanly (it leaves the group).
	stop()
	// crash cuts every connection of the member at once and refuses new
	// ones: the coordinator hears nothing more from it, not even a
	// LeaveGroup, and must expire it after its session timeout.
	crash()
}

// memberStarter starts a member of group g consuming topic: it records
// every record it consumes and its assignment in l under name, and commits
// on its own (auto-commit) or, when explicit, with commit calls of its
// own; it starts from the earliest offset when g has none committed.
type memberStarter func(t *testing.T, bootstrap []string, g, topic, name string, explicit bool, l *ledger) member

// runGroupScenario is the consumer-group scenario every client library
// goes through:
//
//  1. Two members a (auto-commit) and b (explicit commits) share the six
//     partitions; records 0..299 are produced and consumed, and committed.
//  2. a crashes (connections cut, no LeaveGroup); records 300..599 are
//     produced. The coordinator must expire a and b must take over a's
//     partitions: every record is consumed at least once.
//  3. The broker coordinating the group crashes. The new coordinator must
//     serve the offsets committed before (they live in the replicated
//     __consumer_offsets), b must find it and read records 600..899.
//  4. b leaves; a new member c joins and must resume from b's committed
//     offsets: it reads records 900..959 and nothing before.
//
// Reference: KIP-62 (session timeout expiry), KIP-394, Kafka's
// coordinator failover through the offsets topic (KAFKA-1012).
func runGroupScenario(t *testing.T, start memberStarter) {
	lc := startCluster(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(lc.Bootstrap()...))
	require.NoError(t, err)
	defer admin.Close()
	const topic, g = "events", "readers"
	createTopic(t, admin, topic)
	l := newLedger()

	a := start(t, lc.Bootstrap(), g, topic, "a", false, l)
	b := start(t, lc.Bootstrap(), g, topic, "b", true, l)
	defer b.stop()
	ok := assertEventually(60*time.Second, func() bool {
		na, nb := l.assignedTo("a"), l.assignedTo("b")
		return na > 0 && nb > 0 && na+nb == topicPartitions
	})
	require.True(t, ok, "the two members never shared the partitions: a has %d, b has %d", l.assignedTo("a"), l.assignedTo("b"))

	// 1. Both members consume and commit.
	produce(t, lc.Bootstrap(), topic, 0, 300)
	requireAllConsumed(t, l, 0, 300)
	require.Positive(t, l.consumedBy("a"))
	require.Positive(t, l.consumedBy("b"))
	requireCommittedThrough(t, admin, g, topic, 300)

	// 2. a crashes; b must take over its partitions.
	a.crash()
	produce(t, lc.Bootstrap(), topic, 300, 600)
	requireAllConsumed(t, l, 300, 600)
	require.Equal(t, topicPartitions, l.assignedTo("b"), "b owns every partition after a expired")
	before := requireCommittedThrough(t, admin, g, topic, 600)

	// 3. The coordinator crashes; its offsets survive on the new one.
	coord := coordinatorOf(t, admin, g)
	require.NoError(t, lc.Kill(coord))
	t.Logf("killed coordinator broker %d", coord)
	var after map[int32]int64
	ok = assertEventually(60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		after, err = committed(ctx, admin, g, topic)
		return err == nil
	})
	require.True(t, ok, "no coordinator answered after broker %d crashed: %v", coord, err)
	require.Equal(t, before, after, "committed offsets after coordinator failover")
	require.NotEqual(t, coord, coordinatorOf(t, admin, g))
	produce(t, liveBootstrap(lc, coord), topic, 600, 900)
	requireAllConsumed(t, l, 600, 900)
	requireCommittedThrough(t, admin, g, topic, 900)

	// 4. A new member resumes from the committed offsets.
	b.stop()
	c := start(t, liveBootstrap(lc, coord), g, topic, "c", false, l)
	defer c.stop()
	produce(t, liveBootstrap(lc, coord), topic, 900, 960)
	requireAllConsumed(t, l, 900, 960)
	require.GreaterOrEqual(t, l.lowestBy("c"), 900, "c resumed from the committed offsets, not from the start")
}

// liveBootstrap is the cluster's addresses without the killed broker's.
func liveBootstrap(lc *node.LocalCluster, killed int) []string {
	var out []string
	for id := 1; id <= lc.Brokers(); id++ {
		if id != killed {
			out = append(out, lc.Addr(id))
		}
	}
	return out
}
