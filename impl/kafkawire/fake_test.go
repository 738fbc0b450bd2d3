package kafkawire

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/wireformat"
)

// fakeBackend answers every message at once with canned answers: topic "t"
// has one partition led by broker 1 at epoch 3 with HW 5 (one record per
// offset); "exists" already exists for CreateTopic.
type fakeBackend struct {
	mu     sync.Mutex
	nextID broker.NodeID
	addr   string // broker 1's address; "" means 127.0.0.1:9092
}

func (f *fakeBackend) NodeID() broker.NodeID { return 1 }

func (f *fakeBackend) Open() Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	addr := f.addr
	if addr == "" {
		addr = "127.0.0.1:9092"
	}
	return &fakeSession{id: broker.ClientIDBase + f.nextID, addr: addr}
}

// fakeSession's mailbox is unbounded: the fake answers synchronously, from
// the handler's own goroutine, before the handler starts to read.
type fakeSession struct {
	id    broker.NodeID
	addr  string
	mu    sync.Mutex
	inbox []broker.Envelope
}

func (s *fakeSession) ID() broker.NodeID { return s.id }
func (s *fakeSession) Close()            {}

func (s *fakeSession) Recv(ctx context.Context) (broker.Envelope, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inbox) == 0 {
		// Nothing more will come: the fake answers as it is sent to.
		if err := ctx.Err(); err != nil {
			return broker.Envelope{}, err
		}
		return broker.Envelope{}, context.DeadlineExceeded
	}
	env := s.inbox[0]
	s.inbox = s.inbox[1:]
	return env, nil
}

const fakeHW = 5

// Produces to these topics are refused with NOT_LEADER_OR_FOLLOWER naming
// broker 2 at epoch 4, with an address and without one.
const (
	fakeMoved        = "moved"
	fakeMovedNowhere = "moved-nowhere"
)

func fakeKnown(tp kafka.TopicPartition) bool { return tp.Topic == "t" && tp.Partition == 0 }

func (s *fakeSession) Send(to broker.NodeID, msg kafka.Message) {
	var answer kafka.Message
	switch m := msg.(type) {
	case broker.MetadataRequest:
		answer = broker.MetadataResponse{
			Correlation: m.Correlation,
			Partitions: []kafka.PartitionState{{
				TopicPartition: kafka.TopicPartition{Topic: "t"},
				Replicas:       []int32{1}, Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, PartitionEpoch: 1,
			}},
			LiveBrokers: []int32{1, 2},
			Addresses:   map[int32]string{1: s.addr},
		}
	case broker.ProduceRequest:
		if m.Acks == partition.AcksNone {
			return
		}
		a := broker.ProduceResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, BaseOffset: fakeHW, Leader: broker.LeaderHint{ID: -1, Epoch: -1}}
		switch {
		case m.Topic == fakeMoved:
			a.BaseOffset, a.Err, a.Leader = -1, kafka.ErrNotLeader, broker.LeaderHint{ID: 2, Epoch: 4, Address: "127.0.0.1:9093"}
		case m.Topic == fakeMovedNowhere:
			a.BaseOffset, a.Err, a.Leader = -1, kafka.ErrNotLeader, broker.LeaderHint{ID: 2, Epoch: 4}
		case !fakeKnown(m.TopicPartition):
			a.BaseOffset, a.Err = -1, kafka.ErrUnknownTopicOrPartition
		}
		answer = a
	case broker.FetchManyRequest:
		a := broker.FetchManyResponse{Correlation: m.Correlation}
		for _, p := range m.Partitions {
			a.Partitions = append(a.Partitions, fakeFetch(m.Correlation, p))
		}
		answer = a
	case broker.ListOffsetsRequest:
		a := broker.ListOffsetsResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, LeaderEpoch: 3}
		if m.Latest {
			a.Offset = fakeHW
		}
		if !fakeKnown(m.TopicPartition) {
			a.Offset, a.LeaderEpoch, a.Err = -1, -1, kafka.ErrUnknownTopicOrPartition
		}
		answer = a
	case broker.EpochEndRequest:
		a := broker.EpochEndResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, LeaderEpoch: -1, EndOffset: -1}
		switch {
		case !fakeKnown(m.TopicPartition):
			a.Err = kafka.ErrUnknownTopicOrPartition
		case m.CurrentLeaderEpoch >= 0 && m.CurrentLeaderEpoch < 3:
			a.Err = kafka.ErrFencedLeaderEpoch
		case m.LeaderEpoch >= 3:
			a.LeaderEpoch, a.EndOffset = 3, fakeHW
		default:
			a.LeaderEpoch, a.EndOffset = 1, 2
		}
		answer = a
	case broker.InitProducerIDRequest:
		answer = broker.InitProducerIDResponse{Correlation: m.Correlation, ProducerID: 7}
	case broker.CreateTopic:
		a := broker.CreateTopicResponse{Correlation: m.Correlation}
		if m.Name == "exists" {
			a.Err = kafka.ErrTopicExists
		}
		answer = a
	case broker.FindCoordinatorRequest:
		a := broker.FindCoordinatorResponse{Correlation: m.Correlation, Coordinator: 1}
		switch m.Group {
		case fakeNoCoordinator:
			a.Coordinator, a.Err = -1, kafka.ErrCoordinatorNotAvailable
		case fakeUnreachable:
			a.Coordinator = 2 // live, but without an address
		}
		answer = a
	case broker.GroupRequest:
		answer = broker.GroupResponse{Correlation: m.Correlation, Resp: fakeGroupAnswer(m.Req)}
	default:
		return
	}
	s.mu.Lock()
	s.inbox = append(s.inbox, broker.Envelope{From: to, To: s.id, Msg: answer})
	s.mu.Unlock()
}

// wireClient is a raw connection to a Server over a fake backend.
type wireClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	done chan error // ServeConn's result
	corr int32
}

func newWireClient(t *testing.T) *wireClient {
	t.Helper()
	client, server := net.Pipe()
	srv := &Server{Backend: &fakeBackend{}, Logf: t.Logf}
	done := make(chan error, 1)
	go func() { done <- srv.ServeConn(context.Background(), server, bufio.NewReader(server)) }()
	t.Cleanup(func() { client.Close(); <-done })
	return &wireClient{t: t, conn: client, r: bufio.NewReader(client), done: done}
}

// send writes a request encoded by kmsg and returns its correlation id.
func (c *wireClient) send(req kmsg.Request) int32 {
	c.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, c.corr)
	c.write(frame)
	return c.corr
}

func (c *wireClient) write(b []byte) {
	_, err := c.conn.Write(b)
	require.NoError(c.t, err)
}

// recv reads one response to req (sent with corr) and decodes it.
func (c *wireClient) recv(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	frame, err := wireformat.ReadFrame(c.r, 0)
	require.NoError(c.t, err)
	require.GreaterOrEqual(c.t, len(frame), 4)
	require.Equal(c.t, corr, int32(uint32(frame[0])<<24|uint32(frame[1])<<16|uint32(frame[2])<<8|uint32(frame[3])))
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != apiVersionsKey {
		require.Equal(c.t, byte(0), body[0], "no response header tags")
		body = body[1:]
	}
	require.NoError(c.t, resp.ReadFrom(body))
	return resp
}

// roundTrip sends req and reads its response.
func (c *wireClient) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	return c.recv(req, c.send(req))
}

// closed asserts that the server ended the connection.
func (c *wireClient) closed() {
	c.t.Helper()
	_, err := wireformat.ReadFrame(c.r, 0)
	require.Error(c.t, err)
	require.Error(c.t, <-c.done)
	c.done <- nil // for the cleanup
}

// fakeNoCoordinator is a group whose coordinator is not available;
// fakeElsewhere is a group coordinated by another broker (NOT_COORDINATOR).
// fakeUnreachable is coordinated by broker 2, which has no address.
const (
	fakeNoCoordinator = "nocoord"
	fakeElsewhere     = "elsewhere"
	fakeUnreachable   = "unreachable"
)

// fakeGroupAnswer answers a group request as a coordinator of one-member
// groups would: a join without a member id gets MEMBER_ID_REQUIRED with
// "m-1"; a join with one leads generation 1 of the first protocol; a sync
// gets the assignment the leader gave itself ("a" when none); a fetch of
// all offsets finds "t" partition 0 at 5.
func fakeGroupAnswer(req group.Request) group.Response {
	if req.GroupName() == fakeElsewhere {
		return req.Refuse(kafka.ErrNotCoordinator)
	}
	switch r := req.(type) {
	case group.JoinRequest:
		if r.MemberID == "" {
			return group.JoinResponse{Err: kafka.ErrMemberIDRequired, Generation: -1, MemberID: "m-1"}
		}
		a := group.JoinResponse{Generation: 1, ProtocolType: r.ProtocolType, LeaderID: r.MemberID, MemberID: r.MemberID}
		if len(r.Protocols) > 0 {
			a.Protocol = r.Protocols[0].Name
			a.Members = []group.JoinMember{{MemberID: r.MemberID, Metadata: r.Protocols[0].Metadata}}
		}
		return a
	case group.SyncRequest:
		a := group.SyncResponse{ProtocolType: r.ProtocolType, Protocol: r.Protocol, Assignment: []byte("a")}
		if as, ok := r.Assignments[r.MemberID]; ok {
			a.Assignment = as
		}
		return a
	case group.HeartbeatRequest:
		return group.HeartbeatResponse{}
	case group.LeaveRequest:
		var a group.LeaveResponse
		for _, m := range r.Members {
			a.Members = append(a.Members, group.LeaveMember{MemberID: m})
		}
		return a
	case group.CommitRequest:
		return req.Refuse(nil)
	case group.FetchOffsetsRequest:
		if r.Partitions == nil {
			return group.FetchOffsetsResponse{Partitions: []group.FetchedOffset{{TopicPartition: kafka.TopicPartition{Topic: "t"}, Offset: 5, Metadata: "md"}}}
		}
		var a group.FetchOffsetsResponse
		for _, tp := range r.Partitions {
			a.Partitions = append(a.Partitions, group.FetchedOffset{TopicPartition: tp, Offset: -1})
		}
		return a
	}
	return nil
}

// fakeFetch answers one partition of a fetch: every offset below fakeHW
// holds one record.
func fakeFetch(corr uint64, p broker.FetchPartition) broker.FetchResponse {
	a := broker.FetchResponse{Correlation: corr, TopicPartition: p.TopicPartition, HW: fakeHW, LEO: fakeHW}
	switch {
	case !fakeKnown(p.TopicPartition):
		a.HW, a.LEO, a.Err = -1, -1, kafka.ErrUnknownTopicOrPartition
	case p.Offset < 0 || p.Offset > fakeHW:
		a.Err = kafka.ErrOffsetOutOfRange
	default:
		for o := p.Offset; o < fakeHW; o++ {
			a.Batches = append(a.Batches, record.Batch{BaseOffset: o, LeaderEpoch: 3, ProducerID: record.NoProducerID,
				BaseSequence: record.NoSequence, Records: []record.Record{{Value: []byte{byte(o)}, Timestamp: 1000 + o}}})
		}
	}
	return a
}
