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
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

// fakeBackend answers every message at once with canned answers: topic "t"
// has one partition led by broker 1 at epoch 3 with HW 5 (one record per
// offset); "exists" already exists for CreateTopic.
type fakeBackend struct {
	mu     sync.Mutex
	nextID broker.NodeID
}

func (f *fakeBackend) NodeID() broker.NodeID { return 1 }

func (f *fakeBackend) Open() Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	return &fakeSession{id: broker.ClientIDBase + f.nextID}
}

// fakeSession's mailbox is unbounded: the fake answers synchronously, from
// the handler's own goroutine, before the handler starts to read.
type fakeSession struct {
	id    broker.NodeID
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

func fakeKnown(tp broker.TopicPartition) bool { return tp.Topic == "t" && tp.Partition == 0 }

func (s *fakeSession) Send(to broker.NodeID, msg any) {
	var answer any
	switch m := msg.(type) {
	case broker.MetadataRequest:
		answer = broker.MetadataResponse{
			Correlation: m.Correlation,
			Partitions: []broker.PartitionState{{
				TopicPartition: controller.TopicPartition{Topic: "t"},
				Replicas:       []int32{1}, Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, PartitionEpoch: 1,
			}},
			LiveBrokers: []int32{1, 2},
			Addresses:   map[int32]string{1: "127.0.0.1:9092"},
		}
	case broker.ProduceRequest:
		if m.Acks == partition.AcksNone {
			return
		}
		a := broker.ProduceResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, BaseOffset: fakeHW}
		if !fakeKnown(m.TopicPartition) {
			a.BaseOffset, a.Err = -1, broker.ErrUnknownTopicOrPartition
		}
		answer = a
	case broker.FetchRequest:
		a := broker.FetchResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, HW: fakeHW, LEO: fakeHW}
		switch {
		case !fakeKnown(m.TopicPartition):
			a.HW, a.LEO, a.Err = -1, -1, broker.ErrUnknownTopicOrPartition
		case m.Offset < 0 || m.Offset > fakeHW:
			a.Err = partition.ErrOffsetOutOfRange
		default:
			for o := m.Offset; o < fakeHW; o++ {
				a.Batches = append(a.Batches, record.Batch{BaseOffset: o, LeaderEpoch: 3, ProducerID: record.NoProducerID,
					BaseSequence: record.NoSequence, Records: []record.Record{{Value: []byte{byte(o)}, Timestamp: 1000 + o}}})
			}
		}
		answer = a
	case broker.ListOffsetsRequest:
		a := broker.ListOffsetsResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, LeaderEpoch: 3}
		if m.Latest {
			a.Offset = fakeHW
		}
		if !fakeKnown(m.TopicPartition) {
			a.Offset, a.LeaderEpoch, a.Err = -1, -1, broker.ErrUnknownTopicOrPartition
		}
		answer = a
	case broker.InitProducerIDRequest:
		answer = broker.InitProducerIDResponse{Correlation: m.Correlation, ProducerID: 7}
	case broker.CreateTopic:
		a := broker.CreateTopicResponse{Correlation: m.Correlation}
		if m.Name == "exists" {
			a.Err = controller.ErrTopicExists
		}
		answer = a
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
	frame, err := ReadFrame(c.r, 0)
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
	_, err := ReadFrame(c.r, 0)
	require.Error(c.t, err)
	require.Error(c.t, <-c.done)
	c.done <- nil // for the cleanup
}
