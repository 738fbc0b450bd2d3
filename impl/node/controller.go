package node

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/quorum"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/impl/storage"
)

// ControllerConfig configures one controller process: a voter of the
// controller quorum (impl/quorum).
type ControllerConfig struct {
	Controller controller.Config
	// Quorum is the quorum's settings; the zero value is one voter with
	// KRaft's timing (settings.DefaultQuorum).
	Quorum settings.Quorum
	// Voter is this process's voter number, 1 to Quorum.Voters (0: 1).
	Voter int
	// Voters maps every other voter's number to its address
	// (controller.quorum.voters, less this one).
	Voters map[int]string
	// DataDir holds the controller's metadata log (impl/quorum).
	DataDir string
	// Listen is the address to listen on (default 127.0.0.1:0).
	Listen string
	// TickMs is the period of the controller's timer (default 10).
	TickMs int64
	// Secret is the cluster's shared secret (at least MinSecretBytes):
	// brokers and voters prove they hold it before the controller reads
	// a byte from them (auth.go).
	Secret []byte
	Logf   func(format string, args ...any)
}

// legacySnapshot is where a controller of an earlier watermark, before
// the quorum, kept its state.
const legacySnapshot = "controller.json"

// Controller is a running controller process: one voter of the quorum.
//
// How it survives its own restart: the metadata log and its snapshots are
// on disk, synced before anything is sent (impl/quorum); a new process
// reads them and catches up from the other voters. Brokers reconnect on
// their own: they dial the controller for every message.
type Controller struct {
	cfg  ControllerConfig
	ln   net.Listener
	node *quorum.Node
	tr   *transport
	life

	inbox chan broker.Envelope

	mu    sync.Mutex
	conns map[net.Conn]bool
	addrs map[int32]string // the brokers' addresses the metadata holds
}

// Addresses returns the brokers' addresses as the controller's metadata
// holds them (registrations committed to its log).
func (c *Controller) Addresses() map[int32]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.addrs)
}

// StartController opens the voter's metadata log and serves.
func StartController(cfg ControllerConfig) (*Controller, error) {
	if err := checkSecret(cfg.Secret); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
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
	if cfg.Quorum == (settings.Quorum{}) {
		cfg.Quorum = settings.DefaultQuorum()
	}
	if cfg.Voter == 0 {
		cfg.Voter = 1
	}
	if cfg.DataDir == "" {
		return nil, errors.New("controller: no data directory: set one (--data-dir)")
	}
	if cfg.TickMs < 0 {
		return nil, fmt.Errorf("controller: tick %d ms: want > 0", cfg.TickMs)
	}
	for v := 1; v <= cfg.Quorum.Voters; v++ {
		if _, ok := cfg.Voters[v]; !ok && v != cfg.Voter {
			return nil, fmt.Errorf("controller %d: no address for voter %d: list every voter (controller.quorum.voters)", cfg.Voter, v)
		}
	}
	disk, err := storage.NewFileDisk(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("controller: data directory: %w", err)
	}
	if _, err := disk.ReadFile(legacySnapshot); err == nil {
		return nil, fmt.Errorf("controller: %s holds %s, the state of a controller from before the quorum: start with an empty data directory", cfg.DataDir, legacySnapshot)
	}
	c := &Controller{
		cfg: cfg, life: newLife(),
		inbox: make(chan broker.Envelope, 8192),
		conns: map[net.Conn]bool{},
	}
	seed := uint64(time.Now().UnixNano())
	if c.node, err = quorum.Open(quorum.Config{Voter: cfg.Voter, Quorum: cfg.Quorum, Controller: cfg.Controller, Seed: seed}, disk, c.now()); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if c.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("controller: listen: %w", err)
	}
	c.tr = newTransport(c.node.ID(), 0, cfg.Secret, c.fromNetwork, cfg.Logf)
	for v, addr := range cfg.Voters {
		c.tr.setAddr(broker.VoterNode(v), addr)
	}
	go c.accept()
	go c.loop()
	cfg.Logf("controller %d of %d listening on %s", cfg.Voter, cfg.Quorum.Voters, c.ln.Addr())
	return c, nil
}

// Addr is the address the controller listens on.
func (c *Controller) Addr() string { return c.ln.Addr().String() }

func (c *Controller) fromNetwork(env broker.Envelope) {
	if env.To != c.node.ID() {
		return
	}
	select {
	case c.inbox <- env:
	case <-c.stop:
	}
}

func (c *Controller) loop() {
	defer c.shutdown()
	tick := time.NewTicker(time.Duration(c.cfg.TickMs) * time.Millisecond)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-c.stop:
			return
		case env := <-c.inbox:
			err = c.node.Handle(env, c.now())
		case <-tick.C:
			err = c.node.Tick(c.now())
		}
		for _, e := range c.node.TakeEvents() {
			// Elections, ISR changes, registrations and session expiries:
			// what an operator reads first after a failure.
			if line := e.String(); line != "" {
				c.cfg.Logf("%s", line)
			}
		}
		if err != nil {
			c.cfg.Logf("controller: stopping: %v", err)
			c.halt(err)
			return
		}
		for _, env := range c.node.TakeOutbox() {
			c.tr.send(env)
		}
		addrs := c.node.Image().Addresses()
		c.mu.Lock()
		c.addrs = addrs
		c.mu.Unlock()
	}
}

func (c *Controller) accept() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		select {
		case <-c.stop:
			c.mu.Unlock()
			_ = conn.Close()
			return
		default:
		}
		c.conns[conn] = true
		c.mu.Unlock()
		go func() {
			defer func() {
				c.mu.Lock()
				delete(c.conns, conn)
				c.mu.Unlock()
				_ = conn.Close()
			}()
			r := bufio.NewReader(conn)
			internal, err := peekMagic(conn, r)
			if err != nil {
				return
			}
			if !internal {
				c.cfg.Logf("controller: connection from %s is not a broker (Kafka clients talk to brokers); closing it", conn.RemoteAddr())
				return
			}
			c.tr.accept(conn, r)
		}()
	}
}

func (c *Controller) shutdown() {
	_ = c.ln.Close()
	c.tr.close()
	c.mu.Lock()
	for conn := range c.conns {
		_ = conn.Close()
	}
	c.mu.Unlock()
	close(c.done)
}
