// Package targets holds the reference's own targets of the conformance
// kit: the deterministic simulator and a fresh local cluster of reference
// processes. A third party's build of conformance.Run, against its own
// Target, does not compile them.
package targets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/live"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/kafkaclient"
)

// Simulator is the deterministic simulated reference (conformance/sim).
var Simulator conformance.Target = simulator{}

type simulator struct{}

func (simulator) Name() string                           { return "sim" }
func (simulator) Parallel() bool                         { return true }
func (simulator) Capabilities() conformance.Capabilities { return conformance.AllCapabilities }
func (simulator) Run(_ context.Context, spec run.Spec) (*run.Result, error) {
	return sim.Run(spec)
}

// ClusterTarget runs every run on a fresh local cluster of reference
// processes (`watermark serve`, started by conformance/cluster): real
// files, real TCP, the Kafka protocol, and faults that are signals
// (SIGKILL, SIGSTOP) and proxy cuts. Runs take real time, so they go one
// at a time.
type ClusterTarget struct {
	// Binary is the watermark executable.
	Binary string
	// Dir keeps each run's cluster (data and logs) in a directory of its
	// own; a temporary directory if empty. A run that holds is removed.
	Dir string
	// DurationMs and SettleMs, when > 0, replace the cases' workload and
	// settle times (the simulator's 20 s + 10 s are long in real time).
	DurationMs, SettleMs int64
	// Progress, if set, hears about each run's time.
	Progress func(nowMs, endMs int64)
	Logf     func(format string, args ...any)
}

// Name implements Target.
func (t *ClusterTarget) Name() string { return "cluster" }

// ReplayArgs are the flags that give another check this target.
func (t *ClusterTarget) ReplayArgs() []string {
	return conformance.DurationArgs(t.DurationMs, t.SettleMs)
}

// Parallel implements Target.
func (t *ClusterTarget) Parallel() bool { return false }

// Capabilities implements Target: signals, a proxy on every link, and
// data directories of its own, all the live runner can use
// (live.Capabilities). Not failpoints: the processes have them
// (GO_FAILPOINTS), but the harness cannot switch them at an exact step of
// a run across processes; nor power loss or single messages struck.
func (t *ClusterTarget) Capabilities() conformance.Capabilities {
	return live.Capabilities
}

// Run implements Target.
func (t *ClusterTarget) Run(ctx context.Context, cfg run.Spec) (*run.Result, error) {
	if why := live.Unsupported(cfg); why != "" {
		return nil, &conformance.SkipError{Reason: why}
	}
	if t.DurationMs > 0 {
		cfg.DurationMs = t.DurationMs
	}
	if t.SettleMs > 0 {
		cfg.SettleMs = t.SettleMs
	}
	root := t.Dir
	if root == "" {
		root = os.TempDir()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, fmt.Sprintf("cluster-seed%d-", cfg.Seed))
	if err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{
		Binary:   t.Binary,
		Brokers:  cfg.Brokers,
		Dir:      dir,
		Settings: cfg.Settings,
		Proxies:  needsProxies(cfg),
		Logf:     t.Logf,
	})
	if err != nil {
		return nil, fmt.Errorf("start a cluster in %s: %w", dir, err)
	}
	defer func() { _ = c.Stop() }()
	cl, err := kafkaclient.NewClient(c.Bootstrap())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var own []*kafkaclient.Client
	defer func() {
		for _, o := range own {
			o.Close()
		}
	}()
	netFor := func(broker.NodeID) (live.Exchanger, error) {
		o, err := kafkaclient.NewClient(c.Bootstrap())
		if err == nil {
			own = append(own, o)
		}
		return o, err
	}
	res, err := live.Run(ctx, cfg, live.Options{Cluster: liveCluster{c, ctx}, Net: cl, NetFor: netFor, Progress: t.Progress})
	if err != nil {
		return nil, fmt.Errorf("run on the cluster in %s: %w", dir, err)
	}
	res.Dir = dir
	return res, nil
}

// needsProxies reports whether cfg cuts or slows links (its faults'
// definitions need Isolate or Slow: bounce-leader's isolations too).
func needsProxies(cfg run.Spec) bool {
	need := cfg.Needs()
	return need.Isolate || need.Slow
}

// liveCluster adapts a process cluster to what the live runner drives.
type liveCluster struct {
	c   *cluster.Cluster
	ctx context.Context
}

func (l liveCluster) Brokers() int             { return len(l.c.Bootstrap()) }
func (l liveCluster) Kill(id int) error        { return l.c.Kill(id) }
func (l liveCluster) ReplaceDisk(id int) error { return l.c.ReplaceDisk(id) }
func (l liveCluster) DamageLog(id int, tps []kafka.TopicPartition, n int, pick func([]byte) (int64, bool), clean bool) ([]string, error) {
	return l.c.DamageLog(id, tps, n, pick, clean)
}
func (l liveCluster) Stop(id int) error    { return l.c.Terminate(id, 0) }
func (l liveCluster) Pause(id int) error   { return l.c.Pause(id) }
func (l liveCluster) Resume(id int) error  { return l.c.Resume(id) }
func (l liveCluster) Isolate(id int) error { return l.c.Isolate(id) }
func (l liveCluster) Heal() error {
	if err := l.c.Heal(); err != nil && !errors.Is(err, cluster.ErrNoProxies) {
		return err
	}
	return nil
}
func (l liveCluster) SetLatency(id int, d time.Duration) error { return l.c.SetLatency(id, d) }

// How says how the cluster carries out a fault, for the run's notes.
func (l liveCluster) How(kind run.FaultKind, _ int) string {
	switch kind {
	case run.FaultCrash:
		return "SIGKILL"
	case run.FaultPause:
		return "SIGSTOP"
	case run.FaultStop:
		return "SIGTERM"
	}
	return "through its proxies"
}
func (l liveCluster) Restart(id int) error {
	ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
	defer cancel()
	return l.c.Restart(ctx, id)
}
