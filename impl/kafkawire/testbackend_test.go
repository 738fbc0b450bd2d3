package kafkawire

import (
	"bufio"
	"context"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/quorum"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/storage"
)

// testCluster is one real broker and the controller, driven by one
// goroutine (messages and a 10 ms ticker), behind a kafkawire Server on a
// real listener: the smallest deployment a Kafka client can talk to.
type testCluster struct {
	t     *testing.T
	addr  string
	in    chan broker.Envelope
	done  chan struct{}
	start time.Time

	mu       sync.Mutex
	sessions map[broker.NodeID]*testSession
	nextID   broker.NodeID
}

const testBrokerID broker.NodeID = 1

// startTestCluster starts the cluster and the server and waits until the
// broker has registered with the controller.
func startTestCluster(t *testing.T) *testCluster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &testCluster{
		t:        t,
		addr:     ln.Addr().String(),
		in:       make(chan broker.Envelope, 4096),
		done:     make(chan struct{}),
		start:    time.Now(),
		sessions: map[broker.NodeID]*testSession{},
		nextID:   broker.ClientIDBase,
	}
	ctrl, err := quorum.Single(controller.Config{SessionTimeoutMs: 60_000}, 0)
	require.NoError(t, err)
	cfg := broker.DefaultConfig(testBrokerID)
	cfg.HeartbeatIntervalMs, cfg.HWCheckpointIntervalMs = 100, 0
	cfg.Address = c.addr
	// One broker: the offsets topic must fit on it.
	cfg.OffsetsTopicPartitions, cfg.OffsetsTopicReplicationFactor = 3, 1
	b, err := broker.Open(cfg, storage.NewSimDisk(), 1, 0, nil)
	require.NoError(t, err)

	var wg sync.WaitGroup
	wg.Go(func() { c.run(ctrl, b) })
	// Cleanups run last first: the connections end while the broker
	// loop still answers them, then the loop stops.
	t.Cleanup(func() {
		close(c.done)
		wg.Wait()
	})
	serveForTest(t, ln, &Server{Backend: c, Logf: t.Logf})

	sess := c.Open()
	defer sess.Close()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		sess.Send(testBrokerID, broker.MetadataRequest{Correlation: 1})
		for {
			env, err := sess.Recv(ctx)
			if err != nil {
				return false
			}
			if m, ok := env.Msg.(broker.MetadataResponse); ok {
				return len(m.LiveBrokers) == 1 && m.Addresses[int32(testBrokerID)] == c.addr
			}
		}
	}, 20*time.Second, 50*time.Millisecond, "broker never registered")
	return c
}

// run is the cluster's only goroutine touching the broker and controller.
func (c *testCluster) run(ctrl *quorum.Node, b *broker.Broker) {
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	var queue []broker.Envelope
	collect := func(err error) {
		if err != nil {
			c.t.Errorf("broker: %v", err)
		}
		queue = append(queue, b.TakeOutbox()...)
		b.TakeEvents()
		b.TakeFaults()
		queue = append(queue, ctrl.TakeOutbox()...)
		ctrl.TakeEvents()
	}
	collect(nil)
	for {
		now := time.Since(c.start).Milliseconds()
		for len(queue) > 0 {
			env := queue[0]
			queue = queue[1:]
			switch {
			case env.To == broker.VoterNode(1) || env.To == broker.ControllerID: // a session's CreateTopic
				env.To = broker.VoterNode(1)
				_ = ctrl.Handle(env, now)
				collect(nil)
			case env.To == testBrokerID:
				collect(b.Handle(env, now))
			case env.To >= broker.ClientIDBase:
				c.mu.Lock()
				s := c.sessions[env.To]
				c.mu.Unlock()
				if s != nil {
					s.deliver(env)
				}
			}
		}
		select {
		case <-c.done:
			return
		case env := <-c.in:
			queue = append(queue, env)
		case <-ticker.C:
			now := time.Since(c.start).Milliseconds()
			ctrl.Tick(now)
			collect(b.Tick(now))
		}
	}
}

func (c *testCluster) NodeID() broker.NodeID { return testBrokerID }

func (c *testCluster) Open() Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	s := &testSession{c: c, id: c.nextID, notify: make(chan struct{}, 1)}
	c.sessions[s.id] = s
	return s
}

// testSession is a mailbox: an unbounded queue and a wake-up signal.
type testSession struct {
	c      *testCluster
	id     broker.NodeID
	mu     sync.Mutex
	inbox  []broker.Envelope
	notify chan struct{}
}

func (s *testSession) ID() broker.NodeID { return s.id }

func (s *testSession) Send(to broker.NodeID, msg kafka.Message) {
	select {
	case s.c.in <- broker.Envelope{From: s.id, To: to, Msg: msg}:
	case <-s.c.done:
	}
}

func (s *testSession) deliver(env broker.Envelope) {
	s.mu.Lock()
	s.inbox = append(s.inbox, env)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *testSession) Recv(ctx context.Context) (broker.Envelope, error) {
	for {
		s.mu.Lock()
		if len(s.inbox) > 0 {
			env := s.inbox[0]
			s.inbox = s.inbox[1:]
			s.mu.Unlock()
			return env, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return broker.Envelope{}, ctx.Err()
		case <-s.notify:
		}
	}
}

func (s *testSession) Close() {
	s.c.mu.Lock()
	delete(s.c.sessions, s.id)
	s.c.mu.Unlock()
}

// serveForTest serves every connection ln accepts with srv until the test
// ends, then stops accepting and waits for the connections to close.
func serveForTest(t *testing.T, ln net.Listener, srv *Server) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { _ = srv.ServeConn(ctx, conn, bufio.NewReader(conn)) })
		}
	})
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
}
