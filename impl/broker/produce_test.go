package broker_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

var tp0 = kafka.TopicPartition{Topic: "t", Partition: 0}

// newTopic starts a three-broker cluster with topic t (one partition on all
// three brokers) and returns it with the partition's leader.
func newTopic(t *testing.T, o opts) (*cluster, broker.NodeID) {
	t.Helper()
	c := newCluster(t, o)
	c.createTopic("t", 1, 3)
	s := c.state(tp0)
	require.Equal(t, []int32{1, 2, 3}, s.Replicas)
	leader := broker.NodeID(s.Leader)
	require.Equal(t, partition.RoleLeader, c.replica(leader, tp0).Role())
	for _, id := range []broker.NodeID{2, 3} {
		require.Equal(t, partition.RoleFollower, c.replica(id, tp0).Role(), "broker %d", id)
	}
	return c, leader
}

// An acks=all produce is answered once every ISR member holds the batch,
// with the offset the leader gave it; offsets follow one another across
// batches, and a consumer then reads exactly what was written.
// Reference: spec/SEMANTICS.md, Producer, acks=all.
func TestAcksAllAnswersWithConsecutiveOffsets(t *testing.T) {
	c, leader := newTopic(t, opts{})
	require.EqualValues(t, 0, c.produceOK(leader, tp0, "a"))
	require.EqualValues(t, 1, c.produceOK(leader, tp0, "b", "c"))
	require.EqualValues(t, 3, c.produceOK(leader, tp0, "d"))

	r := c.replica(leader, tp0)
	require.EqualValues(t, 4, r.HW(), "an acknowledged acks=all record is below HW")
	require.EqualValues(t, 4, r.LEO())
	for _, id := range []broker.NodeID{2, 3} {
		require.EqualValues(t, 4, c.replica(id, tp0).LEO(), "follower %d acknowledged the batch, so it holds it", id)
	}

	resp := c.read(leader, tp0, 0)
	require.Equal(t, []string{"a", "b", "c", "d"}, values(resp.Batches))
	require.EqualValues(t, 4, resp.HW)
	require.EqualValues(t, 4, resp.LEO)
	require.Equal(t, []string{"c", "d"}, values(c.read(leader, tp0, 2).Batches)[1:],
		"a read inside a batch returns the whole batch, then what follows")

	latest := c.listOffset(leader, tp0, true)
	require.NoError(t, latest.Err)
	require.EqualValues(t, 4, latest.Offset)
	require.EqualValues(t, 0, latest.LeaderEpoch)
	earliest := c.listOffset(leader, tp0, false)
	require.NoError(t, earliest.Err)
	require.EqualValues(t, 0, earliest.Offset)
}

// A consumer reads only below HW: a record the followers have not fetched
// is in the leader's log but invisible, to fetches and to ListOffsets, until
// the followers catch up.
// Reference: spec/SEMANTICS.md, Replication ("Consumers read only below HW").
func TestFetchReturnsRecordsOnlyOnceCommitted(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.pause(2, 3)
	req := c.produce(leader, tp0, partition.AcksLeader, "x")
	resp := takeOne[broker.ProduceResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.NoError(t, resp.Err)

	got := c.read(leader, tp0, 0)
	require.Empty(t, got.Batches, "x is not committed yet")
	require.EqualValues(t, 0, got.HW)
	require.EqualValues(t, 1, got.LEO)
	require.EqualValues(t, 0, c.listOffset(leader, tp0, true).Offset, "latest is HW, not LEO")

	c.resume(2, 3)
	got = c.read(leader, tp0, 0)
	require.Equal(t, []string{"x"}, values(got.Batches))
	require.EqualValues(t, 1, got.HW)
	require.EqualValues(t, 1, c.listOffset(leader, tp0, true).Offset)
}

// A fetch past the log end is OFFSET_OUT_OF_RANGE; a consumer fetch sent to
// a follower is NOT_LEADER_OR_FOLLOWER.
// Reference: spec/SEMANTICS.md, Replication ("beyond LEO it is OFFSET_OUT_OF_RANGE").
func TestFetchOutOfRangeAndFromFollower(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.produceOK(leader, tp0, "a")

	req := c.fetch(leader, tp0, 2, 0, 0)
	resp := takeOne[broker.FetchResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.ErrorIs(t, resp.Err, kafka.ErrOffsetOutOfRange)

	c.fetch(2, tp0, 0, 0, 0)
	require.ErrorIs(t, takeOne[broker.FetchResponse](c).Err, kafka.ErrNotLeader)
}

// acks=0 is fire and forget: the record is appended, nothing is answered,
// not even an error.
// Reference: spec/SEMANTICS.md, Producer, acks=0.
func TestAcksZeroGetsNoResponse(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.produce(leader, tp0, partition.AcksNone, "a")
	c.produce(2, tp0, partition.AcksNone, "lost") // a follower refuses, silently
	c.tick(1000)
	require.Empty(t, take[broker.ProduceResponse](c))
	require.EqualValues(t, 1, c.replica(leader, tp0).LEO())
	require.Equal(t, []string{"a"}, values(c.read(leader, tp0, 0).Batches))
}

// acks=1 is answered as soon as the leader has the record, before any
// follower fetched it; acks=all in the same state waits.
// Reference: spec/SEMANTICS.md, Producer, acks=1.
func TestAcksOneAnsweredAtOnce(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.pause(2, 3)
	req := c.produce(leader, tp0, partition.AcksLeader, "a")
	resp := takeOne[broker.ProduceResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.NoError(t, resp.Err)
	require.EqualValues(t, 0, resp.BaseOffset)
	require.EqualValues(t, 0, c.replica(leader, tp0).HW(), "no follower has it yet")

	all := c.produce(leader, tp0, partition.AcksAll, "b")
	require.Empty(t, take[broker.ProduceResponse](c), "acks=all waits for the ISR")
	c.resume(2, 3)
	resp = takeOne[broker.ProduceResponse](c)
	require.Equal(t, all.Correlation, resp.Correlation)
	require.NoError(t, resp.Err)
	require.EqualValues(t, 1, resp.BaseOffset)
}

// A long-poll fetch at the log end is held, not answered empty, and is
// answered as soon as a produce commits a record it can return.
// Reference: spec/SEMANTICS.md, Consumer ("fetch.min.bytes and fetch.max.wait.ms").
func TestLongPollFetchAnsweredWhenProduceCommits(t *testing.T) {
	c, leader := newTopic(t, opts{})
	req := c.fetch(leader, tp0, 0, 1, 500)
	require.Empty(t, take[broker.FetchResponse](c), "nothing to read: the fetch waits")
	c.tick(300)
	require.Empty(t, take[broker.FetchResponse](c), "still nothing, still waiting")

	c.produce(leader, tp0, partition.AcksAll, "p")
	require.Len(t, take[broker.ProduceResponse](c), 1)
	resp := takeOne[broker.FetchResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.NoError(t, resp.Err)
	require.Equal(t, []string{"p"}, values(resp.Batches))
	require.EqualValues(t, 1, resp.HW)
}

// An uncommitted record does not release a long poll: the consumer could
// not read it. Only the commit does.
// Reference: spec/SEMANTICS.md, Consumer, long poll; Replication, HW visibility.
func TestLongPollFetchIgnoresUncommittedRecords(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.pause(2, 3)
	req := c.fetch(leader, tp0, 0, 1, 500)
	c.produce(leader, tp0, partition.AcksLeader, "u")
	require.Len(t, take[broker.ProduceResponse](c), 1)
	require.Empty(t, take[broker.FetchResponse](c), "u is above HW")

	c.resume(2, 3)
	resp := takeOne[broker.FetchResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.Equal(t, []string{"u"}, values(resp.Batches))
}

// A long-poll fetch that finds nothing is answered, empty and without
// error, once fetch.max.wait.ms has passed, and not before.
// Reference: spec/SEMANTICS.md, Consumer ("or the wait ends").
func TestLongPollFetchAnsweredEmptyAfterMaxWait(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.produceOK(leader, tp0, "a")
	req := c.fetch(leader, tp0, 1, 1, 500)
	c.tick(490)
	require.Empty(t, take[broker.FetchResponse](c), "answered before max wait")
	c.tick(10)
	resp := takeOne[broker.FetchResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.NoError(t, resp.Err)
	require.Empty(t, resp.Batches)
	require.EqualValues(t, 1, resp.HW)
}

// A broker answers a request for a partition it does not lead with
// NOT_LEADER_OR_FOLLOWER when it knows the partition (so the client
// refreshes metadata and retries elsewhere), and with
// UNKNOWN_TOPIC_OR_PARTITION when no such partition exists.
// Reference: spec/SEMANTICS.md, Producer; Kafka's error codes 6 and 3.
func TestRequestsToTheWrongBroker(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.createTopic("solo", 1, 1) // one replica, on broker 1
	solo := kafka.TopicPartition{Topic: "solo", Partition: 0}
	require.EqualValues(t, 1, c.state(solo).Leader)
	unknown := kafka.TopicPartition{Topic: "nope", Partition: 0}
	beyond := kafka.TopicPartition{Topic: "t", Partition: 1}

	cases := []struct {
		name string
		to   broker.NodeID
		tp   kafka.TopicPartition
		want error
	}{
		{"follower replica", 2, tp0, kafka.ErrNotLeader},
		{"not a replica", 2, solo, kafka.ErrNotLeader},
		{"unknown topic", leader, unknown, kafka.ErrUnknownTopicOrPartition},
		{"unknown partition", leader, beyond, kafka.ErrUnknownTopicOrPartition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, acks := range []partition.Acks{partition.AcksLeader, partition.AcksAll} {
				req := c.produce(tc.to, tc.tp, acks, "v")
				resp := takeOne[broker.ProduceResponse](c)
				require.Equal(t, req.Correlation, resp.Correlation)
				require.ErrorIs(t, resp.Err, tc.want, "produce acks=%d", acks)
				require.EqualValues(t, -1, resp.BaseOffset)
			}
			c.fetch(tc.to, tc.tp, 0, 0, 0)
			require.ErrorIs(t, takeOne[broker.FetchResponse](c).Err, tc.want, "fetch")
			require.ErrorIs(t, c.listOffset(tc.to, tc.tp, true).Err, tc.want, "list offsets")
		})
	}
	require.EqualValues(t, 0, c.replica(leader, tp0).LEO(), "no refused produce was appended")
}

// With min.insync.replicas=2, once both followers stop fetching the leader
// drops them from the ISR after replica.lag.time.max.ms, and from then on
// refuses acks=all produces with NOT_ENOUGH_REPLICAS without appending;
// acks=1 is still served.
// Reference: spec/SEMANTICS.md, Producer ("With min.insync.replicas = M ...").
func TestAcksAllRefusedBelowMinISR(t *testing.T) {
	const lag = 1000
	c, leader := newTopic(t, opts{minISR: 2, lagMs: lag})
	c.produceOK(leader, tp0, "a")
	start := c.now
	c.pause(2, 3)
	r := c.replica(leader, tp0)
	c.tickUntil(10*lag, func() bool { return len(r.ISR()) == 1 }, "the leader never shrank the ISR")
	require.GreaterOrEqual(t, c.now-start, int64(lag), "ISR shrank before replica.lag.time.max.ms")
	require.Equal(t, []int32{int32(leader)}, c.state(tp0).ISR, "the controller recorded the shrink")

	req := c.produce(leader, tp0, partition.AcksAll, "b")
	resp := takeOne[broker.ProduceResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.ErrorIs(t, resp.Err, kafka.ErrNotEnoughReplicas)
	require.EqualValues(t, 1, r.LEO(), "a refused produce is not appended")

	c.produce(leader, tp0, partition.AcksLeader, "c")
	resp = takeOne[broker.ProduceResponse](c)
	require.NoError(t, resp.Err, "min.insync.replicas does not apply to acks=1")
	require.EqualValues(t, 1, resp.BaseOffset)
	assert.EqualValues(t, 1, r.HW(), "HW does not advance while the ISR is below min.insync.replicas")
}

// An acks=all produce that the ISR does not acknowledge in time is answered
// with REQUEST_TIMED_OUT after the request's timeout, not before. The
// record stays in the leader's log: the outcome is unknown to the client.
// Reference: spec/SEMANTICS.md, Histories ("unknown (timeout ...)").
func TestAcksAllTimesOutWithoutFollowers(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.pause(2, 3)
	req := c.produce(leader, tp0, partition.AcksAll, "slow")
	require.EqualValues(t, 1000, req.TimeoutMs)
	c.tick(990)
	require.Empty(t, take[broker.ProduceResponse](c), "answered before the request timeout")
	c.tick(10)
	resp := takeOne[broker.ProduceResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.ErrorIs(t, resp.Err, kafka.ErrRequestTimedOut)
	require.EqualValues(t, 1, c.replica(leader, tp0).LEO(), "the timed-out record may still commit")

	// It does commit once the followers come back; a retry would duplicate it.
	c.resume(2, 3)
	require.Equal(t, []string{"slow"}, values(c.read(leader, tp0, 0).Batches))
	require.Empty(t, take[broker.ProduceResponse](c), "a timed-out produce is answered once")
}

// With a single replica the ISR is the leader alone: acks=all is answered
// in the same step as the append.
// Reference: spec/SEMANTICS.md, Producer, acks=all.
func TestAcksAllOnASingleReplicaAnsweredAtOnce(t *testing.T) {
	c := newCluster(t, opts{})
	c.createTopic("solo", 1, 1)
	solo := kafka.TopicPartition{Topic: "solo", Partition: 0}
	leader := broker.NodeID(c.state(solo).Leader)
	out, err := handleDirect(c, leader, produceRequest(c.nextCorr(), solo, partition.AcksAll, "a"))
	require.NoError(t, err)
	resps := produceResponses(out)
	require.Len(t, resps, 1)
	require.NoError(t, resps[0].Err)
	require.EqualValues(t, 0, resps[0].BaseOffset)
}

// Any broker answers a metadata request with every partition the
// controller published and the live brokers, so a client can find leaders
// from whichever broker it reaches first.
// Reference: broker.ControllerNode ("every state change is sent to every
// live broker").
func TestMetadataFromAnyBroker(t *testing.T) {
	c, leader := newTopic(t, opts{})
	c.createTopic("solo", 1, 1)
	for _, id := range []broker.NodeID{1, 2, 3} {
		req := broker.MetadataRequest{Correlation: c.nextCorr()}
		c.send(id, req)
		resp := takeOne[broker.MetadataResponse](c)
		require.Equal(t, req.Correlation, resp.Correlation)
		require.Equal(t, []int32{1, 2, 3}, resp.LiveBrokers, "broker %d", id)
		require.Len(t, resp.Partitions, 2, "broker %d", id)
		require.Equal(t, "solo", resp.Partitions[0].Topic, "sorted by topic")
		require.Equal(t, tp0.Topic, resp.Partitions[1].Topic)
		require.EqualValues(t, leader, resp.Partitions[1].Leader, "broker %d", id)
		require.Equal(t, []int32{1, 2, 3}, resp.Partitions[1].ISR, "broker %d", id)
	}
}

// A batch that came as bytes (a producer's, compressed) is what every
// replica's segment file holds, byte for byte from its magic on: the leader
// stores it as produced and followers copy it as the leader serves it.
func TestReplicasStoreTheProducedBytes(t *testing.T) {
	c, leader := newTopic(t, opts{})
	require.EqualValues(t, 0, c.produceOK(leader, tp0, "a"))

	plain := produceRequest(0, tp0, partition.AcksAll, "b", "c", "d").Batch
	raw := record.Encode(nil, &plain)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write(raw[record.HeaderLen:])
	require.NoError(t, err)
	require.NoError(t, w.Close())
	produced := append(raw[:record.HeaderLen:record.HeaderLen], gz.Bytes()...)
	binary.BigEndian.PutUint32(produced[8:], uint32(len(produced)-12))
	binary.BigEndian.PutUint16(produced[21:], 1) // gzip
	binary.BigEndian.PutUint32(produced[17:], crc32.Checksum(produced[21:], crc32.MakeTable(crc32.Castagnoli)))
	b, err := record.Parse(produced)
	require.NoError(t, err)

	req := produceRequest(c.nextCorr(), tp0, partition.AcksAll)
	req.Batch = b
	c.send(leader, req)
	resp := takeOne[broker.ProduceResponse](c)
	require.NoError(t, resp.Err)
	require.EqualValues(t, 1, resp.BaseOffset)

	for _, id := range []broker.NodeID{1, 2, 3} {
		data, err := c.nodes[id].disk.ReadFile(broker.LogFile(tp0))
		require.NoError(t, err, "broker %d", id)
		first := record.Encode(nil, &c.replica(id, tp0).Log()[0])
		require.Equal(t, len(first)+len(produced), len(data), "broker %d", id)
		stored := data[len(first):]
		require.EqualValues(t, 1, binary.BigEndian.Uint64(stored), "broker %d: the base offset the leader gave", id)
		require.Equal(t, produced[8:12], stored[8:12], "broker %d", id)
		require.Equal(t, produced[16:], stored[16:], "broker %d: the producer's bytes", id)
	}
}
