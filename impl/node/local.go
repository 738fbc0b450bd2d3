package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
)

// LocalCluster is a controller and brokers in this process, on real TCP
// and real files: what tests and benchmarks use when they need the real
// network stack but not separate processes (conformance/cluster runs
// separate processes). Crash is Close: nothing is flushed or synced, and
// the page cache survives, as when a process is killed.
type LocalCluster struct {
	mu      sync.Mutex
	dir     string
	ctrl    *Controller
	brokers []*Broker // by id; [0] is nil
	cfgs    []BrokerConfig
}

// LocalOptions configure a LocalCluster.
type LocalOptions struct {
	Brokers int
	Dir     string
	// Broker returns broker id's settings (Broker.ID is set for you).
	Broker     func(id int) broker.Config
	Controller controller.Config
	Logf       func(format string, args ...any)
}

// StartLocalCluster starts the controller and the brokers and waits until
// every broker has registered.
func StartLocalCluster(opts LocalOptions) (*LocalCluster, error) {
	if opts.Brokers < 1 || opts.Brokers > maxBrokerID {
		return nil, fmt.Errorf("local cluster: %d brokers: want 1..%d", opts.Brokers, maxBrokerID)
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	lc := &LocalCluster{dir: opts.Dir, brokers: make([]*Broker, opts.Brokers+1), cfgs: make([]BrokerConfig, opts.Brokers+1)}
	var err error
	secret := NewSecret() // the cluster lives in this process, and so does its secret
	lc.ctrl, err = StartController(ControllerConfig{Controller: opts.Controller, DataDir: filepath.Join(opts.Dir, "controller"), Secret: secret, Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	for id := 1; id <= opts.Brokers; id++ {
		bc := opts.Broker(id)
		bc.ID = broker.NodeID(id)
		logf := opts.Logf
		lc.cfgs[id] = BrokerConfig{
			Secret:      secret,
			Broker:      bc,
			DataDir:     filepath.Join(opts.Dir, fmt.Sprint("broker-", id)),
			Controllers: []string{lc.ctrl.Addr()},
			Logf:        func(f string, a ...any) { logf("broker %d: "+f, append([]any{id}, a...)...) },
		}
		if err := lc.Restart(id); err != nil {
			lc.Close()
			return nil, err
		}
	}
	if err := lc.awaitRegistered(10 * time.Second); err != nil {
		lc.Close()
		return nil, err
	}
	if err := lc.awaitViews(10 * time.Second); err != nil {
		lc.Close()
		return nil, err
	}
	return lc, nil
}

// awaitViews waits until every broker's own metadata lists every broker
// live and addressed. A Kafka client's Metadata and CreateTopics are
// answered from the broker's view, which the controller updates only after
// the registrations it has already saved: without this wait, a topic of
// replication factor N created right after start was refused now and then
// (INVALID_REPLICATION_FACTOR, "3 with 2 live brokers").
func (lc *LocalCluster) awaitViews(d time.Duration) error {
	deadline := time.Now().Add(d)
	for id := 1; id < len(lc.brokers); id++ {
		b := lc.Broker(id)
		for !b.seesAll(len(lc.brokers) - 1) {
			if time.Now().After(deadline) {
				return fmt.Errorf("local cluster: broker %d does not see all %d brokers live within %v", id, len(lc.brokers)-1, d)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// seesAll reports whether n's own metadata lists n brokers live, each
// with an address.
func (n *Broker) seesAll(brokers int) bool {
	s := n.Open()
	defer s.Close()
	s.Send(n.ID(), broker.MetadataRequest{Correlation: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	env, err := s.Recv(ctx)
	if err != nil {
		return false
	}
	m, ok := env.Msg.(broker.MetadataResponse)
	if !ok || len(m.LiveBrokers) != brokers {
		return false
	}
	for _, id := range m.LiveBrokers {
		if m.Addresses[id] == "" {
			return false
		}
	}
	return true
}

func (lc *LocalCluster) awaitRegistered(d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		snap := lc.ctrlSnapshotLive()
		if snap == len(lc.brokers)-1 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("local cluster: brokers did not all register with the controller within 10 s")
}

// ctrlSnapshotLive counts the brokers whose address the controller's
// metadata holds.
func (lc *LocalCluster) ctrlSnapshotLive() int {
	addrs := lc.ctrl.Addresses()
	n := 0
	for id := 1; id < len(lc.brokers); id++ {
		if addrs[int32(id)] == lc.Addr(id) {
			n++
		}
	}
	return n
}

// Brokers is the number of brokers.
func (lc *LocalCluster) Brokers() int { return len(lc.brokers) - 1 }

// Addr is broker id's address (the same across restarts).
func (lc *LocalCluster) Addr(id int) string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.cfgs[id].Listen
}

// Bootstrap lists every broker's address.
func (lc *LocalCluster) Bootstrap() []string {
	var out []string
	for id := 1; id < len(lc.brokers); id++ {
		out = append(out, lc.Addr(id))
	}
	return out
}

// Broker returns the running process of broker id, nil while it is down.
func (lc *LocalCluster) Broker(id int) *Broker {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.brokers[id]
}

// Kill crashes broker id.
func (lc *LocalCluster) Kill(id int) error {
	lc.mu.Lock()
	b := lc.brokers[id]
	lc.brokers[id] = nil
	lc.mu.Unlock()
	if b == nil {
		return fmt.Errorf("broker %d is not running", id)
	}
	return b.Close()
}

// Restart starts broker id again on its address and data.
func (lc *LocalCluster) Restart(id int) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.brokers[id] != nil {
		return fmt.Errorf("broker %d is running", id)
	}
	var b *Broker
	var err error
	// The port of a killed broker can take a moment to be free again.
	for try := 0; try < 50; try++ {
		if b, err = StartBroker(lc.cfgs[id]); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	lc.brokers[id] = b
	lc.cfgs[id].Listen = b.Addr()
	return nil
}

// Pause is not possible within one process.
func (lc *LocalCluster) Pause(int) error { return errInProcess }

// Resume is not possible within one process.
func (lc *LocalCluster) Resume(int) error { return errInProcess }

// Isolate is not possible without proxies.
func (lc *LocalCluster) Isolate(int) error { return errInProcess }

// Heal has nothing to heal.
func (lc *LocalCluster) Heal() error { return nil }

// SetLatency is not possible without proxies.
func (lc *LocalCluster) SetLatency(int, time.Duration) error { return errInProcess }

var errInProcess = errors.New("not possible in an in-process cluster: use conformance/cluster")

// Close stops every node.
func (lc *LocalCluster) Close() {
	lc.mu.Lock()
	bs := lc.brokers
	lc.mu.Unlock()
	for _, b := range bs {
		if b != nil {
			_ = b.Close()
		}
	}
	_ = lc.ctrl.Close()
}
