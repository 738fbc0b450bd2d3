package kafkawire

import (
	"context"
	"errors"
	"fmt"
	"github.com/watermarkhq/watermark/impl/kafka"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/wireformat"
)

// DefaultMaxBatchBytes bounds the uncompressed size of one produced record
// batch when Server.MaxBatchBytes is 0.
const DefaultMaxBatchBytes = wireformat.DefaultLimit

// DefaultIdleTimeout is Kafka's connections.max.idle.ms, 10 minutes.
const DefaultIdleTimeout = 10 * time.Minute

// DefaultRequestReadTimeout bounds how long a started request may take to
// arrive (Kafka's request.timeout.ms default): a peer that declares a
// frame and trickles it, or sends nothing more, is closed.
const DefaultRequestReadTimeout = 30 * time.Second

// backendTimeout bounds the wait for answers that have no client-given
// timeout (metadata, producer ids, list offsets).
const backendTimeout = 10 * time.Second

// Server speaks the Kafka protocol to clients in front of one broker.
type Server struct {
	Backend Backend
	// MaxRequestBytes bounds a request frame; 0 means DefaultMaxRequestBytes.
	MaxRequestBytes int32
	// MaxBatchBytes bounds a produced batch after decompression; 0 means
	// DefaultMaxBatchBytes.
	MaxBatchBytes int
	// IdleTimeout closes a connection on which no request starts for this
	// long (connections.max.idle.ms); 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// RequestReadTimeout closes a connection whose request started (its
	// size arrived) but whose bytes did not all come within it; 0 means
	// DefaultRequestReadTimeout.
	RequestReadTimeout time.Duration
	// Logf logs connection-level failures; nil logs nothing.
	Logf func(string, ...any)

	once   sync.Once
	decomp *wireformat.Decompressor
}

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (s *Server) init() {
	s.once.Do(func() {
		limit := s.MaxBatchBytes
		if limit <= 0 {
			limit = DefaultMaxBatchBytes
		}
		s.decomp = &wireformat.Decompressor{Limit: limit}
	})
}

// ServeConn serves one client connection until the client closes it, a
// frame is malformed, a write fails or ctx ends; it closes conn before it
// returns. r is what to read the connection from (a bufio.Reader that may
// hold bytes the caller peeked). Requests are handled one at a time and
// answered in order, as Kafka clients expect. A clean close by the client
// returns nil.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn, r io.Reader) (err error) {
	s.init()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // unblocks a pending read
	defer stop()
	sess := s.Backend.Open()
	defer sess.Close()
	defer func() {
		// Last resort: a handler bug must cost one connection, not the
		// broker process.
		if p := recover(); p != nil {
			s.logf("kafkawire: %s: panic serving connection: %v", conn.RemoteAddr(), p)
			err = fmt.Errorf("panic serving connection: %v", p)
		}
	}()
	h := &handler{s: s, sess: sess}
	var out []byte
	idle, started := orDefault(s.IdleTimeout, DefaultIdleTimeout), orDefault(s.RequestReadTimeout, DefaultRequestReadTimeout)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(idle))
		n, err := wireformat.ReadFrameSize(r, s.MaxRequestBytes)
		var frame []byte
		if err == nil {
			_ = conn.SetReadDeadline(time.Now().Add(started))
			frame, err = wireformat.ReadFrameBody(r, n)
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.logf("kafkawire: %s: closed: %v (idle %s, or a request not all sent within %s)", conn.RemoteAddr(), err, idle, started)
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			s.logf("kafkawire: %s: %v", conn.RemoteAddr(), err)
			return err
		}
		key, corr, resp, err := h.serve(ctx, frame)
		if err != nil {
			if ctx.Err() == nil {
				s.logf("kafkawire: %s: %v", conn.RemoteAddr(), err)
			}
			return err
		}
		if resp == nil {
			continue // acks=0 produce: Kafka sends nothing back
		}
		out = appendResponse(out[:0], key, corr, resp)
		if _, err := conn.Write(out); err != nil {
			return err
		}
	}
}

// handler serves the requests of one connection.
type handler struct {
	s    *Server
	sess Session
	corr uint64 // last correlation used towards the broker
	// rebalance is how long the last join of each group on this
	// connection could be held: a SyncGroup may be held as long.
	rebalance map[string]time.Duration
}

// serve parses and handles one frame. It returns the response to send (nil
// for none) or an error that ends the connection.
func (h *handler) serve(ctx context.Context, frame []byte) (int16, int32, kmsg.Response, error) {
	req, err := ParseRequest(frame)
	if err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) && ue.Key == apiVersionsKey && ue.Version > served[apiVersionsKey].max {
			return ue.Key, ue.CorrelationID, apiVersionsTooNew(), nil // KIP-511
		}
		// Kafka closes the connection on a version it does not know
		// for any other api: the client cannot parse any answer.
		return 0, 0, nil, err
	}
	resp, err := h.handle(ctx, req)
	return req.Key, req.CorrelationID, resp, err
}

// handle answers one parsed request through its registry row (served).
// The response's version is the request's. An error ends the connection
// (only when ctx ends or the broker does not answer a request that has no
// error code to say so).
func (h *handler) handle(ctx context.Context, req *Request) (kmsg.Response, error) {
	a, ok := served[req.Key]
	if !ok {
		return nil, fmt.Errorf("no handler for %s v%d", kmsg.NameForKey(req.Key), req.Version)
	}
	resp, err := a.serve(h, ctx, req)
	if err != nil || resp == nil {
		return nil, err
	}
	resp.SetVersion(req.Version)
	return resp, nil
}

// send gives msg a fresh correlation (set by build) and sends it.
func (h *handler) send(to broker.NodeID, build func(corr uint64) kafka.Message) uint64 {
	h.corr++
	h.sess.Send(to, build(h.corr))
	return h.corr
}

// collect waits for the broker's answers to the correlations in want (a
// set it empties), giving each to got, until none is missing, got returns
// true, or deadline passes. Answers to earlier requests of the connection
// (late long-poll rounds, timed-out produces) are dropped. It fails only
// when ctx ends.
func (h *handler) collect(ctx context.Context, want map[uint64]bool, deadline time.Time, got func(corr uint64, msg kafka.Message) bool) error {
	if len(want) == 0 {
		return nil
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for len(want) > 0 {
		env, err := h.sess.Recv(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil // deadline: the caller sees what is missing
		}
		corr, ok := correlationOf(env.Msg)
		if !ok || !want[corr] {
			continue
		}
		delete(want, corr)
		if got(corr, env.Msg) {
			return nil
		}
	}
	return nil
}

// ask sends one request and waits for its answer; nil if none came in time.
func (h *handler) ask(ctx context.Context, to broker.NodeID, timeout time.Duration, build func(corr uint64) kafka.Message) (kafka.Message, error) {
	corr := h.send(to, build)
	var answer kafka.Message
	err := h.collect(ctx, map[uint64]bool{corr: true}, time.Now().Add(timeout), func(_ uint64, msg kafka.Message) bool {
		answer = msg
		return true
	})
	return answer, err
}

// correlationOf reads the correlation of an answer from the broker or the
// controller.
func correlationOf(msg kafka.Message) (uint64, bool) {
	a, ok := msg.(kafka.Answer)
	if !ok {
		return 0, false
	}
	return a.Corr(), true
}
