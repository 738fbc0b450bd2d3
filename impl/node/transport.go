package node

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// transport carries envelopes between processes over TCP, one internal
// connection per pair of nodes and direction of dialling. It behaves like
// the simulator's network: sending never blocks and never fails; a message
// for a node that cannot be reached, or that overflows a connection's
// queue, is lost, and the protocol's timeouts and retries cope.
//
// A node dials the controller and the brokers it must talk to; the
// controller dials no one and answers on the connections brokers opened.
// Whatever arrives on a connection teaches the transport a route back to
// its sender, which is how the controller's answers reach a client session
// on a broker (CreateTopics) and how brokers answer each other.
type transport struct {
	self        broker.NodeID
	incarnation int64
	deliver     func(broker.Envelope)
	logf        func(string, ...any)
	secret      []byte // the cluster's (auth.go)

	mu     sync.Mutex
	closed bool
	addrs  map[broker.NodeID]string // where to dial a node
	dialed map[broker.NodeID]*link
	routes map[broker.NodeID]*link // learned from what arrived
	all    map[*link]bool

	// bufs recycles the buffers fetch responses are encoded into, from
	// send to the link writer that has written them: replication sends one
	// per follower fetch, up to ReplicaFetchMaxBytes, and a fresh one costs its
	// zeroing as well as its garbage.
	bufs sync.Pool // of *[]byte
}

// maxPooledBuf: a buffer grown past this by one huge response is dropped
// instead of being kept for the next.
const maxPooledBuf = 4 << 20

// link is one internal connection.
type link struct {
	t       *transport
	to      broker.NodeID // the node dialled; -1 for an accepted connection
	addr    string
	queue   chan frame
	done    chan struct{}
	once    sync.Once
	conn    net.Conn
	retryAt time.Time // a failed dial is not retried before this
}

const (
	linkQueue    = 4096
	dialTimeout  = time.Second
	redialPause  = 200 * time.Millisecond
	writeTimeout = 5 * time.Second
)

func newTransport(self broker.NodeID, incarnation int64, secret []byte, deliver func(broker.Envelope), logf func(string, ...any)) *transport {
	return &transport{
		self: self, incarnation: incarnation, secret: secret, deliver: deliver, logf: logf,
		addrs:  map[broker.NodeID]string{},
		dialed: map[broker.NodeID]*link{},
		routes: map[broker.NodeID]*link{},
		all:    map[*link]bool{},
	}
}

// setAddr records where node id listens; an existing connection to an old
// address is replaced at the next send.
func (t *transport) setAddr(id broker.NodeID, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.addrs[id] == addr {
		return
	}
	t.addrs[id] = addr
	if l, ok := t.dialed[id]; ok {
		delete(t.dialed, id)
		go l.close()
	}
}

// send queues env for delivery; it never blocks.
func (t *transport) send(env broker.Envelope) {
	var buf []byte
	if _, ok := env.Msg.(partition.FetchResponse); ok {
		if p, _ := t.bufs.Get().(*[]byte); p != nil {
			buf = *p
		}
	}
	f, err := toFrame(env, buf)
	if err != nil {
		t.logf("drop message to %d: %v", env.To, err)
		return
	}
	l := t.linkTo(env.To)
	if l == nil {
		return
	}
	select {
	case l.queue <- f:
	default:
		t.logf("drop message to %d: connection queue full", env.To)
	}
}

// recycle returns a frame's batch buffer to the pool once nothing refers
// to it.
func (t *transport) recycle(buf []byte) {
	if buf == nil || cap(buf) > maxPooledBuf {
		return
	}
	buf = buf[:0]
	t.bufs.Put(&buf)
}

func (t *transport) linkTo(to broker.NodeID) *link {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if l, ok := t.dialed[to]; ok {
		if !l.isDone() {
			return l
		}
		if time.Now().Before(l.retryAt) {
			return t.routes[to] // may be nil: the message is lost
		}
		delete(t.dialed, to)
	}
	if l, ok := t.routes[to]; ok && !l.isDone() {
		return l
	}
	addr, ok := t.addrs[to]
	if !ok {
		return nil
	}
	l := t.newLink(to, addr, nil)
	t.dialed[to] = l
	go l.dialAndWrite()
	return l
}

func (t *transport) newLink(to broker.NodeID, addr string, c net.Conn) *link {
	l := &link{t: t, to: to, addr: addr, queue: make(chan frame, linkQueue), done: make(chan struct{}), conn: c}
	t.all[l] = true
	return l
}

// accept takes over an internal connection whose magic has been read.
func (t *transport) accept(c net.Conn, r *bufio.Reader) {
	if err := acceptHandshake(c, r, t.secret); err != nil {
		t.logf("internal connection from %s: refused: %v", c.RemoteAddr(), err)
		_ = c.Close()
		return
	}
	dec := newDecoder(r)
	var h hello
	_ = c.SetReadDeadline(time.Now().Add(dialTimeout))
	if err := dec.decode(&h); err != nil {
		t.logf("internal connection from %s: bad hello: %v", c.RemoteAddr(), err)
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = c.Close()
		return
	}
	l := t.newLink(-1, "", c)
	t.routes[h.From] = l
	t.mu.Unlock()
	w := bufio.NewWriter(c)
	go l.write(newEncoder(), w, c)
	l.read(dec)
}

func (t *transport) learn(from broker.NodeID, l *link) {
	t.mu.Lock()
	if cur, ok := t.routes[from]; !ok || cur != l {
		t.routes[from] = l
	}
	t.mu.Unlock()
}

func (t *transport) close() {
	t.mu.Lock()
	t.closed = true
	links := make([]*link, 0, len(t.all))
	for l := range t.all {
		links = append(links, l)
	}
	t.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

func (l *link) isDone() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.t.mu.Lock()
		c := l.conn
		delete(l.t.all, l)
		for id, r := range l.t.routes {
			if r == l {
				delete(l.t.routes, id)
			}
		}
		l.t.mu.Unlock()
		if c != nil {
			_ = c.Close()
		}
	})
}

func (l *link) dialAndWrite() {
	c, err := net.DialTimeout("tcp", l.addr, dialTimeout)
	if err != nil {
		l.t.mu.Lock()
		l.retryAt = time.Now().Add(redialPause)
		l.t.mu.Unlock()
		l.close()
		return
	}
	setNoDelay(c)
	l.t.mu.Lock()
	l.conn = c
	l.t.mu.Unlock()
	if l.isDone() { // closed while dialling
		_ = c.Close()
		return
	}
	w := bufio.NewWriter(c)
	enc := newEncoder()
	_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(w, Magic); err != nil {
		l.close()
		return
	}
	if err := w.Flush(); err != nil {
		l.close()
		return
	}
	r := bufio.NewReader(c)
	if err := dialHandshake(c, r, l.t.secret); err != nil {
		l.t.logf("internal connection %s: %v", l.describe(), err)
		l.close()
		return
	}
	_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := enc.encode(w, hello{From: l.t.self, Incarnation: l.t.incarnation}); err != nil {
		l.close()
		return
	}
	if err := w.Flush(); err != nil {
		l.close()
		return
	}
	go l.read(newDecoder(r))
	l.write(enc, w, c)
}

// write drains the queue onto the connection, flushing whenever it empties.
func (l *link) write(enc *encoder, w *bufio.Writer, c net.Conn) {
	defer l.close()
	for {
		select {
		case <-l.done:
			return
		case f := <-l.queue:
			_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := writeFrame(enc, w, &f); err != nil {
				return
			}
			// The writer has copied the batches or written them out.
			l.t.recycle(f.batches)
			if len(l.queue) == 0 {
				if err := w.Flush(); err != nil {
					return
				}
			}
		}
	}
}

// read delivers what arrives.
func (l *link) read(dec *decoder) {
	defer l.close()
	for {
		f, err := readFrame(dec)
		if err != nil {
			if err != io.EOF && !l.isDone() {
				l.t.logf("internal connection %s: %v", l.describe(), err)
			}
			return
		}
		env, err := fromFrame(f)
		if err != nil {
			l.t.logf("internal connection %s: %v", l.describe(), err)
			return
		}
		l.t.learn(env.From, l)
		l.t.deliver(env)
	}
}

func (l *link) describe() string {
	if l.to >= 0 {
		return fmt.Sprintf("to node %d at %s", l.to, l.addr)
	}
	if l.conn != nil {
		return fmt.Sprintf("from %s", l.conn.RemoteAddr())
	}
	return "accepted"
}

func setNoDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}
