package node

import (
	"bufio"
	"context"
	"errors"
	"github.com/watermarkhq/watermark/impl/kafka"
	"io"
	"io/fs"
	"net"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafkawire"
)

// session is one Kafka connection's mailbox (kafkawire.Session).
type session struct {
	n    *Broker
	id   broker.NodeID
	mu   sync.Mutex
	q    []broker.Envelope
	wake chan struct{}
	gone bool
}

var _ kafkawire.Backend = (*Broker)(nil)

// NodeID implements kafkawire.Backend.
func (n *Broker) NodeID() broker.NodeID { return n.ID() }

// sessionIDBits: session ids carry the broker id above these bits, so that
// they are unique in the cluster (the controller routes answers by them).
const sessionIDBits = 20

// Open implements kafkawire.Backend.
func (n *Broker) Open() kafkawire.Session {
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		n.nextSess = (n.nextSess + 1) % (1 << sessionIDBits)
		id := broker.ClientIDBase + broker.NodeID(int32(n.ID())<<sessionIDBits|n.nextSess)
		if _, taken := n.sessions[id]; !taken {
			s := &session{n: n, id: id, wake: make(chan struct{}, 1)}
			n.sessions[id] = s
			return s
		}
	}
}

func (s *session) ID() broker.NodeID { return s.id }

func (s *session) Send(to broker.NodeID, msg kafka.Message) {
	env := broker.Envelope{From: s.id, To: to, Msg: msg}
	if to != s.n.ID() {
		if to == broker.ControllerID {
			env.To = s.n.controller() // the voter the broker follows
		}
		s.n.tr.send(env) // CreateTopic to the controller
		return
	}
	select {
	case s.n.inbox <- env:
	case <-s.n.stop:
	}
}

func (s *session) put(env broker.Envelope) {
	s.mu.Lock()
	if !s.gone {
		s.q = append(s.q, env)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *session) Recv(ctx context.Context) (broker.Envelope, error) {
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			env := s.q[0]
			s.q = s.q[1:]
			s.mu.Unlock()
			return env, nil
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return broker.Envelope{}, ctx.Err()
		case <-s.n.stop:
			return broker.Envelope{}, ErrClosed
		}
	}
}

func (s *session) Close() {
	s.mu.Lock()
	s.gone = true
	s.q = nil
	s.mu.Unlock()
	s.n.mu.Lock()
	delete(s.n.sessions, s.id)
	s.n.mu.Unlock()
}

// accept serves the listener: internal connections to the transport, the
// rest to the Kafka wire server.
func (n *Broker) accept() {
	for {
		c, err := n.ln.Accept()
		if err != nil {
			return
		}
		switch n.track(c) {
		case trackStopped:
			_ = c.Close()
			return
		case trackFull:
			n.cfg.Logf("%s: refused: %d connections open (max connections)", c.RemoteAddr(), n.maxConns())
			_ = c.Close()
			continue
		}
		go n.serve(c)
	}
}

// What track did with a connection.
const (
	tracked = iota
	trackStopped
	trackFull
)

func (n *Broker) maxConns() int {
	if n.cfg.MaxConnections > 0 {
		return n.cfg.MaxConnections
	}
	return DefaultMaxConnections
}

func (n *Broker) track(c net.Conn) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.stop:
		return trackStopped
	default:
	}
	if len(n.conns) >= n.maxConns() {
		return trackFull
	}
	n.conns[c] = true
	return tracked
}

func (n *Broker) serve(c net.Conn) {
	defer func() {
		n.mu.Lock()
		delete(n.conns, c)
		n.mu.Unlock()
		_ = c.Close()
	}()
	setNoDelay(c)
	r := bufio.NewReaderSize(c, 64<<10)
	internal, err := peekMagic(c, r)
	if err != nil {
		return
	}
	if internal {
		n.tr.accept(c, r)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := n.wire.ServeConn(ctx, c, r); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
		n.cfg.Logf("connection from %s: %v", c.RemoteAddr(), err)
	}
}

// peekMagic reports whether c opens with Magic, consuming it if so.
func peekMagic(c net.Conn, r *bufio.Reader) (bool, error) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	head, err := r.Peek(len(Magic))
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return false, err
	}
	if string(head) != Magic {
		return false, nil
	}
	_, err = r.Discard(len(Magic))
	return true, err
}

// shutdown runs when the loop ends: nothing more is sent or written.
func (n *Broker) shutdown() {
	_ = n.ln.Close()
	n.tr.close()
	n.mu.Lock()
	for c := range n.conns {
		_ = c.Close()
	}
	n.mu.Unlock()
	_ = n.disk.Close()
	close(n.done)
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
