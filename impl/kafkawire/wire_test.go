package kafkawire

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/wireformat"
)

func TestReadFrame(t *testing.T) {
	frame := func(size int32, body []byte) io.Reader {
		b := binary.BigEndian.AppendUint32(nil, uint32(size))
		return bytes.NewReader(append(b, body...))
	}
	got, err := wireformat.ReadFrame(frame(3, []byte("abc")), 10)
	require.NoError(t, err)
	require.Equal(t, []byte("abc"), got)

	_, err = wireformat.ReadFrame(frame(11, make([]byte, 11)), 10)
	require.ErrorIs(t, err, ErrFrameTooLarge)
	_, err = wireformat.ReadFrame(frame(-1, nil), 10)
	require.ErrorIs(t, err, ErrFrameTooLarge)
	_, err = wireformat.ReadFrame(frame(DefaultMaxRequestBytes+1, nil), 0)
	require.ErrorIs(t, err, ErrFrameTooLarge, "0 means the default limit")
	_, err = wireformat.ReadFrame(frame(5, []byte("ab")), 10)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "truncated body")
	_, err = wireformat.ReadFrame(bytes.NewReader([]byte{0, 0}), 10)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "truncated size")
	_, err = wireformat.ReadFrame(bytes.NewReader(nil), 10)
	require.ErrorIs(t, err, io.EOF, "clean end between frames")
}

func encodeFrame(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, corr)[4:]
}

func TestParseRequest(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12) // flexible header
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	got, err := ParseRequest(encodeFrame(req, 77))
	require.NoError(t, err)
	require.Equal(t, int16(3), got.Key)
	require.Equal(t, int16(12), got.Version)
	require.Equal(t, int32(77), got.CorrelationID)
	require.Equal(t, "c", *got.ClientID)
	require.Equal(t, "t", *got.Body.(*kmsg.MetadataRequest).Topics[0].Topic)

	frame := encodeFrame(req, 77)
	for n := range len(frame) - 1 {
		// Every strict prefix fails without a panic; most are malformed.
		_, err := ParseRequest(frame[:n])
		require.Error(t, err, "prefix of %d bytes", n)
	}

	unknown := binary.BigEndian.AppendUint16(nil, 1000)
	unknown = binary.BigEndian.AppendUint16(unknown, 0)
	unknown = binary.BigEndian.AppendUint32(unknown, 9)
	_, err = ParseRequest(unknown)
	var ue *UnsupportedError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, UnsupportedError{Key: 1000, Version: 0, CorrelationID: 9}, *ue)

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(2) // before record batches
	_, err = ParseRequest(encodeFrame(produce, 1))
	require.ErrorAs(t, err, &ue)
	require.Equal(t, int16(2), ue.Version)
}

// TestApiVersions checks the served table and KIP-511: a too-new
// ApiVersions request gets a v0 answer with UNSUPPORTED_VERSION and the
// versions of ApiVersions the server knows.
func TestApiVersions(t *testing.T) {
	c := newWireClient(t)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
	require.Zero(t, resp.ErrorCode)
	keys := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	require.Equal(t, [2]int16{3, 11}, keys[0], "produce")
	require.Equal(t, [2]int16{4, 12}, keys[1], "fetch")
	require.Equal(t, [2]int16{0, 3}, keys[18], "api versions")
	require.Len(t, keys, len(served))

	tooNew := kmsg.NewPtrApiVersionsRequest()
	tooNew.SetVersion(4)
	corr := c.send(tooNew)
	old := kmsg.NewPtrApiVersionsRequest() // read as v0
	resp = c.recv(old, corr).(*kmsg.ApiVersionsResponse)
	require.Equal(t, int16(35), resp.ErrorCode)
	require.Len(t, resp.ApiKeys, 1)
	require.Equal(t, kmsg.ApiVersionsResponseApiKey{ApiKey: 18, MinVersion: 0, MaxVersion: 3}, resp.ApiKeys[0])

	// The connection is still usable.
	resp = c.roundTrip(req).(*kmsg.ApiVersionsResponse)
	require.Zero(t, resp.ErrorCode)
}

func TestUnsupportedClosesConnection(t *testing.T) {
	t.Run("unknown key", func(t *testing.T) {
		c := newWireClient(t)
		f := binary.BigEndian.AppendUint32(nil, 10)
		f = binary.BigEndian.AppendUint16(f, 1000)
		f = binary.BigEndian.AppendUint16(f, 0)
		f = binary.BigEndian.AppendUint32(f, 1)
		f = append(f, 0xff, 0xff)
		c.write(f)
		c.closed()
	})
	t.Run("bad version", func(t *testing.T) {
		c := newWireClient(t)
		produce := kmsg.NewPtrProduceRequest()
		produce.SetVersion(2)
		c.send(produce)
		c.closed()
	})
	t.Run("malformed body", func(t *testing.T) {
		c := newWireClient(t)
		f := encodeFrame(kmsg.NewPtrMetadataRequest(), 1)
		f = f[:len(f)-2]
		c.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(f))), f...))
		c.closed()
	})
	t.Run("oversized frame", func(t *testing.T) {
		c := newWireClient(t)
		c.write(binary.BigEndian.AppendUint32(nil, uint32(DefaultMaxRequestBytes+1)))
		c.closed()
	})
	t.Run("truncated frame", func(t *testing.T) {
		c := newWireClient(t)
		c.write(binary.BigEndian.AppendUint32(nil, 100))
		c.write(make([]byte, 10))
		c.conn.Close()
		err := <-c.done
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		c.done <- nil
	})
}

func TestMetadata(t *testing.T) {
	c := newWireClient(t)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("nope")}}
	resp := c.roundTrip(req).(*kmsg.MetadataResponse)
	require.Equal(t, ClusterID, *resp.ClusterID)
	require.Equal(t, int32(1), resp.ControllerID)
	require.Len(t, resp.Brokers, 1, "broker 2 has no address")
	require.Equal(t, "127.0.0.1", resp.Brokers[0].Host)
	require.Equal(t, int32(9092), resp.Brokers[0].Port)
	require.Len(t, resp.Topics, 2)
	require.Zero(t, resp.Topics[0].ErrorCode)
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, int32(1), p.Leader)
	require.Equal(t, int32(3), p.LeaderEpoch)
	require.Equal(t, []int32{1}, p.ISR)
	require.Equal(t, int16(3), resp.Topics[1].ErrorCode)

	all := kmsg.NewPtrMetadataRequest()
	all.SetVersion(1) // nil topics: all of them
	resp = c.roundTrip(all).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 1)
}

func producedBytes(t *testing.T) []byte {
	b := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
		Records: []record.Record{{Value: []byte("x"), Timestamp: 1}}}
	return appendBatch(nil, &b)
}

func produceRequest(version int16, acks int16, topic string, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = acks, 1000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: records}}}}
	return req
}

func TestProduce(t *testing.T) {
	c := newWireClient(t)
	good := producedBytes(t)
	resp := c.roundTrip(produceRequest(9, -1, "t", good)).(*kmsg.ProduceResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(fakeHW), resp.Topics[0].Partitions[0].BaseOffset)

	resp = c.roundTrip(produceRequest(3, 1, "missing", good)).(*kmsg.ProduceResponse)
	require.Equal(t, int16(3), resp.Topics[0].Partitions[0].ErrorCode)

	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff
	resp = c.roundTrip(produceRequest(11, -1, "t", corrupt)).(*kmsg.ProduceResponse)
	require.Equal(t, int16(2), resp.Topics[0].Partitions[0].ErrorCode)
	require.NotNil(t, resp.Topics[0].Partitions[0].ErrorMessage)

	resp = c.roundTrip(produceRequest(9, 2, "t", good)).(*kmsg.ProduceResponse)
	require.Equal(t, int16(21), resp.Topics[0].Partitions[0].ErrorCode, "acks=2")

	// acks=0 gets no answer: the next response is the next request's.
	c.send(produceRequest(9, 0, "t", good))
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	c.roundTrip(md)

	// A refused acks=0 produce closes the connection: the client reads no
	// answer, so that is the only way to tell it.
	c.send(produceRequest(9, 0, "t", corrupt))
	c.closed()
}

// A produce refused with NOT_LEADER_OR_FOLLOWER names the leader from
// Produce v10 (KIP-951): CurrentLeader, and the leader's endpoint in
// NodeEndpoints when its address is known; older versions carry neither.
func TestProduceLeaderHint(t *testing.T) {
	c := newWireClient(t)
	good := producedBytes(t)
	resp := c.roundTrip(produceRequest(10, -1, fakeMoved, good)).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, int16(6), p.ErrorCode)
	require.Equal(t, int32(2), p.CurrentLeader.LeaderID)
	require.Equal(t, int32(4), p.CurrentLeader.LeaderEpoch)
	require.Len(t, resp.Brokers, 1)
	require.Equal(t, int32(2), resp.Brokers[0].NodeID)
	require.Equal(t, "127.0.0.1", resp.Brokers[0].Host)
	require.Equal(t, int32(9093), resp.Brokers[0].Port)

	resp = c.roundTrip(produceRequest(11, -1, fakeMovedNowhere, good)).(*kmsg.ProduceResponse)
	p = resp.Topics[0].Partitions[0]
	require.Equal(t, int32(2), p.CurrentLeader.LeaderID)
	require.Empty(t, resp.Brokers, "no endpoint for a leader whose address is unknown")

	resp = c.roundTrip(produceRequest(9, -1, fakeMoved, good)).(*kmsg.ProduceResponse)
	p = resp.Topics[0].Partitions[0]
	require.Equal(t, int16(6), p.ErrorCode)
	require.Equal(t, int32(-1), p.CurrentLeader.LeaderID, "v9 has no CurrentLeader")
	require.Empty(t, resp.Brokers)

	resp = c.roundTrip(produceRequest(11, -1, "t", good)).(*kmsg.ProduceResponse)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int32(-1), resp.Topics[0].Partitions[0].CurrentLeader.LeaderID)
	require.Empty(t, resp.Brokers)
}

// OffsetForLeaderEpoch v2-4 carries each partition's question to the
// broker and its answer back; v0 and v1 are refused as Kafka 4.x does.
func TestOffsetForLeaderEpoch(t *testing.T) {
	c := newWireClient(t)
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{
		{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{
			{Partition: 0, CurrentLeaderEpoch: 3, LeaderEpoch: 3},
			{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 2},
			{Partition: 0, CurrentLeaderEpoch: 2, LeaderEpoch: 2},
		}},
		{Topic: "missing", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 1}}},
	}
	resp := c.roundTrip(req).(*kmsg.OffsetForLeaderEpochResponse)
	require.Len(t, resp.Topics, 2)
	ps := resp.Topics[0].Partitions
	require.Len(t, ps, 3)
	require.Zero(t, ps[0].ErrorCode)
	require.Equal(t, int32(3), ps[0].LeaderEpoch)
	require.Equal(t, int64(fakeHW), ps[0].EndOffset)
	require.Zero(t, ps[1].ErrorCode)
	require.Equal(t, int32(1), ps[1].LeaderEpoch)
	require.Equal(t, int64(2), ps[1].EndOffset)
	require.Equal(t, int16(74), ps[2].ErrorCode, "FENCED_LEADER_EPOCH")
	require.Equal(t, int32(-1), ps[2].LeaderEpoch)
	require.Equal(t, int64(-1), ps[2].EndOffset)
	miss := resp.Topics[1].Partitions[0]
	require.Equal(t, int16(3), miss.ErrorCode)
	require.Equal(t, int64(-1), miss.EndOffset)

	old := kmsg.NewPtrOffsetForLeaderEpochRequest()
	old.SetVersion(1)
	old.Topics = req.Topics[:1]
	c.send(old)
	c.closed()
}

func TestFetchAndListOffsets(t *testing.T) {
	c := newWireClient(t)
	req := fetchRequest("t", 2, 0)
	req.SetVersion(12)
	resp := c.roundTrip(req).(*kmsg.FetchResponse)
	require.Zero(t, resp.SessionID)
	p := resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	require.Equal(t, int64(fakeHW), p.HighWatermark)
	require.Equal(t, int64(fakeHW), p.LastStableOffset)
	var offsets []int64
	for raw := p.RecordBatches; len(raw) > 0; {
		var b kmsg.RecordBatch
		require.NoError(t, b.ReadFrom(raw))
		offsets = append(offsets, b.FirstOffset)
		raw = raw[12+b.Length:]
	}
	require.Equal(t, []int64{2, 3, 4}, offsets)

	// Response MaxBytes: the first batch always, then only what fits.
	req.MaxBytes = 1
	resp = c.roundTrip(req).(*kmsg.FetchResponse)
	var b kmsg.RecordBatch
	raw := resp.Topics[0].Partitions[0].RecordBatches
	require.NoError(t, b.ReadFrom(raw))
	require.Len(t, raw, int(12+b.Length))

	out := fetchRequest("t", 9, 0)
	out.SetVersion(4)
	resp = c.roundTrip(out).(*kmsg.FetchResponse)
	require.Equal(t, int16(1), resp.Topics[0].Partitions[0].ErrorCode)

	session := fetchRequest("t", 0, 0)
	session.SetVersion(12)
	session.SessionID, session.SessionEpoch = 5, 1
	resp = c.roundTrip(session).(*kmsg.FetchResponse)
	require.Equal(t, int16(70), resp.ErrorCode, "no fetch session was handed out")

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{
		{Partition: 0, Timestamp: -2, CurrentLeaderEpoch: -1},
		{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: 3},
		{Partition: 0, Timestamp: 12345, CurrentLeaderEpoch: -1},
		{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: 2},
		{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: 4},
	}}}
	lr := c.roundTrip(lo).(*kmsg.ListOffsetsResponse)
	ps := lr.Topics[0].Partitions
	require.Equal(t, int64(0), ps[0].Offset)
	require.Equal(t, int64(fakeHW), ps[1].Offset)
	require.Equal(t, int32(3), ps[1].LeaderEpoch)
	require.Equal(t, int64(-1), ps[2].Offset, "timestamp search is not supported")
	require.Zero(t, ps[2].ErrorCode)
	require.Equal(t, int16(74), ps[3].ErrorCode)
	require.Equal(t, int16(75), ps[4].ErrorCode)
}

func TestCreateTopicsAndInitProducerID(t *testing.T) {
	c := newWireClient(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(5)
	req.TimeoutMillis = 1000
	topic := func(name string, parts int32, rf int16) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		return rt
	}
	assigned := topic("assigned", -1, -1)
	assigned.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
	req.Topics = []kmsg.CreateTopicsRequestTopic{
		topic("new", -1, -1), topic("exists", 1, 1), topic("t", 1, 1), topic("bad/name", 1, 1),
		topic("zero", 0, 1), topic("rf", 1, 3), assigned,
	}
	resp := c.roundTrip(req).(*kmsg.CreateTopicsResponse)
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	require.Equal(t, map[string]int16{"new": 0, "exists": 36, "t": 36, "bad/name": 17, "zero": 37, "rf": 38, "assigned": 42}, codes)
	require.Equal(t, int32(1), resp.Topics[0].NumPartitions)
	require.Equal(t, int16(2), resp.Topics[0].ReplicationFactor, "min(3, live brokers)")

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.SetVersion(4)
	ipr := c.roundTrip(ip).(*kmsg.InitProducerIDResponse)
	require.Zero(t, ipr.ErrorCode)
	require.Equal(t, int64(7), ipr.ProducerID)
	ip.TransactionalID = kmsg.StringPtr("txn")
	ipr = c.roundTrip(ip).(*kmsg.InitProducerIDResponse)
	require.Equal(t, int16(42), ipr.ErrorCode)
}
