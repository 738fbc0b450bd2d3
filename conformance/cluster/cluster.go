// Package cluster runs the reference broker as a real local cluster: one
// `watermark serve` process per broker plus one for the controller, on
// loopback TCP, with on-disk data. It is what the harness and `watermark
// cluster` use to put real Kafka clients against the reference broker and
// to inject real faults: SIGKILL and restart, SIGSTOP/SIGCONT, and (with
// Options.Proxies) cut or slowed network links through a TCP proxy on
// every link.
//
// Node ids: brokers are 1..N; the controller is not a broker and has its
// own methods (KillController, RestartController).
//
// The package needs a Unix system (process groups and signals).
package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance/run"
)

// Options configure a cluster.
type Options struct {
	// Binary is the watermark executable that runs each node
	// (`Binary serve ...`). Required.
	Binary string
	// Brokers is how many brokers to run (ids 1..Brokers).
	Brokers int
	// Dir holds each node's data directory and log file; a new temporary
	// directory if empty. Stop leaves it in place: see Cluster.Dir.
	Dir string
	// Settings are the protocol settings of every node, passed to each
	// process as `watermark serve` flags (run.Args).
	Settings run.Settings
	// Env is extra environment (KEY=VALUE) for every broker process, for
	// example GO_FAILPOINTS. Cluster.Env adds more for one broker.
	Env []string
	// FailpointHTTP gives each broker pingcap/failpoint's HTTP endpoint on
	// a port of its own (see FailpointAddr), to switch failpoints on and
	// off while the cluster runs.
	FailpointHTTP bool
	// Proxies puts a TCP proxy on every link: one in front of each broker
	// for clients (the broker advertises it), one for each ordered pair of
	// brokers, and one for each broker's link to the controller. Without
	// it, Cut, Isolate, Heal and SetLatency return ErrNoProxies.
	Proxies bool
	// StartTimeout bounds each node's start and the wait until every
	// broker is registered (default 30s).
	StartTimeout time.Duration
	// StopGrace is how long Stop and Terminate wait after SIGTERM before
	// SIGKILL (default 20s: a broker's controlled shutdown waits for its
	// peers' heartbeats).
	StopGrace time.Duration
	// OnExit is called (from another goroutine) when a node process ends
	// without the cluster ending it: a crash, a failpoint, a bug.
	OnExit func(Exit)
	// Logf receives the cluster's own log lines (starts, faults); nil
	// discards them. Each node's output goes to its log file (LogPath).
	Logf func(format string, args ...any)
}

// ErrNoProxies is returned by the network faults of a cluster started
// without Options.Proxies.
var ErrNoProxies = errors.New("network faults need proxies: start the cluster with Options.Proxies")

// Cluster is a running local cluster.
type Cluster struct {
	opts Options
	// up is set once Start has the whole cluster running: a node that
	// dies in an attempt Start gives up on (a port taken) is that
	// attempt's error, not an exit OnExit reports.
	up         atomic.Bool
	dir        string
	controller *process
	brokers    map[int]*process
	listen     map[int]string // broker id -> address the process listens on
	advertised map[int]string // broker id -> address clients dial
	fpAddr     map[int]string

	// With proxies: the client proxy of each broker, its controller link,
	// and the link from broker a to broker b at links[[2]int{a, b}].
	clientProxy map[int]*Proxy
	ctrlProxy   map[int]*Proxy
	links       map[[2]int]*Proxy

	stopOnce sync.Once
	stopErr  error
}

// Start starts the controller, then the brokers, and returns once every
// broker has registered (a Metadata request lists them all). On error
// everything started is stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Binary == "" {
		return nil, errors.New("cluster: no Binary: set it to a watermark executable (os.Executable() in the CLI, `go build ./tools/watermark` in tests)")
	}
	if opts.Brokers < 1 {
		return nil, fmt.Errorf("cluster: %d brokers: want at least 1", opts.Brokers)
	}
	if rf := opts.Settings.Broker.OffsetsTopicReplicationFactor; rf > opts.Brokers {
		// A smaller cluster could never have a group coordinator; Kafka
		// asks the operator to lower offsets.topic.replication.factor,
		// a local cluster does it for them.
		opts.Settings.Broker.OffsetsTopicReplicationFactor = opts.Brokers
	}
	if err := opts.Settings.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 20 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "watermark-cluster-")
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		dir = d
	}
	// Ports are picked free up front (so that a restarted node keeps its
	// address), and another process can take one before the node binds
	// it. Then the whole cluster starts again, on new ports, in a
	// directory of its own.
	for attempt := 1; ; attempt++ {
		c := &Cluster{
			opts: opts, dir: dir,
			brokers: map[int]*process{}, listen: map[int]string{}, advertised: map[int]string{}, fpAddr: map[int]string{},
			clientProxy: map[int]*Proxy{}, ctrlProxy: map[int]*Proxy{}, links: map[[2]int]*Proxy{},
		}
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		err := c.start(ctx)
		if err == nil {
			c.up.Store(true)
			return c, nil
		}
		_ = c.Stop()
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
		opts.Logf("cluster: a port was taken before a node could bind it; starting again on new ports")
		dir = filepath.Join(opts.Dir, fmt.Sprintf("retry-%d", attempt))
		if opts.Dir == "" {
			dir = filepath.Join(c.dir, fmt.Sprintf("retry-%d", attempt))
		}
	}
}

func (c *Cluster) start(ctx context.Context) error {
	ctrlAddr, err := pickAddr()
	if err != nil {
		return err
	}
	secret, err := writeSecret(c.dir)
	if err != nil {
		return err
	}
	c.controller = c.newProcess("controller", 0, append([]string{
		"--role=controller",
		"--listen=" + ctrlAddr,
		"--data-dir=" + filepath.Join(c.dir, "controller"),
		"--cluster-secret-file=" + secret,
		"--verbose",
		// The controller keeps eligible leader replicas by the brokers'
		// min.insync.replicas, sound only while their HW waits for it: it
		// must run with the brokers' own.
		"--min-insync-replicas=" + strconv.Itoa(c.opts.Settings.Broker.MinInsyncReplicas),
		"--advance-hw-below-min-isr=" + strconv.FormatBool(c.opts.Settings.Broker.AdvanceHWBelowMinISR),
	}, append(run.Args(&c.opts.Settings.Controller), run.Args(&c.opts.Settings.Quorum)...)...))

	n := c.opts.Brokers
	for id := 1; id <= n; id++ {
		if c.listen[id], err = pickAddr(); err != nil {
			return err
		}
		c.advertised[id] = c.listen[id]
		if c.opts.FailpointHTTP {
			if c.fpAddr[id], err = pickAddr(); err != nil {
				return err
			}
		}
	}
	ctrlFor := map[int]string{}
	routes := map[int][]string{}
	for id := 1; id <= n; id++ {
		ctrlFor[id] = ctrlAddr
	}
	if c.opts.Proxies {
		for id := 1; id <= n; id++ {
			if c.clientProxy[id], err = NewProxy("127.0.0.1:0", c.listen[id]); err != nil {
				return fmt.Errorf("cluster: proxy: %w", err)
			}
			c.advertised[id] = c.clientProxy[id].Addr()
			if c.ctrlProxy[id], err = NewProxy("127.0.0.1:0", ctrlAddr); err != nil {
				return fmt.Errorf("cluster: proxy: %w", err)
			}
			ctrlFor[id] = c.ctrlProxy[id].Addr()
			for to := 1; to <= n; to++ {
				if to == id {
					continue
				}
				px, err := NewProxy("127.0.0.1:0", c.listen[to])
				if err != nil {
					return fmt.Errorf("cluster: proxy: %w", err)
				}
				c.links[[2]int{id, to}] = px
				routes[id] = append(routes[id], fmt.Sprintf("--route=%d=%s", to, px.Addr()))
			}
		}
	}
	for id := 1; id <= n; id++ {
		args := []string{
			"--role=broker",
			"--id=" + strconv.Itoa(id),
			"--listen=" + c.listen[id],
			"--advertised=" + c.advertised[id],
			"--data-dir=" + filepath.Join(c.dir, fmt.Sprintf("broker-%d", id)),
			"--controller=" + ctrlFor[id],
			"--cluster-secret-file=" + secret,
			"--verbose",
		}
		args = append(args, routes[id]...)
		if a := c.fpAddr[id]; a != "" {
			args = append(args, "--failpoint-http="+a)
		}
		c.brokers[id] = c.newProcess(fmt.Sprintf("broker %d", id), id, append(args, run.Args(&c.opts.Settings.Broker)...))
		c.brokers[id].env = append([]string(nil), c.opts.Env...)
	}

	if err := c.controller.start(ctx, c.opts.StartTimeout); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c.opts.Logf("controller listening on %s", ctrlAddr)
	// Start the brokers side by side: each start is mostly waiting.
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for id := 1; id <= n; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[id] = c.brokers[id].start(ctx, c.opts.StartTimeout)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for id := 1; id <= n; id++ {
		c.opts.Logf("broker %d listening on %s, advertised %s", id, c.listen[id], c.advertised[id])
	}
	wctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := c.WaitReady(wctx); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	// A node counts as listening once its address answers, and another
	// process may have taken that address before the node could bind it:
	// then the node has exited, and the cluster starts again.
	nodes := []*process{c.controller}
	for id := 1; id <= n; id++ {
		nodes = append(nodes, c.brokers[id])
	}
	for _, p := range nodes {
		if !p.running() {
			return fmt.Errorf("cluster: %s exited as the cluster started: %s", p.name, p.tail())
		}
	}
	return nil
}

func (c *Cluster) newProcess(name string, id int, args []string) *process {
	file := "controller.log"
	if id > 0 {
		file = fmt.Sprintf("broker-%d.log", id)
	}
	return &process{
		name: name, id: id, binary: c.opts.Binary, args: args,
		logPath: filepath.Join(c.dir, file), onExit: c.onExit, logf: c.opts.Logf,
	}
}

// onExit passes a node's unexpected exit to Options.OnExit once the
// cluster is up.
func (c *Cluster) onExit(e Exit) {
	if c.up.Load() && c.opts.OnExit != nil {
		c.opts.OnExit(e)
	}
}

// freeAddr picks a loopback port nobody listens on. The port is chosen up
// front, not by the node, so that a restarted node comes back on the same
// address.
// pickAddr picks the nodes' ports; tests replace it.
var pickAddr = freeAddr

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cluster: pick a port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// WaitReady waits until a Metadata request answered by the cluster lists
// every broker. The error names the brokers still missing and shows the
// end of their logs.
func (c *Cluster) WaitReady(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	var seen []int32
	var lastErr error
	for {
		req := kmsg.NewPtrMetadataRequest()
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := req.RequestWith(rctx, cl)
		cancel()
		if err == nil {
			seen = seen[:0]
			for _, b := range resp.Brokers {
				seen = append(seen, b.NodeID)
			}
			if len(seen) >= c.opts.Brokers {
				return nil
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return c.notReady(seen, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) notReady(seen []int32, lastErr error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "not every broker registered: metadata lists %v of brokers 1..%d", seen, c.opts.Brokers)
	if lastErr != nil {
		fmt.Fprintf(&b, " (last metadata error: %v)", lastErr)
	}
	listed := map[int32]bool{}
	for _, id := range seen {
		listed[id] = true
	}
	for _, id := range c.ids() {
		if !listed[int32(id)] {
			p := c.brokers[id]
			fmt.Fprintf(&b, "\nend of %s (%s):\n%s", p.logPath, p.name, p.tail())
		}
	}
	fmt.Fprintf(&b, "\nend of %s (controller):\n%s", c.controller.logPath, c.controller.tail())
	return errors.New(b.String())
}

func (c *Cluster) ids() []int {
	ids := make([]int, 0, len(c.brokers))
	for id := range c.brokers {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

func (c *Cluster) broker(id int) (*process, error) {
	p, ok := c.brokers[id]
	if !ok {
		return nil, fmt.Errorf("no broker %d: brokers are 1..%d", id, c.opts.Brokers)
	}
	return p, nil
}

// Dir is the directory holding every node's data and log.
func (c *Cluster) Dir() string { return c.dir }

// Bootstrap is the address of every broker, as clients dial them.
func (c *Cluster) Bootstrap() []string {
	out := make([]string, 0, len(c.advertised))
	for _, id := range c.ids() {
		out = append(out, c.advertised[id])
	}
	return out
}

// Addr is the address clients dial for broker id (its proxy, with
// Options.Proxies); "" for an unknown id.
func (c *Cluster) Addr(id int) string { return c.advertised[id] }

// ListenAddr is the address broker id listens on, behind any proxy.
func (c *Cluster) ListenAddr(id int) string { return c.listen[id] }

// FailpointAddr is the address of broker id's pingcap/failpoint HTTP
// endpoint ("" without Options.FailpointHTTP): PUT a term to
// http://ADDR/<full failpoint name>, DELETE it to switch it off.
func (c *Cluster) FailpointAddr(id int) string { return c.fpAddr[id] }

// LogPath is broker id's log file (every start of it, appended).
func (c *Cluster) LogPath(id int) string {
	if p, ok := c.brokers[id]; ok {
		return p.logPath
	}
	return ""
}

// LogTail is the end of broker id's log.
func (c *Cluster) LogTail(id int) string {
	if p, ok := c.brokers[id]; ok {
		return p.tail()
	}
	return ""
}

// Running reports whether broker id's process is up (paused counts as up).
func (c *Cluster) Running(id int) bool {
	p, ok := c.brokers[id]
	return ok && p.running()
}

// Env sets extra environment (KEY=VALUE, on top of Options.Env) for broker
// id's next start: failpoints for one broker, set before Restart.
func (c *Cluster) Env(id int, env []string) error {
	p, err := c.broker(id)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.env = append(append([]string(nil), c.opts.Env...), env...)
	p.mu.Unlock()
	return nil
}

// PID returns broker id's process id, or 0 while it is down.
func (c *Cluster) PID(id int) int {
	p, err := c.broker(id)
	if err != nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop ends every node (SIGTERM, then SIGKILL after Options.StopGrace) and
// closes the proxies: the brokers first, all at once, each with its
// controlled shutdown (which needs the controller), then the controller.
// It is safe to call more than once; the data and logs stay in Dir.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		stop := func(procs []*process) {
			for _, p := range procs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := p.terminate(c.opts.StopGrace); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
		}
		var procs []*process
		for _, id := range c.ids() {
			procs = append(procs, c.brokers[id])
		}
		stop(procs)
		if c.controller != nil {
			stop([]*process{c.controller})
		}
		for _, px := range c.proxies() {
			_ = px.Close()
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

func (c *Cluster) proxies() []*Proxy {
	var out []*Proxy
	for _, m := range []map[int]*Proxy{c.clientProxy, c.ctrlProxy} {
		for _, px := range m {
			out = append(out, px)
		}
	}
	for _, px := range c.links {
		out = append(out, px)
	}
	return out
}

// Describe lists the nodes and where they are, one per line, for people.
func (c *Cluster) Describe(w io.Writer) {
	fmt.Fprintf(w, "controller: log %s\n", c.controller.logPath)
	for _, id := range c.ids() {
		fmt.Fprintf(w, "broker %d: %s", id, c.advertised[id])
		if c.opts.Proxies {
			fmt.Fprintf(w, " (proxy of %s)", c.listen[id])
		}
		if a := c.fpAddr[id]; a != "" {
			fmt.Fprintf(w, ", failpoints http://%s", a)
		}
		fmt.Fprintf(w, ", log %s\n", c.brokers[id].logPath)
	}
}

// SecretFile is where a cluster keeps the secret its nodes share, in its
// directory; only the owner may read it.
const SecretFile = "cluster-secret"

// writeSecret draws the cluster's secret into dir and returns its path.
func writeSecret(dir string) (string, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", fmt.Errorf("cluster: secret: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	path := filepath.Join(dir, SecretFile)
	if err := os.WriteFile(path, secret, 0o600); err != nil {
		return "", fmt.Errorf("cluster: secret: %w", err)
	}
	return path, nil
}
