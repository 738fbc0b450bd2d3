package broker_test

import (
	"context"
	"slices"
	"testing"

	"github.com/pingcap/failpoint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Tests of the idempotent producer on brokers: producer ids, retries after
// lost answers and leader changes, the producer-state snapshot and its
// failpoints.

// snapshotEveryMs is the HW checkpoint interval of the tests that need
// producer snapshots: the broker takes them on that tick.
const snapshotEveryMs = 100

// tp0Dir is tp0's directory on a broker's disk.
const tp0Dir = "p/t/0"

// newIdempotenceTopic is newTopic with the periodic HW checkpoint (and so
// producer snapshots) every intervalMs; 0 keeps the harness's checkpoint on
// every HW change, which takes no snapshot. The brokers restart with the
// new config before the topic exists, so they start from empty disks.
func newIdempotenceTopic(t *testing.T, o opts, intervalMs int64) (*cluster, broker.NodeID) {
	t.Helper()
	c := newCluster(t, o)
	if intervalMs > 0 {
		for _, n := range c.nodes[1:] {
			c.crash(n.id)
			n.cfg.HWCheckpointIntervalMs = intervalMs
			c.start(n.id)
		}
		c.settle()
	}
	c.createTopic("t", 1, 3)
	s := c.state(tp0)
	require.Equal(t, []int32{1, 2, 3}, s.Replicas)
	leader := broker.NodeID(s.Leader)
	require.Equal(t, partition.RoleLeader, c.replica(leader, tp0).Role())
	return c, leader
}

// initProducerID asks broker to for a PID and requires one.
func (c *cluster) initProducerID(to broker.NodeID) int64 {
	c.t.Helper()
	req := broker.InitProducerIDRequest{Correlation: c.nextCorr()}
	c.send(to, req)
	resp := takeOne[broker.InitProducerIDResponse](c)
	require.Equal(c.t, req.Correlation, resp.Correlation)
	require.NoError(c.t, resp.Err)
	require.Zero(c.t, resp.ProducerEpoch, "a new PID starts at epoch 0")
	return resp.ProducerID
}

// idempotentRequest is produceRequest from an idempotent producer.
func idempotentRequest(corr uint64, tp kafka.TopicPartition, acks partition.Acks, pid int64, epoch int16, seq int32, values ...string) broker.ProduceRequest {
	req := produceRequest(corr, tp, acks, values...)
	req.Batch.ProducerID, req.Batch.ProducerEpoch, req.Batch.BaseSequence = pid, epoch, seq
	return req
}

// retry sends req again, as a producer does after a lost answer: the same
// batch under a new correlation id.
func (c *cluster) retry(to broker.NodeID, req broker.ProduceRequest) broker.ProduceRequest {
	c.t.Helper()
	req.Correlation = c.nextCorr()
	c.send(to, req)
	return req
}

// answer takes the one ProduceResponse the client holds, for req.
func (c *cluster) answer(req broker.ProduceRequest) broker.ProduceResponse {
	c.t.Helper()
	resp := takeOne[broker.ProduceResponse](c)
	require.Equal(c.t, req.Correlation, resp.Correlation)
	return resp
}

// produceIdempotent sends an idempotent batch and requires it acknowledged
// at want.
func (c *cluster) produceIdempotent(to broker.NodeID, acks partition.Acks, pid int64, seq int32, want int64, values ...string) broker.ProduceRequest {
	c.t.Helper()
	req := idempotentRequest(c.nextCorr(), tp0, acks, pid, 0, seq, values...)
	c.send(to, req)
	resp := c.answer(req)
	require.NoError(c.t, resp.Err)
	require.Equal(c.t, want, resp.BaseOffset)
	return req
}

// snapshotOn reads the producer snapshot stored on a broker's disk.
func snapshotOn(t *testing.T, d *storage.SimDisk) (*partition.ProducerSnapshot, bool) {
	t.Helper()
	lines, ok, err := storage.ReadProducerSnapshot(d, tp0Dir)
	require.NoError(t, err)
	if !ok {
		return nil, false
	}
	s, err := partition.ParseProducerSnapshot(lines)
	require.NoError(t, err)
	return s, true
}

// replayed is the producer state a replay of r's whole log gives: what
// every restart must end with, whatever snapshot it started from.
func replayed(t *testing.T, r *partition.Replica) partition.ProducerSnapshot {
	t.Helper()
	fresh, err := partition.New(partition.DefaultConfig(9), r.TopicPartition(), slices.Clone(r.Log()), 0, storage.EpochCache{}, nil)
	require.NoError(t, err)
	return fresh.ProducerSnapshot()
}

// failoverTo2 waits until every replica is in the ISR, then restarts
// broker 1 so that the controller elects broker 2 (the first live ISR
// member in assignment order).
func (c *cluster) failoverTo2() {
	c.t.Helper()
	c.tickUntil(5000, func() bool { return len(c.state(tp0).ISR) == 3 }, "the ISR never grew back to 3")
	require.EqualValues(c.t, 1, c.state(tp0).Leader)
	c.crash(1)
	c.start(1)
	c.settle()
	require.EqualValues(c.t, 2, c.state(tp0).Leader)
	require.Equal(c.t, partition.RoleLeader, c.replica(2, tp0).Role())
}

// "InitProducerId returns a producer id (PID) and epoch"; "A new PID
// (producer restart) is a new identity". Every PID a cluster hands out is
// new: distinct across brokers and requests, and a restarted broker (a new
// incarnation) never repeats one of its previous process.
// Reference: spec/SEMANTICS.md, Producer; KIP-730 (broker-allocated id blocks).
func TestInitProducerIDNeverRepeats(t *testing.T) {
	c := newCluster(t, opts{})
	seen := map[int64]broker.NodeID{}
	ask := func(id broker.NodeID, n int) {
		for range n {
			pid := c.initProducerID(id)
			require.Positive(t, pid, "a PID must be a valid producer id")
			if prev, dup := seen[pid]; dup {
				t.Fatalf("PID %d handed out by broker %d and again by broker %d", pid, prev, id)
			}
			seen[pid] = id
			assert.Equal(t, c.broker(id).Incarnation(), pid>>20, "PID %d: incarnation in the high bits", pid)
		}
	}
	for _, id := range []broker.NodeID{1, 2, 3} {
		ask(id, 5)
	}
	for range 3 {
		for _, id := range []broker.NodeID{1, 2, 3} {
			c.crash(id)
			c.start(id)
			c.settle()
			ask(id, 3)
		}
	}
	require.Len(t, seen, 15+27)
}

// "A retry of one of them (same epoch, same range) is answered with the
// original offset and not appended again." The answer to an idempotent
// produce is lost; the producer sends the batch again and gets the first
// offset, and the record is stored once, on every replica. A retry that
// reaches the leader while the original still waits for acks=all waits too,
// and both are answered with the same offset.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentRetryAfterLostAnswerIsStoredOnce(t *testing.T) {
	c, leader := newIdempotenceTopic(t, opts{}, 0)
	pid := c.initProducerID(2)
	c.produceOK(leader, tp0, "plain")

	// Each answer below is "lost": the producer sends the batch again.
	a := c.produceIdempotent(leader, partition.AcksAll, pid, 0, 1, "a")
	resp := c.answer(c.retry(leader, a))
	require.NoError(t, resp.Err)
	assert.EqualValues(t, 1, resp.BaseOffset, "the retry is answered with the original offset")

	b := c.produceIdempotent(leader, partition.AcksLeader, pid, 1, 2, "b1", "b2")
	resp = c.answer(c.retry(leader, b))
	require.NoError(t, resp.Err)
	assert.EqualValues(t, 2, resp.BaseOffset)

	// The followers stop fetching: the original and its retry both wait.
	c.pause(2, 3)
	d := idempotentRequest(c.nextCorr(), tp0, partition.AcksAll, pid, 0, 3, "d")
	c.send(leader, d)
	dRetry := c.retry(leader, d)
	require.Empty(t, take[broker.ProduceResponse](c), "acks=all answered before the ISR has the batch")
	c.resume(2, 3)
	c.tick(2 * fetchWaitMs)
	resps := take[broker.ProduceResponse](c)
	require.Len(t, resps, 2)
	var corrs []uint64
	for _, r := range resps {
		require.NoError(t, r.Err)
		assert.EqualValues(t, 4, r.BaseOffset)
		corrs = append(corrs, r.Correlation)
	}
	assert.ElementsMatch(t, []uint64{d.Correlation, dRetry.Correlation}, corrs, "one answer each")

	c.tick(2 * fetchWaitMs)
	want := []string{"plain", "a", "b1", "b2", "d"}
	assert.Equal(t, want, values(c.read(leader, tp0, 0).Batches))
	for _, id := range []broker.NodeID{1, 2, 3} {
		assert.Equal(t, want, values(c.replica(id, tp0).Log()), "broker %d", id)
		assert.Equal(t, want, storedValues(t, c.nodes[id].disk, tp0), "broker %d's disk", id)
	}
}

// "Followers rebuild producer state while they replicate, so a new leader
// deduplicates as the old one did." The answer is lost and the leader
// fails; the retry reaches the new leader, which answers with the original
// offset and does not append it again (Known bugs, "dedup across leader
// change", on the correct variant).
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentRetryAfterLeaderChangeIsStoredOnce(t *testing.T) {
	c, leader := newIdempotenceTopic(t, opts{}, 0)
	require.EqualValues(t, 1, leader)
	pid := c.initProducerID(3)
	a := c.produceIdempotent(leader, partition.AcksAll, pid, 0, 0, "a")
	bc := c.produceIdempotent(leader, partition.AcksAll, pid, 1, 1, "b", "c")

	c.failoverTo2()
	for _, req := range []broker.ProduceRequest{bc, a} {
		resp := c.answer(c.retry(2, req))
		require.NoError(t, resp.Err)
		assert.EqualValues(t, map[int32]int64{0: 0, 1: 1}[req.Batch.BaseSequence], resp.BaseOffset)
	}
	c.produceIdempotent(2, partition.AcksAll, pid, 3, 3, "d")
	c.tick(2 * fetchWaitMs)
	for _, id := range []broker.NodeID{1, 2, 3} {
		assert.Equal(t, []string{"a", "b", "c", "d"}, values(c.replica(id, tp0).Log()), "broker %d", id)
	}
}

// The refusals of the idempotent producer reach the client as errors of the
// produce: a gap (OUT_OF_ORDER_SEQUENCE_NUMBER), an older epoch
// (INVALID_PRODUCER_EPOCH), a new epoch not starting at 0, and a later
// sequence from a PID the partition never saw; none appends anything.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentRefusalsAnswerTheProducer(t *testing.T) {
	c, leader := newIdempotenceTopic(t, opts{}, 0)
	pid := c.initProducerID(leader)
	req := idempotentRequest(c.nextCorr(), tp0, partition.AcksAll, pid, 2, 0, "a")
	c.send(leader, req)
	require.NoError(t, c.answer(req).Err)

	for _, tc := range []struct {
		pid   int64
		epoch int16
		seq   int32
		want  error
	}{
		{pid, 2, 2, kafka.ErrOutOfOrderSequence},
		{pid, 1, 1, kafka.ErrInvalidProducerEpoch},
		{pid, 3, 1, kafka.ErrOutOfOrderSequence},
		{pid + 1, 0, 4, kafka.ErrUnknownProducerID},
	} {
		req := idempotentRequest(c.nextCorr(), tp0, partition.AcksAll, tc.pid, tc.epoch, tc.seq, "x")
		c.send(leader, req)
		resp := c.answer(req)
		require.ErrorIs(t, resp.Err, tc.want, "pid %d epoch %d seq %d", tc.pid, tc.epoch, tc.seq)
		assert.EqualValues(t, -1, resp.BaseOffset)
	}
	assert.EqualValues(t, 1, c.replica(leader, tp0).LEO())
}

// "after restart it is rebuilt from a snapshot plus log replay". On the HW
// checkpoint tick every broker writes its producer state at its LEO; a
// broker that restarts from that snapshot and a longer log replays the tail
// and holds exactly what a replay of its whole log gives, so once it leads
// it deduplicates retries of batches from before its crash.
// Reference: spec/SEMANTICS.md, Producer.
func TestProducerSnapshotOnCheckpointTickAndRestart(t *testing.T) {
	c, leader := newIdempotenceTopic(t, opts{}, snapshotEveryMs)
	require.EqualValues(t, 1, leader)
	pid := c.initProducerID(1)
	a := c.produceIdempotent(leader, partition.AcksAll, pid, 0, 0, "a")
	bc := c.produceIdempotent(leader, partition.AcksAll, pid, 1, 1, "b", "c")
	for _, id := range []broker.NodeID{1, 2, 3} {
		_, ok := snapshotOn(t, c.nodes[id].disk)
		require.False(t, ok, "broker %d took a snapshot before its checkpoint tick", id)
	}

	c.tick(snapshotEveryMs)
	for _, id := range []broker.NodeID{1, 2, 3} {
		snap, ok := snapshotOn(t, c.nodes[id].disk)
		require.True(t, ok, "broker %d took no snapshot on its checkpoint tick", id)
		r := c.replica(id, tp0)
		assert.EqualValues(t, r.LEO(), snap.Offset, "broker %d: a snapshot is taken at LEO", id)
		assert.Equal(t, r.ProducerSnapshot(), *snap, "broker %d", id)
		require.Len(t, snap.Producers, 1)
		assert.Equal(t, pid, snap.Producers[0].ProducerID)
	}

	// d is in every log but in no snapshot when broker 2 crashes.
	d := c.produceIdempotent(leader, partition.AcksAll, pid, 3, 3, "d")
	c.crash(2)
	r2, ok := c.start(2).Replica(tp0)
	require.True(t, ok)
	snap, ok := snapshotOn(t, c.nodes[2].disk)
	require.True(t, ok)
	require.EqualValues(t, 3, snap.Offset)
	require.EqualValues(t, 4, r2.LEO(), "the crash kept the page cache")
	assert.Equal(t, replayed(t, r2), r2.ProducerSnapshot(), "snapshot plus replay differs from a full replay")

	c.settle()
	c.failoverTo2()
	for _, req := range []broker.ProduceRequest{a, bc, d} {
		resp := c.answer(c.retry(2, req))
		require.NoError(t, resp.Err)
		assert.EqualValues(t, map[int32]int64{0: 0, 1: 1, 3: 3}[req.Batch.BaseSequence], resp.BaseOffset,
			"retry of sequence %d", req.Batch.BaseSequence)
	}
	c.produceIdempotent(2, partition.AcksAll, pid, 4, 4, "e")
	c.tick(2 * fetchWaitMs)
	for _, id := range []broker.NodeID{1, 2, 3} {
		assert.Equal(t, []string{"a", "b", "c", "d", "e"}, values(c.replica(id, tp0).Log()), "broker %d", id)
	}
}

// loseHeld drops what waited for paused brokers, as a network that lost it.
func (c *cluster) loseHeld(ids ...broker.NodeID) {
	for _, id := range ids {
		c.nodes[id].held = nil
	}
}

// "A truncation below a snapshot's offset removes the snapshot, so a
// restart never trusts one that describes batches the log no longer
// holds." Broker 1 snapshots a batch only it has; it restarts as a
// follower of a leader that never had it and truncates it: the snapshot is
// gone, the producer's retry is appended (not answered with an offset that
// now holds another record), and a later restart rebuilds the right state
// (failpoints/README.md, afterProducerSnapshot).
// Reference: spec/SEMANTICS.md, Producer.
func TestTruncationBelowProducerSnapshotRemovesIt(t *testing.T) {
	c, leader := newIdempotenceTopic(t, opts{}, snapshotEveryMs)
	require.EqualValues(t, 1, leader)
	pid := c.initProducerID(1)
	c.produceIdempotent(leader, partition.AcksAll, pid, 0, 0, "a")
	c.produceIdempotent(leader, partition.AcksAll, pid, 1, 1, "b")
	c.tick(snapshotEveryMs)

	c.pause(2, 3)
	x := c.produceIdempotent(leader, partition.AcksLeader, pid, 2, 2, "x")
	c.tick(snapshotEveryMs)
	snap, ok := snapshotOn(t, c.nodes[1].disk)
	require.True(t, ok)
	require.EqualValues(t, 3, snap.Offset, "broker 1's snapshot covers x")

	c.crash(1)
	c.loseHeld(2, 3) // x never reaches the followers
	c.resume(2, 3)
	c.start(1) // broker 2 is elected; 1 follows it and truncates x
	c.settle()
	require.EqualValues(t, 2, c.state(tp0).Leader)
	r1 := c.replica(1, tp0)
	require.Equal(t, partition.RoleFollower, r1.Role())
	require.Equal(t, []string{"a", "b"}, values(r1.Log()))
	_, ok = snapshotOn(t, c.nodes[1].disk)
	assert.False(t, ok, "the snapshot describing x outlived x's truncation")

	// Another producer takes offset 2; x's retry goes after it.
	other := c.initProducerID(2)
	c.produceIdempotent(2, partition.AcksAll, other, 0, 2, "q")
	resp := c.answer(c.retry(2, x))
	require.NoError(t, resp.Err)
	assert.EqualValues(t, 3, resp.BaseOffset, "a truncated batch is appended again, not answered as a duplicate")
	c.tick(2 * fetchWaitMs)
	require.Equal(t, []string{"a", "b", "q", "x"}, values(c.replica(1, tp0).Log()))

	// Broker 1 restarts before its next snapshot: it rebuilds from its log.
	c.crash(1)
	r1, ok = c.start(1).Replica(tp0)
	require.True(t, ok)
	assert.Equal(t, replayed(t, r1), r1.ProducerSnapshot())
}

// A snapshot past the log's end is one New ignores ("a power loss took the
// tail it describes"): the replica replays the whole log. The broker must
// then not keep that file as its current snapshot: load records its offset
// as the snapshot's (hosted.snapshotAt), so when the log grows back to
// exactly that offset the checkpoint tick writes no new one, and the next
// restart trusts the stale file, whose batches are not the log's. Here the
// stale snapshot says producer P wrote sequences 2 and 3 at offsets 2 and
// 3; the log holds Q's records there. After the restart the replica answers
// P's new batch 2 as a duplicate at offset 2 (Q's record): P's write is
// lost. The file is what a process death between the truncation's sync and
// RemoveProducerSnapshot in apply leaves behind (no failpoint sits there),
// and the outcome is the checkers' dedup-failure's twin: a write lost to a
// false duplicate.
// Reference: spec/SEMANTICS.md, Producer.
func TestIgnoredProducerSnapshotIsNotTrustedLater(t *testing.T) {
	c, leader := newIdempotenceTopic(t, opts{}, snapshotEveryMs)
	require.EqualValues(t, 1, leader)
	p := c.initProducerID(1)
	c.produceIdempotent(leader, partition.AcksAll, p, 0, 0, "p0")
	c.produceIdempotent(leader, partition.AcksAll, p, 1, 1, "p1")
	c.tick(snapshotEveryMs)

	c.crash(2)
	stale := partition.ProducerSnapshot{Offset: 4, Producers: []partition.ProducerSnapshotEntry{{
		ProducerID: p,
		Batches: []partition.SnapshotBatch{
			{FirstSeq: 0, LastSeq: 0, Base: 0, Last: 0}, {FirstSeq: 1, LastSeq: 1, Base: 1, Last: 1},
			{FirstSeq: 2, LastSeq: 2, Base: 2, Last: 2}, {FirstSeq: 3, LastSeq: 3, Base: 3, Last: 3},
		},
	}}}
	require.NoError(t, storage.WriteProducerSnapshot(c.nodes[2].disk, tp0Dir, stale.Lines()))
	r2, ok := c.start(2).Replica(tp0)
	require.True(t, ok)
	require.EqualValues(t, 2, r2.LEO())
	require.Equal(t, replayed(t, r2), r2.ProducerSnapshot(), "New ignores a snapshot past LEO")
	c.settle()

	q := c.initProducerID(3)
	c.produceIdempotent(leader, partition.AcksAll, q, 0, 2, "q0")
	c.produceIdempotent(leader, partition.AcksAll, q, 1, 3, "q1")
	c.tickUntil(5000, func() bool { return len(c.state(tp0).ISR) == 3 }, "broker 2 never rejoined the ISR")
	c.tick(snapshotEveryMs) // a checkpoint tick with broker 2 at LEO 4

	c.crash(2)
	r2, ok = c.start(2).Replica(tp0)
	require.True(t, ok)
	require.Equal(t, []string{"p0", "p1", "q0", "q1"}, values(r2.Log()))
	assert.Equal(t, replayed(t, r2), r2.ProducerSnapshot(), "the restart trusted a snapshot of batches the log does not hold")

	c.settle()
	c.failoverTo2()
	p2 := idempotentRequest(c.nextCorr(), tp0, partition.AcksAll, p, 0, 2, "p2")
	c.send(2, p2)
	resp := c.answer(p2)
	require.NoError(t, resp.Err)
	assert.EqualValues(t, 4, resp.BaseOffset, "P's new batch was answered as a duplicate of a record it never wrote")
}

// fpOpts gives broker id a failpoint hook that always allows.
func fpOpts(id broker.NodeID) opts {
	return opts{fpctx: map[broker.NodeID]context.Context{id: hook(always)}}
}

// producerStateUpdate: "after leaderBeforeAppend or followerBeforeAppend,
// when the Ready appends at least one batch of an idempotent producer ...
// nothing is written yet." A leader crashing there has not stored the batch
// and never answered; the retry, on the next leader, is appended once.
// Reference: failpoints/README.md, producerStateUpdate.
func TestProducerStateUpdateFailpointOnLeader(t *testing.T) {
	requireFailpoints(t)
	c, leader := newIdempotenceTopic(t, fpOpts(1), 0)
	require.EqualValues(t, 1, leader)
	pid := c.initProducerID(1)
	enable(t, broker.FPProducerStateUpdate, `return("crash")`)
	enable(t, broker.FPLeaderBeforeAppend, `return("crash:3")`) // reports that it was passed, and goes on

	out, err := handleDirect(c, leader, produceRequest(c.nextCorr(), tp0, partition.AcksLeader, "plain"))
	require.NoError(t, err, "a batch without a producer id passed producerStateUpdate")
	require.Len(t, produceResponses(out), 1)
	faults := c.broker(leader).TakeFaults()
	require.Len(t, faults, 1)
	require.Equal(t, broker.FPLeaderBeforeAppend, faults[0].Name)

	req := idempotentRequest(c.nextCorr(), tp0, partition.AcksLeader, pid, 0, 0, "a")
	out, err = handleDirect(c, leader, req)
	var fe *broker.FailpointError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, broker.FPProducerStateUpdate, fe.Name)
	require.Equal(t, broker.ActionCrash, fe.Action)
	require.Equal(t, leader, fe.Target)
	faults = c.broker(leader).TakeFaults()
	require.Len(t, faults, 1, "leaderBeforeAppend comes first")
	require.Equal(t, broker.FPLeaderBeforeAppend, faults[0].Name)
	require.Empty(t, produceResponses(out), "answered before the crash point")
	require.Equal(t, []string{"plain"}, storedValues(t, c.nodes[leader].disk, tp0), "the batch was written before the crash point")

	require.NoError(t, failpoint.Disable(broker.FailpointPath(broker.FPProducerStateUpdate)))
	require.NoError(t, failpoint.Disable(broker.FailpointPath(broker.FPLeaderBeforeAppend)))
	c.crash(leader)
	c.start(leader)
	c.settle()
	newLeader := broker.NodeID(c.state(tp0).Leader)
	require.NotEqual(t, leader, newLeader)
	resp := c.answer(c.retry(newLeader, req))
	require.NoError(t, resp.Err)
	c.tick(2 * fetchWaitMs)
	resp2 := c.answer(c.retry(newLeader, req))
	require.NoError(t, resp2.Err)
	assert.Equal(t, resp.BaseOffset, resp2.BaseOffset)
	got := values(c.replica(newLeader, tp0).Log())
	assert.Equal(t, 1, countOf(got, "a"), "log %v", got)
}

func countOf(vals []string, v string) int {
	n := 0
	for _, x := range vals {
		if x == v {
			n++
		}
	}
	return n
}

// producerStateUpdate on a follower: it fires when fetched batches of an
// idempotent producer are about to be written, not for plain ones. The
// crashed follower holds none of it and rebuilds the state from its log
// and what it refetches.
// Reference: failpoints/README.md, producerStateUpdate.
func TestProducerStateUpdateFailpointOnFollower(t *testing.T) {
	requireFailpoints(t)
	c, leader := newIdempotenceTopic(t, fpOpts(2), 0)
	require.EqualValues(t, 1, leader)
	pid := c.initProducerID(1)
	enable(t, broker.FPProducerStateUpdate, `1*return("crash")`)
	c.produceOK(leader, tp0, "plain")
	c.tick(2 * fetchWaitMs)
	require.Empty(t, c.fired)
	require.Equal(t, []string{"plain"}, values(c.replica(2, tp0).Log()))

	// followerBeforeAppend pauses broker 3 when broker 2 passes it: it
	// reports that 2 got there before the crash point.
	enable(t, broker.FPFollowerBeforeAppend, `1*return("pause:3")`)
	c.produceIdempotent(leader, partition.AcksLeader, pid, 0, 1, "a")
	require.Len(t, c.fired, 2)
	require.Equal(t, broker.FPFollowerBeforeAppend, c.fired[0].Name)
	require.EqualValues(t, 3, c.fired[0].Target)
	fe := c.fired[1]
	require.Equal(t, broker.FPProducerStateUpdate, fe.Name)
	require.Equal(t, broker.ActionCrash, fe.Action)
	require.EqualValues(t, 2, fe.Target)
	require.Nil(t, c.nodes[2].b, "broker 2 crashed")
	require.Equal(t, []string{"plain"}, storedValues(t, c.nodes[2].disk, tp0))
	c.resume(3)

	r2, ok := c.start(2).Replica(tp0)
	require.True(t, ok)
	assert.Empty(t, r2.ProducerSnapshot().Producers)
	c.settle()
	c.tick(2 * fetchWaitMs)
	r2 = c.replica(2, tp0)
	require.Equal(t, []string{"plain", "a"}, values(r2.Log()))
	assert.Equal(t, c.replica(leader, tp0).ProducerSnapshot(), r2.ProducerSnapshot())
}

// beforeProducerSnapshot: "reached from Tick with the periodic HW
// checkpoint, for each partition whose log grew since its last snapshot;
// before the log is synced and the snapshot written." It does not fire on
// a tick when the log did not grow; a crash there leaves the older snapshot,
// and the restart replays the longer tail to the same state.
// Reference: failpoints/README.md, beforeProducerSnapshot.
func TestBeforeProducerSnapshotFailpoint(t *testing.T) {
	requireFailpoints(t)
	c, leader := newIdempotenceTopic(t, fpOpts(2), snapshotEveryMs)
	require.EqualValues(t, 1, leader)
	pid := c.initProducerID(1)
	enable(t, broker.FPBeforeProducerSnapshot, `return("crash")`)
	c.tick(3 * snapshotEveryMs)
	require.Empty(t, c.fired, "fired with nothing to snapshot (LEO 0)")

	require.NoError(t, failpoint.Disable(broker.FailpointPath(broker.FPBeforeProducerSnapshot)))
	a := c.produceIdempotent(leader, partition.AcksAll, pid, 0, 0, "a")
	c.tick(snapshotEveryMs)
	snap, ok := snapshotOn(t, c.nodes[2].disk)
	require.True(t, ok)
	require.EqualValues(t, 1, snap.Offset)

	enable(t, broker.FPBeforeProducerSnapshot, `return("crash")`)
	c.tick(3 * snapshotEveryMs)
	require.Empty(t, c.fired, "fired although the log did not grow since the last snapshot")

	b := c.produceIdempotent(leader, partition.AcksAll, pid, 1, 1, "b")
	require.Empty(t, c.fired, "fired outside the checkpoint tick")
	c.tick(snapshotEveryMs)
	require.Len(t, c.fired, 1)
	fe := c.fired[0]
	require.Equal(t, broker.FPBeforeProducerSnapshot, fe.Name)
	require.EqualValues(t, 2, fe.Target)
	require.Nil(t, c.nodes[2].b)
	snap, ok = snapshotOn(t, c.nodes[2].disk)
	require.True(t, ok)
	assert.EqualValues(t, 1, snap.Offset, "a snapshot was written past the failpoint")

	require.NoError(t, failpoint.Disable(broker.FailpointPath(broker.FPBeforeProducerSnapshot)))
	r2, ok := c.start(2).Replica(tp0)
	require.True(t, ok)
	require.EqualValues(t, 2, r2.LEO())
	assert.Equal(t, replayed(t, r2), r2.ProducerSnapshot())
	c.settle()
	c.failoverTo2()
	for _, req := range []broker.ProduceRequest{a, b} {
		resp := c.answer(c.retry(2, req))
		require.NoError(t, resp.Err)
		assert.EqualValues(t, req.Batch.BaseSequence, resp.BaseOffset)
	}
	assert.Equal(t, []string{"a", "b"}, values(c.replica(2, tp0).Log()))
}

// afterProducerSnapshot: "after storage.WriteProducerSnapshot". A crash
// there leaves the snapshot at LEO on disk, and the restart starts from
// exactly it.
// Reference: failpoints/README.md, afterProducerSnapshot.
func TestAfterProducerSnapshotFailpoint(t *testing.T) {
	requireFailpoints(t)
	c, leader := newIdempotenceTopic(t, fpOpts(2), snapshotEveryMs)
	require.EqualValues(t, 1, leader)
	pid := c.initProducerID(1)
	a := c.produceIdempotent(leader, partition.AcksAll, pid, 0, 0, "a")
	bc := c.produceIdempotent(leader, partition.AcksAll, pid, 1, 1, "b", "c")
	enable(t, broker.FPAfterProducerSnapshot, `1*return("crash")`)
	want := c.replica(2, tp0).ProducerSnapshot()
	c.tick(snapshotEveryMs)
	require.Len(t, c.fired, 1)
	fe := c.fired[0]
	require.Equal(t, broker.FPAfterProducerSnapshot, fe.Name)
	require.EqualValues(t, 2, fe.Target)
	require.Nil(t, c.nodes[2].b)
	snap, ok := snapshotOn(t, c.nodes[2].disk)
	require.True(t, ok, "the snapshot was not written before the failpoint")
	assert.Equal(t, want, *snap)
	assert.EqualValues(t, 3, snap.Offset)

	// A process crash keeps the page cache: the restart starts from this
	// snapshot and the log it describes.
	c.nodes[2].disk.Crash()
	r2, ok := c.start(2).Replica(tp0)
	require.True(t, ok)
	require.EqualValues(t, 3, r2.LEO())
	assert.Equal(t, want, r2.ProducerSnapshot())
	assert.Equal(t, replayed(t, r2), r2.ProducerSnapshot())
	c.settle()
	c.failoverTo2()
	for _, req := range []broker.ProduceRequest{a, bc} {
		resp := c.answer(c.retry(2, req))
		require.NoError(t, resp.Err)
		assert.EqualValues(t, req.Batch.BaseSequence, resp.BaseOffset)
	}
	assert.Equal(t, []string{"a", "b", "c"}, values(c.replica(2, tp0).Log()))
}

// Without a snapshot (the HW checkpoint on every change takes none), a
// restart replays the whole log to the same producer state.
// Reference: spec/SEMANTICS.md, Producer.
func TestRestartWithoutProducerSnapshotReplaysTheLog(t *testing.T) {
	c, leader := newIdempotenceTopic(t, opts{}, 0)
	pid := c.initProducerID(1)
	c.produceIdempotent(leader, partition.AcksAll, pid, 0, 0, "a")
	c.produceIdempotent(leader, partition.AcksAll, pid, 1, 1, "b")
	c.tick(1000)
	_, ok := snapshotOn(t, c.nodes[2].disk)
	require.False(t, ok)
	want := c.replica(2, tp0).ProducerSnapshot()
	c.crash(2)
	r2, ok := c.start(2).Replica(tp0)
	require.True(t, ok)
	assert.Equal(t, want, r2.ProducerSnapshot())
	require.Len(t, want.Producers, 1)
	assert.Equal(t, pid, want.Producers[0].ProducerID)
}
