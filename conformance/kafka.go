package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/live"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafkaclient"
)

// KafkaTarget is any Kafka-compatible cluster that is already running,
// reached at Bootstrap. The harness cannot reach inside it: faults are
// commands the user gives (with {id} replaced by the broker id, run with
// sh -c), and a case needing a fault without a command is skipped. Every
// run creates topics and a group with names of its own, so runs on one
// cluster never see each other's records; each topic is created with the
// case's min.insync.replicas and unclean.leader.election.enable.
type KafkaTarget struct {
	Bootstrap []string
	// Fault commands: e.g. "docker kill kafka{id}" and "docker start
	// kafka{id}". Restart must bring the broker back on its data.
	KillCmd, RestartCmd, PauseCmd, ResumeCmd, IsolateCmd, HealCmd string
	// SlowCmd, when set, adds {ms} ms to broker {id}'s links to the
	// other brokers ({ms} 0: back to none), e.g. with tc netem: a slow
	// fault then slows replication as well as the harness's own links to
	// the broker (its proxy), as on --target cluster. Without it a slowed
	// broker is slow to the clients only.
	SlowCmd string
	// StopCmd, when set with RestartCmd, stops broker {id} as an operator
	// does (SIGTERM: a controlled shutdown, every log flushed) and returns
	// once it has exited; the restart command starts it again.
	StopCmd string
	// CreateTopicCmd, when set, creates each run's topics instead of the
	// harness's CreateTopics request (kafka_file.go: createTopicWithCmd).
	CreateTopicCmd string
	// File is the target file this target was read from (ReadTargetFile),
	// which replay lines name; "" when it came from flags.
	File string
	// MaxVersions caps the harness's requests per API key: what the user
	// pins (--max-version KEY=V) and what the wire stage found to pass
	// (wire.Result.Pins).
	MaxVersions map[int16]int16
	// Settings are the cluster's broker and controller settings by
	// run-file key, as far as the user knows (a target file's settings:);
	// the harness cannot set them. A case that needs another value of
	// one of them is skipped; one that needs a setting not listed runs
	// with the cluster's own, and an unknown verdict says so
	// (clusterSettings).
	Settings map[string]string
	// Notes say what the harness chose to do about the broker (a version
	// it will not speak, and why), for the user to read.
	Notes []string
	// Faults, for a system in the same process (a Go implementation
	// checking itself), is a value implementing Crasher, Pauser and/or
	// Isolator: its methods are used instead of the commands. If it has
	// a Capabilities() Capabilities method, that says which it offers;
	// otherwise the interfaces it implements do. If it is a TopicCreator,
	// topics are created through it.
	Faults any
	// DurationMs and SettleMs, when > 0, replace the cases' own times;
	// a group case whose members crash runs longer where its sessions had
	// to grow (scaleMemberFaults), and without SettleMs a group case
	// settles two sessions' growth longer.
	DurationMs, SettleMs int64
	// Prefix starts every topic and group name (default "watermark").
	Prefix   string
	Progress func(nowMs, endMs int64)
	Logf     func(format string, args ...any)

	mu       sync.Mutex
	answered bool             // the cluster answered a Probe once: a later silence is not a bad --bootstrap
	known    map[int32]string // the brokers' addresses as the cluster listed them, by its ids
	versions map[int16]int16  // the first bootstrap broker's ApiVersions answer, once asked
	timing   map[string]declared
}

// Name implements Target.
func (t *KafkaTarget) Name() string { return "kafka" }

// ReplayArgs are the flags that give another check this target: the
// cluster, the fault commands and the times.
func (t *KafkaTarget) ReplayArgs() []string {
	if t.File != "" {
		return append([]string{"--target-file=" + t.File}, DurationArgs(t.DurationMs, t.SettleMs)...)
	}
	args := []string{"--bootstrap=" + strings.Join(t.Bootstrap, ",")}
	for _, c := range []struct{ flag, cmd string }{
		{"kill-cmd", t.KillCmd}, {"restart-cmd", t.RestartCmd}, {"pause-cmd", t.PauseCmd},
		{"resume-cmd", t.ResumeCmd}, {"isolate-cmd", t.IsolateCmd}, {"heal-cmd", t.HealCmd},
		{"slow-cmd", t.SlowCmd}, {"stop-cmd", t.StopCmd}, {"create-topic-cmd", t.CreateTopicCmd},
	} {
		if c.cmd != "" {
			args = append(args, "--"+c.flag+"="+c.cmd)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.MaxVersions)) {
		args = append(args, fmt.Sprintf("--max-version=%s=%d", kmsg.NameForKey(k), t.MaxVersions[k]))
	}
	return append(args, DurationArgs(t.DurationMs, t.SettleMs)...)
}

// Parallel implements Target: runs share the cluster, and faults on it.
func (t *KafkaTarget) Parallel() bool { return false }

// Crasher kills broker id (no clean shutdown) and restarts it on its data.
type Crasher interface {
	Kill(id int) error
	Restart(id int) error
}

// Pauser stops broker id and lets it go on.
type Pauser interface {
	Pause(id int) error
	Resume(id int) error
}

// TopicCreator creates a topic the way the system under test does, for a
// system without the CreateTopics API (or with one the harness should not
// use). Without it, topics are created through CreateTopics.
type TopicCreator interface {
	CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int, configs map[string]string) error
}

// Isolator cuts broker id off from the other brokers and the clients, and
// heals every cut.
type Isolator interface {
	Isolate(id int) error
	Heal() error
}

// Capabilities implements Target: what Faults or the fault commands
// allow (never failpoints, disks, power loss or single messages), and
// slowing brokers, which the harness does
// with a proxy of its own in front of each broker (its clients reach every
// broker through it).
func (t *KafkaTarget) Capabilities() Capabilities {
	var c Capabilities
	if d, ok := t.Faults.(interface{ Capabilities() Capabilities }); ok {
		c = d.Capabilities()
	} else {
		_, c.Crash = t.Faults.(Crasher)
		_, c.Pause = t.Faults.(Pauser)
		_, c.Isolate = t.Faults.(Isolator)
	}
	c.Crash = c.Crash || t.KillCmd != "" && t.RestartCmd != ""
	c.Pause = c.Pause || t.PauseCmd != "" && t.ResumeCmd != ""
	c.Isolate = c.Isolate || t.IsolateCmd != "" && t.HealCmd != ""
	c.Stop = c.Stop || t.StopCmd != "" && t.RestartCmd != ""
	c.Slow = true
	// A broker the harness reaches over the network cannot have its
	// failpoints switched at an exact protocol step, whatever Faults says;
	// nor its disk replaced, its power cut or single messages struck: the
	// commands and Faults behind the live runner's primitives cannot
	// (cmdCluster is no live.DiskReplacer; live.Capabilities).
	c.Failpoints, c.ReplaceDisk, c.PowerLoss, c.Messages = false, false, false, false
	return c
}

// KafkaMinSessionTimeoutMs is Kafka's default group.min.session.timeout.ms:
// group members on a KafkaTarget ask for at least this.
const KafkaMinSessionTimeoutMs = 6000

// ErrNoBroker is returned when nothing answers at the bootstrap address.
var ErrNoBroker = errors.New("no Kafka broker answered")

// ErrNegotiation is the target's broker failing ApiVersions: it listens,
// and its answer is not one a Kafka client can use.
var ErrNegotiation = kafkaclient.ErrNegotiation

// Probe asks the cluster for its brokers, failing fast with a clear
// message when there is none. shift is what the harness adds to the
// cluster's broker ids (1 when they start at 0: the harness's own
// numbering starts at 1).
func (t *KafkaTarget) Probe(ctx context.Context) (brokers int, shift int32, err error) {
	if len(t.Bootstrap) == 0 {
		return 0, 0, fmt.Errorf("%w: no bootstrap address: give --bootstrap HOST:PORT", ErrNoBroker)
	}
	n, lowest, err := t.brokers(ctx)
	if err != nil {
		if n, lowest, err = t.downgraded(ctx, err); err != nil {
			return 0, 0, err
		}
	}
	t.answered = true
	if lowest < 1 {
		shift = 1 - lowest
	}
	return n, shift, nil
}

// brokers asks the cluster for its brokers with the harness's client.
func (t *KafkaTarget) brokers(ctx context.Context) (int, int32, error) {
	cl, err := kafkaclient.NewClientWith(t.Bootstrap, kafkaclient.ClientOptions{MaxVersions: t.MaxVersions})
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, lowest, err := cl.Brokers(pctx)
	if err == nil {
		if addrs, aerr := cl.BrokerAddrs(pctx); aerr == nil {
			t.known = addrs
		}
	}
	return n, lowest, err
}

// whichDied asks each broker the cluster listed before (known) for its
// versions and says which no longer answer: after a cluster that answered
// stops, the user's first question.
func (t *KafkaTarget) whichDied(ctx context.Context) string {
	if len(t.known) == 0 {
		return "did it crash?"
	}
	var gone, alive []string
	for _, id := range slices.Sorted(maps.Keys(t.known)) {
		addr := t.known[id]
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := kafkaclient.Handshake(hctx, addr, nil)
		cancel()
		if err != nil {
			gone = append(gone, fmt.Sprintf("broker %d at %s (%v)", id, addr, err))
		} else {
			alive = append(alive, fmt.Sprint(id))
		}
	}
	switch {
	case len(gone) == 0:
		return "every broker it listed still takes ApiVersions: did the one asked stop serving Metadata?"
	case len(alive) == 0:
		return "no broker it listed answers: " + strings.Join(gone, "; ")
	}
	return fmt.Sprintf("these brokers no longer answer: %s; broker(s) %s still do", strings.Join(gone, "; "), strings.Join(alive, ", "))
}

// downgraded handles a broker that takes ApiVersions but fails franz-go's
// negotiation (err): one whose answer to an ApiVersions version above its
// own is not KIP-511's (librdkafka's mock answers in a layout of its
// own). If the harness's client can speak to it with ApiVersions capped at
// the broker's own highest version, the harness does so from then on
// (MaxVersions) and says so (Notes); otherwise the error is diagnosed.
func (t *KafkaTarget) downgraded(ctx context.Context, err error) (int, int32, error) {
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	versions, herr := kafkaclient.Handshake(hctx, t.Bootstrap[0], nil)
	cancel()
	key := kmsg.ApiVersions.Int16()
	if herr != nil || versions[key] >= kmsg.NewPtrApiVersionsRequest().MaxVersion() {
		return 0, 0, t.diagnose(ctx, err)
	}
	was := t.MaxVersions
	t.MaxVersions = maps.Clone(t.MaxVersions)
	if t.MaxVersions == nil {
		t.MaxVersions = map[int16]int16{}
	}
	t.MaxVersions[key] = versions[key]
	n, lowest, err2 := t.brokers(ctx)
	if err2 != nil {
		t.MaxVersions = was
		return 0, 0, t.diagnose(ctx, err)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("the broker at %s fails ApiVersions v%d's downgrade (%v); the harness speaks ApiVersions v%d, its highest",
		t.Bootstrap[0], kmsg.NewPtrApiVersionsRequest().MaxVersion(), err, versions[key]))
	return n, lowest, nil
}

// diagnose says why the cluster could not be asked for its brokers (err):
// nothing listens (ErrNoBroker: is it running?), or something listens and
// fails Kafka's version negotiation, which is the broker's problem to
// report, not the user's setup (ErrNegotiation, with what it answered).
func (t *KafkaTarget) diagnose(ctx context.Context, err error) error {
	var failed []string
	for _, addr := range t.Bootstrap {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, herr := kafkaclient.Handshake(hctx, addr, nil)
		cancel()
		switch {
		case herr == nil:
			return fmt.Errorf("%w: %s takes ApiVersions, but asking for the cluster's brokers failed: %v (if its Metadata answer does not decode at the version asked, --max-version Metadata=N caps it; `watermark check --wire` shows which versions pass)", ErrNoBroker, addr, err)
		case errors.Is(herr, kafkaclient.ErrNegotiation):
			// herr says ErrNegotiation and the address already: say
			// them once, with the exchange it holds.
			return fmt.Errorf("the broker at %s connects, and then %w (asking for the cluster's brokers had failed with: %v)", addr, herr, err)
		}
		failed = append(failed, herr.Error())
	}
	if t.answered {
		return fmt.Errorf("%w at %s within 10 s (%v; %s): it answered earlier in this check and no longer does: %s (their logs say why)", ErrNoBroker, strings.Join(t.Bootstrap, ","), err, strings.Join(failed, "; "), t.whichDied(ctx))
	}
	return fmt.Errorf("%w at %s within 10 s (%v; %s): is it running, and is --bootstrap right?", ErrNoBroker, strings.Join(t.Bootstrap, ","), err, strings.Join(failed, "; "))
}

// newClient is a client of the cluster that numbers brokers as the
// harness does and reaches each broker through its proxy (via, by the
// broker's address).
func (t *KafkaTarget) newClient(shift int32, via map[string]string) (*kafkaclient.Client, error) {
	var d net.Dialer
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		if p, ok := via[host]; ok {
			host = p
		}
		return d.DialContext(ctx, network, host)
	}
	cl, err := kafkaclient.NewClientWith(t.Bootstrap, kafkaclient.ClientOptions{Dial: dial, MaxVersions: t.MaxVersions})
	if err == nil {
		cl.ShiftBrokerIDs(shift)
	}
	return cl, err
}

// proxies puts a proxy of the harness in front of every broker, for its
// clients' links: by the harness's broker id, and the dial map from each
// broker's address to its proxy.
func (t *KafkaTarget) proxies(ctx context.Context, shift int32) (map[int]*cluster.Proxy, map[string]string, error) {
	probe, err := kafkaclient.NewClientWith(t.Bootstrap, kafkaclient.ClientOptions{MaxVersions: t.MaxVersions})
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs, err := probe.BrokerAddrs(pctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%w at %s: %v", ErrNoBroker, strings.Join(t.Bootstrap, ","), err)
	}
	byID := map[int]*cluster.Proxy{}
	via := map[string]string{}
	for id, addr := range addrs {
		p, err := cluster.NewProxy("127.0.0.1:0", addr)
		if err != nil {
			for _, q := range byID {
				_ = q.Close()
			}
			return nil, nil, err
		}
		byID[int(id+shift)] = p
		via[addr] = p.Addr()
	}
	return byID, via, nil
}

// Run implements Target.
func (t *KafkaTarget) Run(ctx context.Context, cfg run.Spec) (*run.Result, error) {
	cfg = cfg.Clone()
	if why := live.Unsupported(cfg); why != "" {
		return nil, &SkipError{Reason: why}
	}
	n, shift, err := t.Probe(ctx)
	if err != nil {
		return nil, err
	}
	if err := t.unlisted(ctx, cfg); err != nil {
		return nil, err
	}
	if t.DurationMs > 0 {
		cfg.DurationMs = t.DurationMs
	}
	if t.SettleMs > 0 {
		cfg.SettleMs = t.SettleMs
	}
	for _, tp := range cfg.Topics {
		if tp.ReplicationFactor > n {
			return nil, &SkipError{Reason: fmt.Sprintf("needs %d brokers for replication factor %d; the cluster has %d", tp.ReplicationFactor, tp.ReplicationFactor, n)}
		}
	}
	cfg.Brokers = n
	timing := t.clusterTiming(ctx, shift)
	unset, err := t.clusterSettings(cfg, known(t.Settings, timing))
	if err != nil {
		return nil, err
	}
	timingNote := applyTiming(&cfg, timing)
	prefix := t.Prefix
	if prefix == "" {
		prefix = "watermark"
	}
	suffix := fmt.Sprintf("%d-%d", cfg.Seed, time.Now().UnixNano()%1_000_000_000)
	// The run's id in every value: records of another run (or topic) that
	// the cluster serves are foreign, not this run's sends.
	cfg.Workload.ValuePrefix = "r" + suffix + "/"
	renamed := map[string]string{}
	for i := range cfg.Topics {
		name := fmt.Sprintf("%s-%s-%s", prefix, cfg.Topics[i].Name, suffix)
		renamed[cfg.Topics[i].Name] = name
		cfg.Topics[i].Name = name
	}
	for i := range cfg.Faults {
		if p := cfg.Faults[i].Partition; p != nil {
			q := *p
			q.Topic = renamed[q.Topic]
			cfg.Faults[i].Partition = &q
		}
	}
	if cfg.Workload.Group != "" {
		cfg.Workload.Group = fmt.Sprintf("%s-%s-%s", prefix, cfg.Workload.Group, suffix)
		// Kafka refuses sessions below group.min.session.timeout.ms,
		// 6 s by default; the reference allows the cases' 1.5 s.
		was := cfg.Workload.ConsumerSessionTimeoutMs
		cfg.Workload.ConsumerSessionTimeoutMs = max(cfg.Workload.ConsumerSessionTimeoutMs, KafkaMinSessionTimeoutMs)
		scaleMemberFaults(&cfg, was, cfg.Workload.ConsumerSessionTimeoutMs)
		if t.SettleMs == 0 && was > 0 {
			// Whatever the faults, a group heals a session at a time:
			// after the last one it may rebalance twice before it
			// consumes on, and the longer sessions make that longer.
			cfg.SettleMs += 2 * max(cfg.Workload.ConsumerSessionTimeoutMs-was, 0)
		}
	}
	proxies, via, err := t.proxies(ctx, shift)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range proxies {
			_ = p.Close()
		}
	}()
	cl, err := t.newClient(shift, via)
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
	netFor := func(clientmsg.NodeID) (live.Exchanger, error) {
		o, err := t.newClient(shift, via)
		if err == nil {
			own = append(own, o)
		}
		return o, err
	}
	configs := map[string]string{
		"min.insync.replicas":            strconv.Itoa(cfg.Broker.MinInsyncReplicas),
		"unclean.leader.election.enable": strconv.FormatBool(cfg.Controller.UncleanLeaderElection),
	}
	net := topicConfigs{Client: cl, t: t, configs: configs}
	if tc, ok := t.Faults.(TopicCreator); ok {
		net.create = tc
	}
	res, err := live.Run(ctx, cfg, live.Options{Cluster: &cmdCluster{t: t, n: n, shift: shift, ctx: ctx, proxies: proxies}, Net: net, NetFor: netFor, Progress: t.Progress})
	if err == nil {
		res.BrokerIDShift = shift
		res.Unapplied = unset
		if timingNote != "" {
			res.Notes = append([]run.Note{{AtMs: 0, Kind: run.NoteHarness, Text: timingNote}}, res.Notes...)
		}
	}
	return res, err
}

// topicConfigs creates topics with the run's topic configs, through the
// system's own TopicCreator when it has one.
type topicConfigs struct {
	*kafkaclient.Client
	t       *KafkaTarget
	configs map[string]string
	create  TopicCreator
}

func (c topicConfigs) CreateTopic(ctx context.Context, name string, partitions int32, rf int) error {
	if c.create != nil {
		return c.create.CreateTopic(ctx, name, partitions, rf, c.configs)
	}
	if c.t.CreateTopicCmd != "" {
		return c.t.createTopicWithCmd(ctx, name, partitions, rf, c.configs)
	}
	return c.CreateTopicWithConfigs(ctx, name, partitions, rf, c.configs)
}

// cmdCluster carries out faults with the user's commands.
type cmdCluster struct {
	t       *KafkaTarget
	n       int
	shift   int32 // the harness's broker id is the cluster's plus shift
	ctx     context.Context
	proxies map[int]*cluster.Proxy
}

func (c *cmdCluster) Brokers() int { return c.n }

// How says how the user's cluster carries out a fault on broker id, for
// the run's notes: the command as run, or the in-process fault's type.
func (c *cmdCluster) How(kind run.FaultKind, id int) string {
	cmd := map[run.FaultKind]string{run.FaultCrash: c.t.KillCmd, run.FaultPause: c.t.PauseCmd, run.FaultIsolate: c.t.IsolateCmd, run.FaultSlow: c.t.SlowCmd}[kind]
	switch {
	case c.t.Faults != nil && cmd == "":
		return fmt.Sprintf("%T", c.t.Faults)
	case cmd != "":
		return "by the command `" + c.line(cmd, id) + "`"
	}
	return "the harness's proxies"
}

// line is cmd for broker id (the harness's number), as it is run.
func (c *cmdCluster) line(cmd string, id int) string {
	return strings.ReplaceAll(cmd, "{id}", strconv.Itoa(id-int(c.shift)))
}

func (c *cmdCluster) run(what, cmd string, id int) error {
	if cmd == "" {
		return fmt.Errorf("no command to %s a broker", what)
	}
	line := c.line(cmd, id)
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", line).CombinedOutput()
	if c.t.Logf != nil {
		c.t.Logf("%s broker %d: %s: %s", what, id, line, strings.TrimSpace(string(out)))
	}
	if err != nil {
		return fmt.Errorf("%s broker %d: %q: %v: %s", what, id, line, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// The faults go to Faults' methods when it has them, else to the
// commands. Ids are the cluster's own (the harness's minus shift).
func (c *cmdCluster) Kill(id int) error {
	if f, ok := c.t.Faults.(Crasher); ok {
		return f.Kill(id - int(c.shift))
	}
	return c.run("kill", c.t.KillCmd, id)
}

func (c *cmdCluster) Restart(id int) error {
	if f, ok := c.t.Faults.(Crasher); ok {
		return f.Restart(id - int(c.shift))
	}
	return c.run("restart", c.t.RestartCmd, id)
}

// Stop stops broker id cleanly with the stop command (live.Stopper).
func (c *cmdCluster) Stop(id int) error {
	if f, ok := c.t.Faults.(interface{ Stop(int) error }); ok {
		return f.Stop(id - int(c.shift))
	}
	return c.run("stop", c.t.StopCmd, id)
}

func (c *cmdCluster) Pause(id int) error {
	if f, ok := c.t.Faults.(Pauser); ok {
		return f.Pause(id - int(c.shift))
	}
	return c.run("pause", c.t.PauseCmd, id)
}

func (c *cmdCluster) Resume(id int) error {
	if f, ok := c.t.Faults.(Pauser); ok {
		return f.Resume(id - int(c.shift))
	}
	return c.run("resume", c.t.ResumeCmd, id)
}

func (c *cmdCluster) Isolate(id int) error {
	if f, ok := c.t.Faults.(Isolator); ok {
		return f.Isolate(id - int(c.shift))
	}
	return c.run("isolate", c.t.IsolateCmd, id)
}

func (c *cmdCluster) Heal() error {
	for _, p := range c.proxies {
		p.SetLatency(0)
	}
	if f, ok := c.t.Faults.(Isolator); ok && c.t.Capabilities().Isolate {
		return f.Heal()
	}
	if c.t.HealCmd == "" {
		return nil // nothing was isolated: Isolate needs a command too
	}
	return c.run("heal", c.t.HealCmd, 0)
}

// SetLatency slows the links between the harness's clients and broker
// id (the links between brokers are the cluster's own).
func (c *cmdCluster) SetLatency(id int, d time.Duration) error {
	p, ok := c.proxies[id]
	if !ok {
		return fmt.Errorf("no proxy in front of broker %d", id)
	}
	p.SetLatency(d)
	if c.t.SlowCmd != "" {
		cmd := strings.ReplaceAll(c.t.SlowCmd, "{ms}", strconv.FormatInt(d.Milliseconds(), 10))
		return c.run("slow", cmd, id)
	}
	return nil
}

// scaleMemberFaults stretches the group members' crashes by the factor
// their session grew by (from was to now ms), and the run with them, so
// that a case written in sessions ("down for four sessions") still means
// it on a broker that refuses short sessions: how long a member stays down
// and how often one dies, scheduled or drawn; and the run lasts at least
// one nemesis interval and a half plus two sessions, so that a member the
// nemesis strikes can be seen taken over.
func scaleMemberFaults(cfg *run.Spec, was, now int64) {
	if was <= 0 || now <= was {
		return
	}
	scale := func(ms int64) int64 { return ms * now / was }
	for i := range cfg.Faults {
		if f := &cfg.Faults[i]; f.Kind == run.FaultCrashConsumer {
			f.ForMs = scale(f.ForMs)
		}
	}
	nm := &cfg.Nemesis
	if slices.Contains(nm.Kinds, run.FaultCrashConsumer) {
		nm.FaultMs, nm.IntervalMs = scale(nm.FaultMs), scale(nm.IntervalMs)
		cfg.DurationMs = max(cfg.DurationMs, nm.IntervalMs*3/2+2*now)
	}
}

// RestartBroker starts the broker at addr again after it died (of a probe,
// say), by its own node id: with the Faults value's Restart when it has
// one, else the restart command. It waits up to a minute for addr to
// answer ApiVersions.
func (t *KafkaTarget) RestartBroker(ctx context.Context, addr string, nodeID int32) error {
	c := &cmdCluster{t: t, ctx: ctx}
	if f, ok := t.Faults.(Crasher); ok {
		if err := f.Restart(int(nodeID)); err != nil {
			return err
		}
	} else if t.RestartCmd == "" {
		return errors.New("no restart command (--restart-cmd) to start it again")
	} else if err := c.run("restart", t.RestartCmd, int(nodeID)); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := kafkaclient.Handshake(hctx, addr, nil)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("restarted, but %s did not answer within a minute: %v", addr, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
