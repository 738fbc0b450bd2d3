package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/storage"
)

// ControllerConfig configures the controller process.
type ControllerConfig struct {
	Controller controller.Config
	// DataDir holds the controller's snapshot (controller.json).
	DataDir string
	// Listen is the address to listen on (default 127.0.0.1:0).
	Listen string
	// TickMs is the period of the controller's timer (default 10).
	TickMs int64
	// Secret is the cluster's shared secret (at least MinSecretBytes):
	// brokers prove they hold it before the controller reads a byte from
	// them (auth.go).
	Secret []byte
	Logf   func(format string, args ...any)
}

// snapshotFile is the controller's durable state in its data directory.
const snapshotFile = "controller.json"

// Controller is a running controller process.
//
// How it survives its own restart: after every step that changed its state
// (a registration, an election, an ISR change, a new topic) and before
// anything of that step is sent, it writes a snapshot of the state
// (topics, partition states with their epochs, broker incarnations and
// addresses) atomically to its data directory. A new process restores the
// snapshot, so no epoch is handed out twice and no restart of a broker is
// missed; each broker gets a full session timeout to be heard from, and
// is sent the full state at its first heartbeat, in case the previous
// process died between its snapshot and its sends. Brokers reconnect on
// their own: they dial the controller for every message.
type Controller struct {
	cfg   ControllerConfig
	ln    net.Listener
	disk  *storage.FileDisk
	node  *broker.ControllerNode
	tr    *transport
	saved []byte
	life

	inbox chan broker.Envelope

	mu    sync.Mutex
	conns map[net.Conn]bool
}

// StartController restores the controller's snapshot, if any, and serves.
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
	if cfg.DataDir == "" {
		return nil, errors.New("controller: no data directory: set one (--data-dir)")
	}
	if cfg.TickMs < 0 {
		return nil, fmt.Errorf("controller: tick %d ms: want > 0", cfg.TickMs)
	}
	disk, err := storage.NewFileDisk(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("controller: data directory: %w", err)
	}
	c := &Controller{
		cfg: cfg, disk: disk, life: newLife(),
		inbox: make(chan broker.Envelope, 8192),
		conns: map[net.Conn]bool{},
	}
	data, err := disk.ReadFile(snapshotFile)
	switch {
	case err == nil:
		var snap broker.ControllerSnapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return nil, fmt.Errorf("controller: %s in %s is corrupt (%v): fix it or start with an empty data directory", snapshotFile, cfg.DataDir, err)
		}
		if c.node, err = broker.RestoreControllerNode(cfg.Controller, snap, c.now()); err != nil {
			return nil, fmt.Errorf("controller: %s in %s: %w", snapshotFile, cfg.DataDir, err)
		}
		c.saved = data
		cfg.Logf("controller restored %d brokers and %d partitions from %s", len(snap.Controller.Brokers), len(snap.Controller.Partitions), snapshotFile)
	case isNotExist(err):
		if c.node, err = broker.NewControllerNode(cfg.Controller); err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
	default:
		return nil, fmt.Errorf("controller: %w", err)
	}
	if c.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("controller: listen: %w", err)
	}
	c.tr = newTransport(broker.ControllerID, 0, cfg.Secret, c.fromNetwork, cfg.Logf)
	go c.accept()
	go c.loop()
	cfg.Logf("controller listening on %s", c.ln.Addr())
	return c, nil
}

// Addr is the address the controller listens on.
func (c *Controller) Addr() string { return c.ln.Addr().String() }

func (c *Controller) fromNetwork(env broker.Envelope) {
	if env.To != broker.ControllerID {
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
		select {
		case <-c.stop:
			return
		case env := <-c.inbox:
			c.node.Handle(env, c.now())
		case <-tick.C:
			c.node.Tick(c.now())
		}
		if err := c.persist(); err != nil {
			c.cfg.Logf("controller: cannot save its state, stopping: %v", err)
			c.halt(err)
			return
		}
		for _, env := range c.node.TakeOutbox() {
			c.tr.send(env)
		}
		for _, e := range c.node.TakeEvents() {
			// Elections, ISR changes, registrations and session expiries:
			// what an operator reads first after a failure.
			c.cfg.Logf("controller: %s", e)
		}
	}
}

// persist writes the snapshot if the state changed since the last write.
func (c *Controller) persist() error {
	data, err := json.Marshal(c.node.Snapshot())
	if err != nil {
		return err
	}
	if bytes.Equal(data, c.saved) {
		return nil
	}
	if err := c.disk.WriteFileAtomic(snapshotFile, data); err != nil {
		return err
	}
	c.saved = data
	return nil
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
