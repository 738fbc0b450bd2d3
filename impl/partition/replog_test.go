package partition

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// brokenLog is a Log whose reads fail once broken is set.
type brokenLog struct {
	durable
	broken bool
}

var errDisk = errors.New("disk gone")

func (b *brokenLog) Read(offset int64, maxBytes int) ([]record.Batch, error) {
	if b.broken {
		return nil, errDisk
	}
	return b.durable.Read(offset, maxBytes)
}

// A replica on a Log reads its batches from it and holds only what it
// appended since its last Ready; a read that fails reaches the caller in
// Ready, never as batches that are not there.
func TestReplicaOnALog(t *testing.T) {
	st := &brokenLog{durable: durable{log: stored([]int32{1, 1, 1}, "a", "b", "c")}}
	r, err := NewOnLog(testConfig(1), testTP, st, 3, epochCache(t, entry(1, 0)), nil)
	require.NoError(t, err)
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 1}, 0)
	res := readAt(r, 1, 0, -1)
	require.NoError(t, res.Err)
	require.Len(t, res.Batches, 1)
	assert.Equal(t, "b", string(res.Batches[0].Records[0].Value), "read from the Log")

	require.NoError(t, produceAt(r, 0, ProduceRequest{Acks: AcksLeader, Batch: batch("d")}, 0).Err)
	assert.Equal(t, int64(4), r.LEO(), "the append waits in Ready, and counts")
	assert.Len(t, r.Log(), 4)
	rd := drain(r)
	require.Len(t, rd.Append, 1)
	st.log = append(st.log, rd.Append[0])

	st.broken = true
	res = readAt(r, 0, 1<<20, -1)
	assert.Empty(t, res.Batches)
	rd = drain(r)
	require.ErrorIs(t, rd.ReadErr, errDisk)
	assert.Nil(t, drain(r).ReadErr, "handed over once")
}

// NewOnLog reads the whole Log to rebuild producer state without a
// snapshot, and a failed read fails the build.
func TestNewOnLogRebuildsProducers(t *testing.T) {
	idem := batch("x")
	idem.ProducerID, idem.ProducerEpoch, idem.BaseSequence = 7, 0, 0
	st := &brokenLog{durable: durable{log: []record.Batch{idem}}}
	r, err := NewOnLog(testConfig(1), testTP, st, 1, epochCache(t), nil)
	require.NoError(t, err)
	snap := r.ProducerSnapshot()
	require.Len(t, snap.Producers, 1)
	assert.Equal(t, int64(7), snap.Producers[0].ProducerID, "rebuilt from the Log")

	st.broken = true
	_, err = NewOnLog(testConfig(1), testTP, st, 1, storage.EpochCache{}, nil)
	require.ErrorIs(t, err, errDisk)
}

// Within one step, a truncation the Log has yet to apply hides what the
// Log holds past it, and appends after it follow it: every read of the
// replica sees its own log, not the Log's.
func TestLogReadsSeeAPendingTruncation(t *testing.T) {
	st := &brokenLog{durable: durable{log: stored([]int32{1, 1, 1, 1}, "a", "b", "c", "d")}}
	r, err := NewOnLog(testConfig(1), testTP, st, 1, epochCache(t, entry(1, 0)), nil)
	require.NoError(t, err)
	require.Equal(t, int64(2), r.truncate(2))
	b := batch("x")
	b.BaseOffset, b.LeaderEpoch = 2, 2
	r.append(b)
	var got []string
	for _, b := range r.Log() {
		got = append(got, string(b.Records[0].Value))
	}
	assert.Equal(t, []string{"a", "b", "x"}, got)
	assert.Equal(t, int64(3), r.LEO())
	rd := drain(r)
	assert.Equal(t, int64(2), rd.Truncate)
	require.Len(t, rd.Append, 1)
}

// A Log whose oldest batches retention deleted: reads below its start are
// OFFSET_OUT_OF_RANGE for a consumer and for a follower, whose answer
// names the start; a follower whose log ends below it starts again there,
// with nothing, its HW at the start (everything below was committed).
func TestReadsBelowTheLogStartAreOutOfRange(t *testing.T) {
	all := stored([]int32{1, 1, 1, 1, 1}, "a", "b", "c", "d", "e")
	st := &brokenLog{durable: durable{log: all[2:]}} // retention took [0, 2)
	r, err := NewOnLog(testConfig(1), testTP, st, 1, epochCache(t, entry(1, 0)), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.LogStart())
	assert.Equal(t, int64(2), r.HW(), "the HW is at least the log start offset")
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	drain(r)
	res := readAt(r, 1, 1<<20, -1)
	require.ErrorIs(t, res.Err, kafka.ErrOffsetOutOfRange)
	assert.Equal(t, int64(2), res.LogStart)
	res = readAt(r, 2, 1<<20, -1)
	require.NoError(t, res.Err)
	assert.Equal(t, int64(2), res.LogStart)

	resp := replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ID: 9, ReplicaID: 2, ReplicaIncarnation: 1, FetchOffset: 1, CurrentLeaderEpoch: 2, MaxBytes: 1 << 20}, 10)
	require.ErrorIs(t, resp.Err, kafka.ErrOffsetOutOfRange)
	assert.Equal(t, int64(2), resp.LogStart)
	assert.Equal(t, int64(5), resp.LEO)

	cfg := queryConfig(2)
	f, rd := followerOf(t, cfg, all[:1], 1, epochCache(t, entry(1, 0)), 2)
	rd = answerEpochQuery(t, f, rd)
	fetch := messages[FetchRequest](rd)
	require.Len(t, fetch, 1)
	assert.Equal(t, int64(1), fetch[0].FetchOffset)
	f.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: fetch[0].ID, Err: kafka.ErrOffsetOutOfRange, HW: 4, LEO: 5, LogStart: 2}, 11)
	rd = drain(f)
	assert.Equal(t, int64(2), rd.StartAt, "the follower starts again at the leader's log start")
	assert.Empty(t, f.Log())
	assert.Equal(t, int64(2), f.LEO())
	assert.Equal(t, int64(2), f.LogStart())
	assert.True(t, rd.HWChanged)
	assert.Equal(t, int64(2), rd.HW)
	assert.Empty(t, entries(f.EpochCache()))
	next := messages[FetchRequest](rd)
	require.Len(t, next, 1)
	assert.Equal(t, int64(2), next[0].FetchOffset)
	f.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: next[0].ID, Batches: all[2:4], HW: 4, LEO: 5, LogStart: 2}, 12)
	assert.Equal(t, int64(4), f.LEO())
	assert.Equal(t, []storage.EpochEntry{entry(1, 2)}, entries(f.EpochCache()))

	// An answer past our end is still "our log runs past the leader's".
	g, rd := followerOf(t, cfg, all, 5, epochCache(t, entry(1, 0)), 2)
	rd = answerEpochQuery(t, g, rd)
	fetch = messages[FetchRequest](rd)
	g.HandleFetchResponse(FetchResponse{TopicPartition: testTP, ID: fetch[0].ID, Err: kafka.ErrOffsetOutOfRange, HW: 3, LEO: 3, LogStart: 2}, 11)
	assert.Equal(t, int64(-1), drain(g).StartAt)
	assert.Equal(t, int64(5), g.LEO(), "not reset: it asks where its epoch ends")
}

// answerEpochQuery answers the follower's epoch query in rd: epoch 1 ends
// at 5 on the leader.
func answerEpochQuery(t *testing.T, f *Replica, rd Ready) Ready {
	t.Helper()
	q := messages[EpochEndRequest](rd)
	require.Len(t, q, 1)
	f.HandleEpochEndResponse(EpochEndResponse{TopicPartition: testTP, ID: q[0].ID, Epoch: 1, EndOffset: 5}, 1)
	return drain(f)
}

// The leader-epoch cache keeps the epochs below the log start offset (Kafka
// trims them, but a Kafka follower also deletes below its leader's log
// start; here each replica's retention is its own). A follower that led an
// epoch whose tail was never committed asks where that epoch ended: the
// answer is where it really ended on the leader, below the leader's log
// start, so the follower drops its divergent tail and is then reset to the
// leader's log start. Trimmed, the cache would answer with the log start
// and the follower would keep a record the committed log does not hold.
// On the fetch path the leader answers the follower's first fetch with
// that end as its DivergingEpoch, and the next, below its log start, with
// OFFSET_OUT_OF_RANGE, as Kafka checks the log start before the epochs
// (Partition.readRecords).
func TestFollowerBelowLeaderStartDropsItsDivergentTail(t *testing.T) {
	t.Run("epoch-query", testBelowLeaderStartByQuery)
	t.Run("epoch", func(t *testing.T) {
		leaderLog := stored([]int32{1, 1, 2, 2, 2}, "a", "b", "L2", "L3", "L4")
		st := &brokenLog{durable: durable{log: leaderLog[3:]}}
		l, err := NewOnLog(testConfig(1), testTP, st, 5, epochCache(t, entry(1, 0), entry(2, 2)), nil)
		require.NoError(t, err)
		l.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
		drain(l)

		mine := stored([]int32{1, 1, 1, 1, 1}, "a", "b", "F2", "F3", "F4")
		f, rd := followerOf(t, testConfig(2), mine, 2, epochCache(t, entry(1, 0)), 2)
		fetch := messages[FetchRequest](rd)
		require.Len(t, fetch, 1)
		ans := replicaFetchAt(l, fetch[0], 1)
		require.True(t, ans.Diverging)
		assert.Equal(t, int64(2), ans.DivergingEndOffset, "epoch 1 ended at 2 on the leader, below its log start 3")
		f.HandleFetchResponse(ans, 1)
		rd = drain(f)
		assert.Equal(t, int64(2), f.LEO(), "F2 and after are gone")
		fetch = messages[FetchRequest](rd)
		require.Len(t, fetch, 1)
		oor := replicaFetchAt(l, fetch[0], 2)
		require.ErrorIs(t, oor.Err, kafka.ErrOffsetOutOfRange)
		f.HandleFetchResponse(oor, 2)
		rd = drain(f)
		assert.Equal(t, int64(3), rd.StartAt, "below the leader's log start: begin again there")
		assert.Empty(t, f.Log())
	})
}

func testBelowLeaderStartByQuery(t *testing.T) {
	leaderLog := stored([]int32{1, 1, 2, 2, 2}, "a", "b", "L2", "L3", "L4")
	st := &brokenLog{durable: durable{log: leaderLog[3:]}} // retention took [0, 3)
	l, err := NewOnLog(testConfig(1), testTP, st, 5, epochCache(t, entry(1, 0), entry(2, 2)), nil)
	require.NoError(t, err)
	l.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, PartitionEpoch: 1}, 0)
	drain(l)

	mine := stored([]int32{1, 1, 1, 1, 1}, "a", "b", "F2", "F3", "F4")
	f, rd := followerOf(t, queryConfig(2), mine, 2, epochCache(t, entry(1, 0)), 2)
	q := messages[EpochEndRequest](rd)
	require.Len(t, q, 1)
	ans := epochEndAt(l, q[0])
	assert.Equal(t, int64(2), ans.EndOffset, "epoch 1 ended at 2 on the leader, below its log start 3")
	f.HandleEpochEndResponse(ans, 1)
	rd = drain(f)
	assert.Equal(t, int64(2), f.LEO(), "F2 and after are gone")
	fetch := messages[FetchRequest](rd)
	require.Len(t, fetch, 1)
	f.HandleFetchResponse(replicaFetchAt(l, fetch[0], 2), 2)
	rd = drain(f)
	assert.Equal(t, int64(3), rd.StartAt, "below the leader's log start: begin again there")
	assert.Empty(t, f.Log())
}
