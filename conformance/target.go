package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/live"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/kafkaclient"
)

// Target is a system the cases run against: it carries out one run's
// configuration and reports what the clients saw.
type Target interface {
	// Name names the target in reports and replay commands.
	Name() string
	// Run carries out spec. A run the target cannot do returns a
	// *SkipError saying why: it is reported as skipped, never as passed.
	Run(ctx context.Context, spec run.Spec) (*run.Result, error)
	// Parallel reports whether runs may overlap.
	Parallel() bool
	// Capabilities are the faults the target can inject. A case that
	// needs one it lacks is skipped, with the reason, before it runs.
	Capabilities() Capabilities
}

// Capabilities are the broker faults a target can inject. Faults on the
// client side (lost answers, crashed consumers, restarted producers) need
// none: the harness does them itself.
type Capabilities struct {
	Crash   bool // kill a broker and restart it on its data
	Pause   bool // stop a broker and let it go on (SIGSTOP/SIGCONT)
	Isolate bool // cut a broker off from the other brokers and the clients, and heal
	Slow    bool // add latency to a broker's links
	// ReplaceDisk: kill a broker, empty its data directory, and restart it.
	ReplaceDisk bool
	// Stop: stop a broker as an operator does (SIGTERM: a controlled
	// shutdown, a flush, a clean-shutdown marker) and restart it.
	Stop bool
	// Failpoints: switch the reference broker's failpoints at exact
	// protocol steps, across brokers. Only the simulator can: it runs
	// every broker in one process and steps them one message at a time.
	Failpoints bool
}

// AllCapabilities is every capability: what the simulator offers.
var AllCapabilities = Capabilities{Crash: true, Pause: true, Isolate: true, Slow: true, ReplaceDisk: true, Stop: true, Failpoints: true}

// missing names the capabilities cfg's faults need and have does not
// offer, with how to get each where that helps; "" when none is missing.
func missing(cfg run.Spec, have Capabilities) string {
	var need []string
	add := func(ok bool, what string) {
		if !ok && !slices.Contains(need, what) {
			need = append(need, what)
		}
	}
	for _, f := range cfg.Faults {
		if f.Kind == run.FaultDamageLog && f.Clean {
			add(have.Stop, "stopping brokers cleanly (--stop-cmd and --restart-cmd, or a Stopper)")
		}
	}
	for _, k := range cfg.Kinds() {
		switch k {
		case run.FaultCrash:
			add(have.Crash, "crashing brokers (--kill-cmd and --restart-cmd, or a Crasher)")
		case run.FaultReplaceDisk, run.FaultDamageLog:
			add(have.ReplaceDisk, "replacing or damaging a broker's disk (a Cluster that owns its data directories: --target cluster or the simulator)")
		case run.FaultStop, run.FaultRollingStop:
			add(have.Stop, "stopping brokers cleanly (--stop-cmd and --restart-cmd, or a Stopper)")
		case run.FaultBounceLeader:
			add(have.Crash, "crashing brokers (--kill-cmd and --restart-cmd, or a Crasher)")
			add(have.Isolate, "isolating brokers (--isolate-cmd and --heal-cmd, or an Isolator)")
		case run.FaultPause:
			add(have.Pause, "pausing brokers (--pause-cmd and --resume-cmd, or a Pauser)")
		case run.FaultIsolate, run.FaultHeal:
			add(have.Isolate, "isolating brokers (--isolate-cmd and --heal-cmd, or an Isolator)")
		case run.FaultSlow:
			add(have.Slow, "slowing brokers' links")
		}
	}
	if len(cfg.Failpoints) > 0 {
		add(have.Failpoints, "switching failpoints at exact protocol steps (only the simulator can: --target sim)")
	}
	if len(need) == 0 {
		return ""
	}
	return "needs " + strings.Join(need, ", ") + ", which this target does not offer"
}

// SkipError is a run a target cannot carry out, and why.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// Simulator is the deterministic simulated reference (conformance/sim).
var Simulator Target = simulator{}

type simulator struct{}

func (simulator) Name() string               { return "sim" }
func (simulator) Parallel() bool             { return true }
func (simulator) Capabilities() Capabilities { return AllCapabilities }
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
func (t *ClusterTarget) ReplayArgs() []string { return durationArgs(t.DurationMs, t.SettleMs) }

// durationArgs are --duration and --settle for the times given.
func durationArgs(durationMs, settleMs int64) []string {
	var args []string
	if durationMs > 0 {
		args = append(args, fmt.Sprintf("--duration=%dms", durationMs))
	}
	if settleMs > 0 {
		args = append(args, fmt.Sprintf("--settle=%dms", settleMs))
	}
	return args
}

// Parallel implements Target.
func (t *ClusterTarget) Parallel() bool { return false }

// Capabilities implements Target: signals, and a proxy on every link.
// Not failpoints: the processes have them (GO_FAILPOINTS), but the
// harness cannot switch them at an exact step of a run across processes.
// What else real processes cannot do (power loss, dropping single
// messages) Run reports as a *SkipError.
func (t *ClusterTarget) Capabilities() Capabilities {
	return Capabilities{Crash: true, Pause: true, Isolate: true, Slow: true, ReplaceDisk: true, Stop: true}
}

// Run implements Target.
func (t *ClusterTarget) Run(ctx context.Context, cfg run.Spec) (*run.Result, error) {
	if why := live.Unsupported(cfg); why != "" {
		return nil, &SkipError{Reason: why}
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

// needsProxies reports whether cfg cuts or slows links.
func needsProxies(cfg run.Spec) bool {
	kinds := cfg.Kinds()
	return slices.Contains(kinds, run.FaultIsolate) || slices.Contains(kinds, run.FaultSlow) || slices.Contains(kinds, run.FaultHeal)
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
