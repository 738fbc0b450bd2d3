package kafkaclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/wireformat"
)

// Conn is one Kafka connection whose requests reach the wire in the order
// Issue is called: what a real client's connection does, and what an
// idempotent producer's pipelined produces need (a broker takes a
// producer's batches in the order they arrive, KIP-98). franz-go's client
// writes requests in the order they reach its queue, but has no way to
// issue one without waiting for its answer, so callers on goroutines of
// their own race each other to that queue. Conn keeps that order itself:
// Issue queues at once, one goroutine dials, negotiates versions
// (ApiVersions, with KIP-511's downgrade) and writes, another reads the
// answers, which Kafka sends in request order.
//
// A failed connection fails every request queued on it; the next Issue
// dials again. A Conn is safe for concurrent use.
type Conn struct {
	addr     string // for messages: the broker as the caller names it
	resolve  func(ctx context.Context) (string, error)
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	clientID string
	maxBytes int32
	// Caps, when set before the first Issue, caps API keys at these
	// versions, below what the broker takes.
	Caps map[int16]int16

	mu      sync.Mutex
	queue   []*Pending // issued, not yet written, in order
	wake    chan struct{}
	closed  bool
	stop    chan struct{}
	writing sync.WaitGroup
}

// Pending is an issued request; Wait gives its answer.
type Pending struct {
	req  kmsg.Request
	done chan struct{}
	resp kmsg.Response
	err  error
}

// Wait returns the answer, or the connection's error, or ctx's.
func (p *Pending) Wait(ctx context.Context) (kmsg.Response, error) {
	select {
	case <-p.done:
		return p.resp, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *Pending) finish(resp kmsg.Response, err error) {
	p.resp, p.err = resp, err
	close(p.done)
}

// NewConn returns a connection to the broker named name, at the address
// resolve gives (asked again at every dial: a broker may move), dialed on
// first use with dial (nil: net.Dialer). Answers over maxBytes (0: 100
// MiB) close it.
func NewConn(name string, resolve func(ctx context.Context) (string, error), dial func(ctx context.Context, network, addr string) (net.Conn, error), clientID string, maxBytes int32) *Conn {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	if maxBytes <= 0 {
		maxBytes = wireformat.DefaultMaxFrameBytes
	}
	c := &Conn{addr: name, resolve: resolve, dial: dial, clientID: clientID, maxBytes: maxBytes, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	c.writing.Add(1)
	go c.writeLoop()
	return c
}

// Issue queues req behind every request issued before it. Its version is
// set to the highest both sides support, no higher than req's own.
func (c *Conn) Issue(req kmsg.Request) *Pending {
	p := &Pending{req: req, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		p.finish(nil, net.ErrClosed)
		return p
	}
	c.queue = append(c.queue, p)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return p
}

// Close fails what is queued and closes the connection.
func (c *Conn) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	c.mu.Unlock()
	c.writing.Wait()
}

// take returns the queued requests, or nil once closed.
func (c *Conn) take() ([]*Pending, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	return q, !c.closed
}

// session is one dialed connection: the versions the broker takes and the
// requests written on it, oldest first, that wait for their answers.
type session struct {
	nc       net.Conn
	versions map[int16]int16
	mu       sync.Mutex
	inflight []inflight
	failed   error
	gone     chan struct{}
}

type inflight struct {
	p    *Pending
	corr int32
}

func (s *session) fail(err error) {
	s.mu.Lock()
	if s.failed == nil {
		s.failed = err
		close(s.gone)
	}
	in := s.inflight
	s.inflight = nil
	s.mu.Unlock()
	s.nc.Close()
	for _, f := range in {
		f.p.finish(nil, err)
	}
}

func (c *Conn) writeLoop() {
	defer c.writing.Done()
	var s *session
	defer func() {
		if s != nil {
			s.fail(net.ErrClosed)
		}
		q, _ := c.take()
		for _, p := range q {
			p.finish(nil, net.ErrClosed)
		}
	}()
	corr := int32(0)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.clientID))
	var buf []byte
	for {
		q, open := c.take()
		if !open {
			for _, p := range q {
				p.finish(nil, net.ErrClosed)
			}
			return
		}
		if len(q) == 0 {
			select {
			case <-c.wake:
				continue
			case <-c.stop:
				return
			}
		}
		for i, p := range q {
			if s != nil {
				select {
				case <-s.gone:
					s = nil // failed under us; dial again
				default:
				}
			}
			if s == nil {
				var err error
				if s, err = c.open(); err != nil {
					for _, p := range q[i:] {
						p.finish(nil, err)
					}
					break
				}
			}
			max, ok := s.versions[p.req.Key()]
			if limit, capped := c.Caps[p.req.Key()]; capped {
				max = min(max, limit)
			}
			if !ok {
				p.finish(nil, fmt.Errorf("%s: the broker does not take %s (key %d): %w", c.addr, kmsg.NameForKey(p.req.Key()), p.req.Key(), kerr.UnsupportedVersion))
				continue
			}
			p.req.SetVersion(min(p.req.GetVersion(), max))
			corr++
			buf = f.AppendRequest(buf[:0], p.req, corr)
			// An acks=0 produce gets no answer (Kafka sends none).
			answered := true
			if pr, ok := p.req.(*kmsg.ProduceRequest); ok && pr.Acks == 0 {
				answered = false
			}
			s.mu.Lock()
			failed := s.failed
			if failed == nil && answered {
				s.inflight = append(s.inflight, inflight{p: p, corr: corr})
			}
			s.mu.Unlock()
			if failed != nil {
				p.finish(nil, failed)
				continue
			}
			s.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_, err := s.nc.Write(buf)
			switch {
			case err != nil && answered:
				s.fail(fmt.Errorf("%s: write: %w", c.addr, err))
			case err != nil:
				p.finish(nil, fmt.Errorf("%s: write: %w", c.addr, err))
				s.fail(fmt.Errorf("%s: write: %w", c.addr, err))
			case !answered:
				p.finish(nil, nil)
			}
		}
	}
}

// open dials, negotiates versions and starts the session's reader.
func (c *Conn) open() (*session, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr, err := c.resolve(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.addr, err)
	}
	nc, br, versions, err := dialNegotiate(ctx, func(ctx context.Context) (net.Conn, error) { return c.dial(ctx, "tcp", addr) }, c.clientID, c.maxBytes)
	var neg errNegotiate
	switch {
	case errors.As(err, &neg):
		return nil, fmt.Errorf("%s: %w: %v", c.addr, ErrNegotiation, neg.err)
	case err != nil:
		return nil, fmt.Errorf("%s: dial: %w", c.addr, err)
	}
	nc.SetDeadline(time.Time{})
	s := &session{nc: nc, versions: versions, gone: make(chan struct{})}
	go c.readLoop(s, br)
	return s, nil
}

// ErrNotListening: nothing accepted a connection at the address.
var ErrNotListening = errors.New("nothing listens there")

// ErrNegotiation: a connection was made, and the version negotiation
// failed: no answer, an answer that does not decode, or an error code.
var ErrNegotiation = errors.New("version negotiation failed")

// Handshake dials addr (with dial; nil: net.Dialer) and negotiates versions
// as a Conn does, returning the highest version of each API key the broker
// takes. Its errors say which step failed: ErrNotListening (nothing
// accepted the connection) or ErrNegotiation (what the broker answered,
// and why that is not Kafka's answer), for a diagnosis better than "is it
// running?".
func Handshake(ctx context.Context, addr string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (map[int16]int16, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, _, versions, err := dialNegotiate(ctx, func(ctx context.Context) (net.Conn, error) { return dial(ctx, "tcp", addr) }, "watermark-probe", wireformat.DefaultMaxFrameBytes)
	var neg errNegotiate
	switch {
	case errors.As(err, &neg):
		return nil, fmt.Errorf("%s: %w: %v", addr, ErrNegotiation, neg.err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w (%v)", addr, ErrNotListening, err)
	}
	nc.Close()
	return versions, nil
}

// negotiate asks the broker which versions it takes, as KIP-511 has a
// client do: ApiVersions at the highest version kmsg knows; on
// UNSUPPORTED_VERSION (answered in the v0 layout, with the broker's own
// range of ApiVersions) again at the broker's highest, or v0.
func negotiate(nc net.Conn, br *bufio.Reader, clientID string, maxBytes int32, first int16, said []string) (map[int16]int16, error) {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	next := first
	// said is the exchange so far, so that an error tells the whole of it:
	// which versions were asked and what came back.
	fail := func(format string, args ...any) error {
		return errors.New(strings.Join(append(said, fmt.Sprintf(format, args...)), "; then "))
	}
	for tries := 0; tries < 3; tries++ {
		v := next
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "watermark", "1"
		if _, err := nc.Write(f.AppendRequest(nil, req, 0)); err != nil {
			return nil, fail("ApiVersions v%d: write: %v", v, err)
		}
		frame, err := wireformat.ReadFrame(br, maxBytes)
		if err != nil {
			if closed(err) && len(said) > 0 && tries > 0 {
				return nil, &closedAfterDowngrade{next: v, said: append(said, fmt.Sprintf("asked ApiVersions v%d on the same connection: the broker had closed it (KIP-511 keeps it open after an UNSUPPORTED_VERSION answer, for the retry)", v))}
			}
			if closed(err) {
				return nil, fail("asked ApiVersions v%d: the broker closed the connection with no answer", v)
			}
			return nil, fail("asked ApiVersions v%d: read the answer: %v", v, err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = v
		if len(frame) < 4 {
			return nil, fail("asked ApiVersions v%d: a %d-byte answer", v, len(frame))
		}
		err = resp.ReadFrom(frame[4:])
		if err == nil && v > 0 && resp.ErrorCode == kerr.UnsupportedVersion.Code {
			// KIP-511's refusal is in the v0 layout, whatever was asked;
			// read at v it may decode by accident, listing nothing.
			v0 := kmsg.NewPtrApiVersionsResponse()
			if v0.ReadFrom(frame[4:]) == nil {
				resp = v0
			}
		}
		if err != nil && v > 0 {
			// A broker that refuses v3 answers in the v0 layout.
			resp = kmsg.NewPtrApiVersionsResponse()
			if err0 := resp.ReadFrom(frame[4:]); err0 != nil {
				return nil, fail("asked ApiVersions v%d: the answer does not decode at v%d (%v) nor v0 (%v); it begins % x", v, v, err, err0, head(frame))
			}
		} else if err != nil {
			return nil, fail("asked ApiVersions v0: the answer does not decode: %v; it begins % x", err, head(frame))
		}
		if resp.ErrorCode == kerr.UnsupportedVersion.Code && v > 0 {
			next = 0
			for _, k := range resp.ApiKeys {
				if k.ApiKey == kmsg.ApiVersions.Int16() && k.MaxVersion < v {
					next = k.MaxVersion
				}
			}
			said = append(said, fmt.Sprintf("asked ApiVersions v%d: answered UNSUPPORTED_VERSION, naming v%d as its highest", v, next))
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, fail("asked ApiVersions v%d: answered %v", v, err)
		}
		versions := make(map[int16]int16, len(resp.ApiKeys))
		for _, k := range resp.ApiKeys {
			versions[k.ApiKey] = k.MaxVersion
		}
		return versions, nil
	}
	return nil, fail("no version the broker takes answered")
}

// closed reports whether a read failed because the broker closed the
// connection: an end of stream, or a reset (a close with unread data).
func closed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// closedAfterDowngrade is a broker that answered UNSUPPORTED_VERSION and
// then closed the connection instead of taking the retry on it.
type closedAfterDowngrade struct {
	next int16
	said []string
}

func (e *closedAfterDowngrade) Error() string { return strings.Join(e.said, "; then ") }

// dialNegotiate dials and negotiates versions. A broker that closes the
// connection after its UNSUPPORTED_VERSION answer is asked again, once, on
// a new connection, at the version it named: a client can go on with it,
// and the exchange is in the error if that fails too.
func dialNegotiate(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), clientID string, maxBytes int32) (net.Conn, *bufio.Reader, map[int16]int16, error) {
	first := kmsg.NewPtrApiVersionsRequest().MaxVersion()
	var said []string
	for attempt := 0; ; attempt++ {
		nc, err := dial(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		if dl, ok := ctx.Deadline(); ok {
			nc.SetDeadline(dl)
		}
		br := bufio.NewReader(nc)
		versions, err := negotiate(nc, br, clientID, maxBytes, first, said)
		var closed *closedAfterDowngrade
		if errors.As(err, &closed) && attempt == 0 {
			nc.Close()
			first, said = closed.next, append(closed.said, "a new connection")
			continue
		}
		if err != nil {
			nc.Close()
			return nil, nil, nil, errNegotiate{err}
		}
		return nc, br, versions, nil
	}
}

// errNegotiate marks a failed negotiation, as opposed to a failed dial.
type errNegotiate struct{ err error }

func (e errNegotiate) Error() string { return e.err.Error() }
func (e errNegotiate) Unwrap() error { return e.err }

// head is the first bytes of an answer, for messages.
func head(b []byte) []byte { return b[:min(len(b), 32)] }

// readLoop reads answers, which come in request order, and hands each to
// the oldest request written.
func (c *Conn) readLoop(s *session, br *bufio.Reader) {
	for {
		frame, err := wireformat.ReadFrame(br, c.maxBytes)
		if err != nil {
			s.fail(fmt.Errorf("%s: read: %w", c.addr, err))
			return
		}
		s.mu.Lock()
		if len(s.inflight) == 0 {
			s.mu.Unlock()
			s.fail(fmt.Errorf("%s: an answer to no request", c.addr))
			return
		}
		f := s.inflight[0]
		s.inflight = s.inflight[1:]
		s.mu.Unlock()
		resp, err := decodeAnswer(frame, f.corr, f.p.req)
		if err != nil {
			f.p.finish(nil, fmt.Errorf("%s: %w", c.addr, err))
			s.fail(fmt.Errorf("%s: %w", c.addr, err))
			return
		}
		f.p.finish(resp, nil)
	}
}

// decodeAnswer checks an answer's correlation id and decodes its body at
// the request's version.
func decodeAnswer(frame []byte, corr int32, req kmsg.Request) (kmsg.Response, error) {
	if len(frame) < 4 {
		return nil, fmt.Errorf("a %d-byte answer", len(frame))
	}
	if got := int32(uint32(frame[0])<<24 | uint32(frame[1])<<16 | uint32(frame[2])<<8 | uint32(frame[3])); got != corr {
		return nil, fmt.Errorf("answer with correlation id %d where %d was next: answers out of request order", got, corr)
	}
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		// The response header's tagged fields (none for ApiVersions, KIP-511).
		r := kbin.Reader{Src: body}
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return nil, fmt.Errorf("%s v%d answer header: tagged fields cut short", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
		body = r.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s v%d answer: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}
