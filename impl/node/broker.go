// Package node runs the reference implementation as real processes: a
// broker (impl/broker's state machine behind the Kafka wire protocol of
// impl/kafkawire) or the controller, on a real clock, real files and real
// TCP. It is the one place where goroutines, sockets and time meet the pure
// state machines, and it adds no protocol logic of its own: every decision
// is the state machine's, exactly as in the simulator.
//
// One loop goroutine per process owns the state machine. Messages (from
// client connections and from other nodes) and clock ticks are fed to it in
// the order they arrive; what it sends goes out through the transport
// (internal connections) or to the client session it is addressed to.
//
// A single TCP port serves both Kafka clients and the other nodes: an
// internal connection opens with Magic, a Kafka connection with a request
// size, and the first four bytes tell them apart.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/failpoint"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafkawire"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// BrokerConfig configures one broker process.
type BrokerConfig struct {
	// Broker holds the id and the protocol settings (spec/SEMANTICS.md).
	// Broker.Address, the address clients are told, defaults to Advertised.
	Broker broker.Config
	// DataDir holds the partition logs and checkpoints.
	DataDir string
	// Listen is the address to listen on (default 127.0.0.1:0, any port).
	Listen string
	// Advertised is the address clients and other brokers dial for this
	// broker (default: the listener's address). A harness that puts a
	// proxy in front of the broker advertises the proxy.
	Advertised string
	// Controllers are the quorum's voters' addresses, voter 1 first
	// (controller.quorum.voters); Broker.Voters is set from their count.
	Controllers []string
	// Routes overrides where this broker dials other brokers (by id): a
	// harness routes each broker-to-broker link through its own proxy, so
	// that links can be cut one by one.
	Routes map[int32]string
	// TickMs is the period of the broker's timer (default 10).
	TickMs int64
	// MaxRequestBytes bounds a Kafka request (default 100 MiB).
	MaxRequestBytes int32
	// Secret is the cluster's shared secret (at least MinSecretBytes): the
	// controller and other brokers prove they hold it before a byte of
	// theirs is decoded (auth.go).
	Secret []byte
	// MaxConnections bounds the connections the broker holds open at once,
	// clients and peers (Kafka's max.connections; default
	// DefaultMaxConnections): past it a new connection is closed at once.
	MaxConnections int
	// IdleTimeout and RequestReadTimeout close idle client connections and
	// ones whose request does not all arrive (kafkawire.Server; 0: its
	// defaults, 10 min and 30 s).
	IdleTimeout, RequestReadTimeout time.Duration
	// Failpoints lets failpoints fire in this broker (when the binary was
	// built with them, see failpoints/README.md). Off by default, so that
	// brokers sharing a test process do not all fire one failpoint.
	Failpoints bool
	// Logf receives the broker's log lines; nil discards them.
	Logf func(format string, args ...any)
}

// DefaultMaxConnections bounds a broker's open connections when
// BrokerConfig.MaxConnections is 0. Kafka's max.connections is unbounded;
// a reference broker under test needs far fewer than this, and a bound
// keeps a flood of connections from exhausting its memory.
const DefaultMaxConnections = 4096

// maxBrokerID: incarnations keep the broker id in their low bits.
const maxBrokerID = 1<<incarnationIDBits - 1

const incarnationIDBits = 10

// Broker is a running broker process.
type Broker struct {
	cfg  BrokerConfig
	ln   net.Listener
	disk *trackingDisk
	b    *broker.Broker
	tr   *transport
	wire *kafkawire.Server
	// ctrl is the voter the broker follows (route stores it after each
	// step): where a session's CreateTopic goes.
	ctrl atomic.Int32
	life

	inbox chan broker.Envelope
	// stopAsked carries Stop's request to the loop, once.
	stopAsked chan struct{}
	stopOnce  sync.Once

	mu       sync.Mutex
	sessions map[broker.NodeID]*session
	nextSess int32
	conns    map[net.Conn]bool
}

// ErrClosed is what Err reports after Close.
var ErrClosed = errors.New("broker closed")

// StartBroker opens the broker's data, listens, registers with the
// controller and serves until Close or a failpoint stops it.
func StartBroker(cfg BrokerConfig) (*Broker, error) {
	if err := checkSecret(cfg.Secret); err != nil {
		return nil, fmt.Errorf("broker %d: %w", cfg.Broker.ID, err)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.TickMs == 0 {
		cfg.TickMs = 10
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	id := cfg.Broker.ID
	switch {
	case id <= 0 || id > maxBrokerID:
		return nil, fmt.Errorf("broker id %d out of range: want 1..%d", id, maxBrokerID)
	case cfg.DataDir == "":
		return nil, fmt.Errorf("broker %d: no data directory: set one (--data-dir)", id)
	case len(cfg.Controllers) == 0 || slices.Contains(cfg.Controllers, ""):
		return nil, fmt.Errorf("broker %d: no controller address: list the quorum's voters (--controller host:port,...)", id)
	case cfg.TickMs < 0:
		return nil, fmt.Errorf("broker %d: tick %d ms: want > 0", id, cfg.TickMs)
	}
	disk, err := newTrackingDisk(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("broker %d: data directory: %w", id, err)
	}
	inc, err := nextIncarnation(disk, id)
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", id, err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("broker %d: listen: %w", id, err)
	}
	if cfg.Advertised == "" {
		cfg.Advertised = ln.Addr().String()
	}
	if cfg.Broker.Address == "" {
		cfg.Broker.Address = cfg.Advertised
	}
	cfg.Broker.Voters = len(cfg.Controllers)
	var fpctx context.Context
	if cfg.Failpoints {
		fpctx = failpoint.WithHook(context.Background(), func(context.Context, string) bool { return true })
	}
	n := &Broker{
		cfg: cfg, ln: ln, disk: disk, life: newLife(),
		inbox:     make(chan broker.Envelope, 8192),
		stopAsked: make(chan struct{}),
		sessions:  map[broker.NodeID]*session{},
		conns:     map[net.Conn]bool{},
	}
	n.b, err = broker.Open(cfg.Broker, disk, inc, n.now(), fpctx)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	n.tr = newTransport(id, inc, cfg.Secret, n.fromNetwork, cfg.Logf)
	for i, addr := range cfg.Controllers {
		n.tr.setAddr(broker.VoterNode(i+1), addr)
	}
	for peer, addr := range cfg.Routes {
		n.tr.setAddr(broker.NodeID(peer), addr)
	}
	n.wire = &kafkawire.Server{Backend: n, MaxRequestBytes: cfg.MaxRequestBytes,
		IdleTimeout: cfg.IdleTimeout, RequestReadTimeout: cfg.RequestReadTimeout, Logf: cfg.Logf}
	n.logEvents(n.b.TakeEvents())
	n.route(n.b.TakeOutbox())
	go n.accept()
	go n.loop()
	cfg.Logf("broker %d (incarnation %d) listening on %s, advertised %s", id, inc, ln.Addr(), cfg.Advertised)
	return n, nil
}

// nextIncarnation counts the broker's starts in a durable file: the
// incarnation is the count with the broker id in the low bits, so it grows
// with every start (the controller tells a restart by it) and no two
// brokers ever share one (producer ids are built on it).
func nextIncarnation(d storage.Disk, id broker.NodeID) (int64, error) {
	const name = "incarnation"
	var starts int64
	data, err := d.ReadFile(name)
	switch {
	case err == nil:
		if starts, err = strconv.ParseInt(string(data), 10, 64); err != nil || starts < 0 {
			return 0, fmt.Errorf("corrupt %s file %q: remove the data directory or fix it", name, data)
		}
	case !errors.Is(err, io.EOF) && !isNotExist(err):
		return 0, err
	}
	starts++
	if err := d.WriteFileAtomic(name, []byte(strconv.FormatInt(starts, 10))); err != nil {
		return 0, err
	}
	return starts<<incarnationIDBits | int64(id), nil
}

// Addr is the address the broker listens on.
func (n *Broker) Addr() string { return n.ln.Addr().String() }

// ID is the broker's id.
func (n *Broker) ID() broker.NodeID { return n.cfg.Broker.ID }

// Incarnation is this process's incarnation.
func (n *Broker) Incarnation() int64 { return n.b.Incarnation() }

// fromNetwork takes what the transport delivers: messages for the broker
// go to its loop, answers for a client session go to the session.
func (n *Broker) fromNetwork(env broker.Envelope) {
	if u, ok := env.Msg.(broker.StateUpdate); ok && env.From.Voter() != 0 {
		for id, addr := range u.Addresses {
			if _, routed := n.cfg.Routes[id]; !routed && broker.NodeID(id) != n.ID() {
				n.tr.setAddr(broker.NodeID(id), addr)
			}
		}
	}
	if env.To == n.ID() {
		select {
		case n.inbox <- env:
		case <-n.stop:
		}
		return
	}
	if s := n.session(env.To); s != nil {
		s.put(env)
	}
}

func (n *Broker) session(id broker.NodeID) *session {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sessions[id]
}

func (n *Broker) loop() {
	defer n.shutdown()
	tick := time.NewTicker(time.Duration(n.cfg.TickMs) * time.Millisecond)
	defer tick.Stop()
	stopAsked := n.stopAsked
	for {
		var err error
		select {
		case <-n.stop:
			return
		case <-stopAsked:
			stopAsked = nil
			n.cfg.Logf("stopping: controlled shutdown: asking the controller to move this broker's leaderships (at most %d ms)", n.cfg.Broker.ControlledShutdownTimeoutMs)
			n.b.BeginShutdown(n.now())
		case env := <-n.inbox:
			err = n.b.Handle(env, n.now())
		case <-tick.C:
			err = n.b.Tick(n.now())
		}
		for _, f := range n.b.TakeFaults() {
			n.cfg.Logf("failpoint %s fired here for broker %d: %s; a process acts only on itself, so it is ignored (the harness crashes other processes)", f.Name, f.Target, f.Action)
		}
		n.logEvents(n.b.TakeEvents())
		if err != nil && !n.failed(err) {
			return
		}
		n.route(n.b.TakeOutbox())
		if n.b.ShuttingDown() && (n.b.ShutdownApproved() || n.b.ShutdownOverdue()) {
			n.finishStop()
			return
		}
	}
}

// ErrStopped is what Err reports after a clean stop (Stop): every log
// flushed and the clean-shutdown marker written.
var ErrStopped = errors.New("broker stopped cleanly")

// ErrStoppedUncleanly is what Err reports after a Stop whose flush or
// marker failed: the next start is an unclean one.
var ErrStoppedUncleanly = errors.New("broker stopped uncleanly")

// Stop stops the broker the way SIGTERM stops a Kafka broker: a
// controlled shutdown (the controller moves its leaderships and takes it
// out of the ISRs; the broker waits for that at most
// controlled_shutdown_timeout_ms, then goes on without it, as Kafka
// does), then every log flushed and checkpointed and the clean-shutdown
// marker written (broker.Shutdown). It returns once the broker is down;
// Err says whether the stop was clean. Close during a Stop abandons it:
// an unclean stop, as a second SIGTERM makes it.
func (n *Broker) Stop() error {
	n.stopOnce.Do(func() { close(n.stopAsked) })
	<-n.done
	return nil
}

// finishStop ends a Stop from the loop: flush, checkpoint and mark.
func (n *Broker) finishStop() {
	if !n.b.ShutdownApproved() {
		n.cfg.Logf("WARNING: controlled shutdown timed out: the controller did not move this broker's leaderships within %d ms; stopping without it (the partitions it leads go offline until the controller notices)", n.cfg.Broker.ControlledShutdownTimeoutMs)
	}
	err := n.b.Shutdown()
	n.logEvents(n.b.TakeEvents())
	if fe := (*broker.FailpointError)(nil); errors.As(err, &fe) && fe.Name != "storage" {
		n.failed(err) // a failpoint set in the shutdown path
		return
	}
	if err != nil {
		n.cfg.Logf("WARNING: clean shutdown failed: %v; stopping uncleanly", err)
		n.halt(fmt.Errorf("%w: %v", ErrStoppedUncleanly, err))
		return
	}
	n.cfg.Logf("stopped cleanly")
	n.halt(ErrStopped)
}

// logEvents logs what the broker did worth an operator's eye: roles taken,
// truncations, ISR changes, fencing, recoveries, group changes; a damaged
// file worked around is a WARNING. HW moves are too many to log.
func (n *Broker) logEvents(events []broker.Event) {
	for _, e := range events {
		switch e.Kind {
		case partition.EventHWAdvanced.String():
		case "warning":
			n.cfg.Logf("WARNING: %s", e)
		default:
			n.cfg.Logf("%s", e)
		}
	}
}

// failed carries out a failpoint (or storage failure) and reports whether
// the broker goes on.
func (n *Broker) failed(err error) bool {
	var fe *broker.FailpointError
	if !errors.As(err, &fe) {
		n.halt(err)
		return false
	}
	switch fe.Action {
	case broker.ActionPause:
		d := time.Duration(fe.ForMs) * time.Millisecond
		if d <= 0 {
			d = time.Second
		}
		n.cfg.Logf("failpoint %s: pausing %v", fe.Name, d)
		select {
		case <-time.After(d):
			return true
		case <-n.stop:
			return false
		}
	case broker.ActionPowerLoss, broker.ActionPowerLossWorst:
		n.cfg.Logf("failpoint %s: power loss: dropping unsynced writes", fe.Name)
		if derr := n.disk.dropUnsynced(); derr != nil {
			n.cfg.Logf("power loss: %v", derr)
		}
	default:
		n.cfg.Logf("failpoint %s: %s", fe.Name, fe.Action)
	}
	n.halt(fe)
	return false
}

// route sends the broker's outbox: to sessions in this process or over
// the transport.
// controller is the voter the broker follows, as of its last step.
func (n *Broker) controller() broker.NodeID { return broker.NodeID(n.ctrl.Load()) }

func (n *Broker) route(out []broker.Envelope) {
	n.ctrl.Store(int32(n.b.Controller()))
	for _, env := range out {
		if env.To >= broker.ClientIDBase {
			if s := n.session(env.To); s != nil {
				s.put(env)
				continue
			}
		}
		n.tr.send(env)
	}
}
