package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from its own address to a target, and can
// cut them or slow them down: the network faults of a real cluster. Each
// link between two nodes goes through its own Proxy, so links fail one by
// one.
//
// Invariants:
//  1. While cut, no byte crosses the proxy: open connections were closed
//     when the cut began, and new ones are closed as soon as they are
//     accepted.
//  2. After Close returns, every goroutine the proxy started has ended.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cut     bool
	latency time.Duration
	conns   map[*pipe]bool
	closed  bool

	done   chan struct{} // closed by Close
	ctx    context.Context
	cancel context.CancelFunc // cancels dials in flight, with done
	wg     sync.WaitGroup
}

// pipe is one proxied connection: the client's side and the target's.
type pipe struct {
	client, server net.Conn
	once           sync.Once
}

func (p *pipe) close() {
	p.once.Do(func() {
		_ = p.client.Close()
		_ = p.server.Close()
	})
}

// NewProxy listens on listen (host:port; port 0 picks one) and forwards
// every connection to target.
func NewProxy(listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pipe]bool{}, done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is where the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// SetCut cuts the link (closing its open connections and refusing new
// ones) or heals it.
func (p *Proxy) SetCut(cut bool) {
	p.mu.Lock()
	p.cut = cut
	var open []*pipe
	if cut {
		for c := range p.conns {
			open = append(open, c)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		c.close()
	}
}

// Cut reports whether the link is cut.
func (p *Proxy) Cut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// SetLatency delays every chunk of data by d in each direction (0: none).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

func (p *Proxy) state() (cut bool, latency time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut, p.latency
}

// Close stops the proxy, closes its connections and waits for its
// goroutines to end. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.cancel()
	open := make([]*pipe, 0, len(p.conns))
	for c := range p.conns {
		open = append(open, c)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range open {
		c.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (too many files): back off a little.
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if cut, _ := p.state(); cut {
			_ = conn.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(conn)
	}
}

// serve dials the target for one accepted connection and copies both ways.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: 5 * time.Second}
	server, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		// The target is down: the client sees its connection close, as
		// it would see a refused dial.
		_ = client.Close()
		return
	}
	c := &pipe{client: client, server: server}
	p.mu.Lock()
	if p.cut || p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = true
	p.mu.Unlock()

	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.copy(server, client, c) }()
	go func() { defer both.Done(); p.copy(client, server, c) }()
	both.Wait()
	c.close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// copy moves data from src to dst until src ends. A clean end (EOF) is
// passed on as a half-close, so the other direction keeps flowing until
// its own end; an error ends the whole connection.
func (p *Proxy) copy(dst, src net.Conn, c *pipe) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, latency := p.state(); latency > 0 {
				select {
				case <-time.After(latency):
				case <-p.done:
					c.close()
					return
				}
			}
			if cut, _ := p.state(); cut {
				c.close()
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				c.close()
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
					return
				}
			}
			c.close()
			return
		}
	}
}
