package broker_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// A broker that crashes and starts again on the same disk recovers its log
// from storage before it hears from anyone, registers with a new
// incarnation, catches up on what it missed and rejoins the ISR.
// Reference: spec/SEMANTICS.md, Replication ("Follower restart"); KIP-903 for
// the restarted replica leaving the ISR until it catches up.
func TestRestartedBrokerRecoversItsLogAndRejoins(t *testing.T) {
	c, leader := newTopic(t, opts{})
	for _, v := range []string{"a", "b", "c"} {
		c.produceOK(leader, tp0, v)
	}
	c.tick(2 * fetchWaitMs) // the followers learn HW 3
	before := c.replica(2, tp0)
	require.EqualValues(t, 3, before.HW())
	inc := c.broker(2).Incarnation()

	c.crash(2)
	c.produce(leader, tp0, partition.AcksLeader, "d") // missed while down
	require.NoError(t, takeOne[broker.ProduceResponse](c).Err)

	b := c.start(2)
	require.Greater(t, b.Incarnation(), inc)
	require.Equal(t, []kafka.TopicPartition{tp0}, b.Partitions(), "the partition is found on disk")
	r, ok := b.Replica(tp0)
	require.True(t, ok)
	require.EqualValues(t, 3, r.LEO(), "the log is recovered before any message")
	require.EqualValues(t, 3, r.HW(), "so is the HW checkpoint")
	require.Equal(t, []string{"a", "b", "c"}, values(r.Log()))
	require.Equal(t, partition.RoleNone, r.Role(), "it waits for the controller")

	c.settle()
	r = c.replica(2, tp0)
	require.Equal(t, partition.RoleFollower, r.Role())
	c.tickUntil(5000, func() bool { return len(c.state(tp0).ISR) == 3 }, "broker 2 never rejoined the ISR")
	require.Equal(t, []string{"a", "b", "c", "d"}, values(r.Log()))

	require.EqualValues(t, 4, c.produceOK(leader, tp0, "e"))
	require.EqualValues(t, 5, r.LEO(), "an ISR member acknowledged e, so it holds it")
}

// A restart is not a resurrection: messages addressed to the previous
// process (its StateUpdates) must not move the new one.
// Reference: broker.StateUpdate's doc ("a restarted broker ignores updates
// meant for its previous life").
func TestRestartedBrokerIgnoresStateMeantForItsPreviousLife(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.produceOK(leader, tp0, "a")
	old := c.broker(2).Incarnation()
	c.crash(2)
	b := c.start(2)
	c.queue = c.queue[:0] // hold the registration back
	s := c.state(tp0)
	require.NoError(t, b.Handle(broker.Envelope{From: broker.VoterNode(1), To: 2, Msg: broker.StateUpdate{
		Incarnation: old, Full: true, States: []kafka.PartitionState{s}, LiveBrokers: []int32{1, 2, 3},
	}}, c.now))
	r, ok := b.Replica(tp0)
	require.True(t, ok)
	require.Equal(t, partition.RoleNone, r.Role(), "a state for the old incarnation was applied")
	require.Empty(t, b.TakeOutbox(), "the broker acted on a state meant for its previous life")
}

// Without log.flush.interval.messages=1 a power loss takes the records the
// broker appended but never synced (here, all of them: the log file itself
// was never synced). With FlushEveryAppend every appended record survives.
// Either way the restarted follower refetches from the leader, so the
// cluster loses nothing.
// Reference: spec/SEMANTICS.md, Known bugs ("last replica standing": durability
// comes from replication, not fsync); Kafka's log.flush.interval.messages.
func TestPowerLossKeepsOnlySyncedRecords(t *testing.T) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flush=%v", flush), func(t *testing.T) {
			c, leader := newTopic(t, opts{flush: flush})
			for _, v := range []string{"a", "b", "c"} {
				c.produceOK(leader, tp0, v)
			}
			logFile := fmt.Sprintf("p/%s/%d/%s", tp0.Topic, tp0.Partition, storage.LogFile)
			disk := c.nodes[2].disk
			if flush {
				require.Zero(t, disk.UnsyncedBytes(logFile), "FlushEveryAppend left bytes unsynced")
			} else {
				require.NotZero(t, disk.UnsyncedBytes(logFile))
			}

			c.powerLoss(2)
			b := c.start(2)
			r, ok := b.Replica(tp0)
			require.True(t, ok)
			if flush {
				require.EqualValues(t, 3, r.LEO(), "a synced record was lost")
				require.Equal(t, []string{"a", "b", "c"}, values(r.Log()))
			} else {
				require.Less(t, r.LEO(), int64(3), "unsynced records survived a power loss")
			}
			require.LessOrEqual(t, r.HW(), r.LEO(), "the HW checkpoint is clamped to what survived")

			c.settle()
			c.tickUntil(5000, func() bool { return len(c.state(tp0).ISR) == 3 }, "broker 2 never rejoined the ISR")
			require.Equal(t, []string{"a", "b", "c"}, values(c.replica(2, tp0).Log()))
		})
	}
}

// A follower that lost its log in a power loss must not be put back in the
// ISR on the strength of a fetch its previous process sent. Here the leader
// holds follower 2's last fetch (offset 3, nothing new to send) when 2 loses
// power; 2 restarts empty, re-registers and leaves the ISR. A produce then
// releases the held fetch: the leader replays it, believes 2 is at offset 3,
// and proposes it back into the ISR, which the controller accepts. 2 holds
// nothing, yet it is an ISR member and the first in line to lead: when the
// leader restarts, 2 is elected and every committed record is gone.
// Reference: KIP-903 (replicas with a stale broker epoch must not join the
// ISR); spec/SEMANTICS.md, StrongIsr.
func TestStaleFetchDoesNotReturnAnEmptyReplicaToTheISR(t *testing.T) {
	c, leader := newTopic(t, opts{})
	require.EqualValues(t, 1, leader)
	for _, v := range []string{"a", "b", "c"} {
		c.produceOK(leader, tp0, v)
	}
	// Both followers' next fetches (offset 3) now wait at the leader.

	c.powerLoss(2)
	c.start(2)
	c.pause(2) // slow to start: it has registered, but not yet fetched
	c.settle()
	require.Equal(t, []int32{1, 3}, c.state(tp0).ISR, "the restarted broker left the ISR (KIP-903)")

	c.produce(leader, tp0, partition.AcksLeader, "d") // releases the held fetches
	require.NoError(t, takeOne[broker.ProduceResponse](c).Err)
	hw := c.replica(leader, tp0).HW()
	r2, ok := c.nodes[2].b.Replica(tp0)
	require.True(t, ok)
	if isr := c.state(tp0).ISR; len(isr) == 3 {
		assert.GreaterOrEqual(t, r2.LEO(), hw,
			"broker 2 is in the ISR %v with LEO %d, below the leader's HW %d", isr, r2.LEO(), hw)
	}

	// What follows from it: the leader restarts, 2 is elected, a, b and c
	// are gone from the cluster.
	c.crash(1)
	c.start(1)
	c.settle()
	c.resume(2)
	c.tick(2000)
	newLeader := broker.NodeID(c.state(tp0).Leader)
	got := values(c.read(newLeader, tp0, 0).Batches)
	require.Equal(t, []string{"a", "b", "c"}, got[:min(3, len(got))],
		"committed records lost after broker %d was elected", newLeader)
}

// The leader-epoch checkpoint and the producer snapshot are derived from
// the log: damaged, they are rebuilt from it with a warning, and the
// broker starts. A damaged HW checkpoint is not derived, and the error
// names the file.
func TestDamagedDerivedFilesAreRebuilt(t *testing.T) {
	c, leader := newTopic(t, opts{})
	for _, v := range []string{"a", "b", "c"} {
		c.produceOK(leader, tp0, v)
	}
	c.tick(2 * fetchWaitMs)
	c.crash(2)
	n := c.nodes[2]
	for _, f := range []string{storage.EpochFile, storage.ProducerSnapshotFile} {
		require.NoError(t, n.disk.WriteFileAtomic(tp0Dir+"/"+f, []byte("\x00garbage\n")))
	}
	b, err := broker.Open(n.cfg, n.disk, 99, c.now, nil)
	require.NoError(t, err, "a damaged derived file must not stop the broker")
	var warnings []string
	for _, e := range b.TakeEvents() {
		if e.Kind == "warning" {
			warnings = append(warnings, e.Detail)
		}
	}
	require.Len(t, warnings, 2, "one warning per damaged file")
	assert.Contains(t, warnings[0], storage.EpochFile)
	assert.Contains(t, warnings[1], "producer state")
	r, ok := b.Replica(tp0)
	require.True(t, ok)
	require.Equal(t, []string{"a", "b", "c"}, values(r.Log()))
	cache := r.EpochCache()
	require.NotEmpty(t, cache.Entries(), "the cache was rebuilt from the log")

	require.NoError(t, n.disk.WriteFileAtomic(tp0Dir+"/"+storage.HWFile, []byte("\x00garbage\n")))
	_, err = broker.Open(n.cfg, n.disk, 100, c.now, nil)
	require.ErrorContains(t, err, storage.HWFile)
	require.ErrorContains(t, err, "move the partition's directory", "the error says how to fix it")
}

// Bytes flipped in the middle of a synced log: recovery keeps the prefix,
// and the broker says loudly that this replica lost committed data,
// naming the partition, the offsets and the file.
func TestDamageInsideTheLogIsReportedAsLostData(t *testing.T) {
	c, leader := newTopic(t, opts{flush: true})
	for i := range 20 {
		c.produceOK(leader, tp0, fmt.Sprint("v", i))
	}
	c.tick(2 * fetchWaitMs)
	c.crash(2)
	n := c.nodes[2]
	name := tp0Dir + "/" + storage.LogFile
	flipMiddle(t, n.disk, name)
	b, err := broker.Open(n.cfg, n.disk, 99, c.now, nil)
	require.NoError(t, err)
	var lost []string
	for _, e := range b.TakeEvents() {
		if e.Kind == "warning" && strings.Contains(e.Detail, "LOST COMMITTED DATA") {
			lost = append(lost, e.String())
		}
	}
	require.Len(t, lost, 1, "the damage must be reported")
	assert.Contains(t, lost[0], "t-0")
	assert.Contains(t, lost[0], name)
	assert.Contains(t, lost[0], "below its checkpointed high watermark 20")
}

// The last ISR member comes back on a damaged log, or on an empty disk,
// while the other replicas come back intact: it is not elected, so nobody
// truncates a good copy to its damaged one; the partition stays offline, as
// with unclean election off, until an operator decides (it used to be
// elected, and the intact replicas dropped 20 acknowledged records to
// match it). With min ISR 1 there are no eligible leader replicas (see
// the next test). On an empty disk there is no log to find damage in: the
// broker registers with an empty disk, and the controller takes it to have
// lost what it held.
func TestDamagedLastISRMemberIsNotElected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, n *node)
	}{
		{"damaged log", func(t *testing.T, n *node) { flipMiddle(t, n.disk, tp0Dir+"/"+storage.LogFile) }},
		{"empty disk", func(_ *testing.T, n *node) { n.disk = storage.NewSimDisk() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, leader := newTopic(t, opts{flush: true, lagMs: 500})
			require.Equal(t, broker.NodeID(1), leader)
			for i := range 20 {
				c.produceOK(leader, tp0, fmt.Sprint("v", i))
			}
			c.tick(2 * fetchWaitMs)
			c.crash(2)
			c.crash(3)
			c.tickUntil(10_000, func() bool { return slices.Equal(c.state(tp0).ISR, []int32{1}) }, "the ISR never shrank to broker 1") // replica lag
			c.crash(1)
			tc.damage(t, c.nodes[1])
			c.start(2)
			c.start(3)
			c.start(1)
			c.tick(5000)
			require.Equal(t, kafka.NoLeader, c.state(tp0).Leader, "broker 1 lost committed records and must not lead")
			for _, id := range []broker.NodeID{2, 3} {
				require.EqualValues(t, 20, c.replica(id, tp0).LEO(), "broker %d's intact copy", id)
			}
		})
	}
}

// The same with min ISR 2: as the ISR shrank to broker 1, brokers 2 and 3
// left it below min ISR, so they hold every committed record (eligible
// leader replicas, KIP-966), and they synced every append, so their
// restarts lost nothing. The damaged broker comes back first and does not
// lead; broker 2 does, with all 20 records, and broker 1 copies them
// again. Were the others' appends not synced, they would have left the
// ELR as they restarted, and the partition would stay offline.
func TestEligibleReplicaLeadsWhenTheLastISRMemberIsDamaged(t *testing.T) {
	for _, synced := range []bool{true, false} {
		t.Run(fmt.Sprintf("synced=%t", synced), func(t *testing.T) {
			c, leader := newTopic(t, opts{flush: true, lagMs: 500, minISR: 2})
			require.Equal(t, broker.NodeID(1), leader)
			for i := range 20 {
				c.produceOK(leader, tp0, fmt.Sprint("v", i))
			}
			c.tick(2 * fetchWaitMs)
			c.crash(2)
			c.crash(3)
			c.tickUntil(10_000, func() bool { return slices.Equal(c.state(tp0).ISR, []int32{1}) }, "the ISR never shrank to broker 1")
			c.crash(1)
			c.tick(sessionTimeoutMs + 1000) // the controller declares all three dead
			flipMiddle(t, c.nodes[1].disk, tp0Dir+"/"+storage.LogFile)
			c.start(1)
			c.tick(1000)
			require.Equal(t, kafka.NoLeader, c.state(tp0).Leader, "broker 1 lost committed records and must not lead")
			for _, id := range []broker.NodeID{2, 3} {
				if !synced {
					c.nodes[id].cfg.FlushEveryAppend = false
					require.NoError(t, c.nodes[id].disk.Remove("flush-every-append"), "as a process without flush_every_append leaves it")
				}
				c.start(id)
			}
			c.tick(5000)
			if !synced {
				require.Equal(t, kafka.NoLeader, c.state(tp0).Leader, "no replica is known to hold the data")
				return
			}
			require.Equal(t, int32(2), c.state(tp0).Leader, "the eligible replica leads")
			c.tickUntil(10_000, func() bool { return len(c.state(tp0).ISR) == 3 }, "the ISR never grew back")
			for _, id := range []broker.NodeID{1, 2, 3} {
				require.Equal(t, 20, len(values(c.replica(id, tp0).Log())), "broker %d", id)
			}
		})
	}
}

// flipMiddle flips 8 bytes in the middle of a synced file.
func flipMiddle(t *testing.T, d *storage.SimDisk, name string) {
	t.Helper()
	data, err := d.ReadFile(name)
	require.NoError(t, err)
	for i := range 8 {
		data[len(data)/2+i] ^= 0xff
	}
	require.NoError(t, d.WriteFileAtomic(name, data))
}
