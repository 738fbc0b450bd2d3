package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/linearizability"
)

// RunFile is a human-written description of one simulator run and of what
// it must show: the format of failpoints/RUNFILE.md. Every field a file
// leaves out keeps the value of DefaultRunFile (sim.DefaultConfig, with
// continue_after_violation on).
type RunFile struct {
	// Path is the file the run was read from ("" if built in memory); it
	// is not part of the format.
	Path string `yaml:"-"`

	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Seed        uint64 `yaml:"seed"`

	Cluster  RunCluster  `yaml:"cluster"`
	Broker   RunBroker   `yaml:"broker"`
	Network  RunNetwork  `yaml:"network"`
	Workload RunWorkload `yaml:"workload"`

	TickMs         int64 `yaml:"tick_ms"`
	DurationMs     int64 `yaml:"duration_ms"`
	SettleMs       int64 `yaml:"settle_ms"`
	RestartAfterMs int64 `yaml:"restart_after_ms"`

	Faults     []RunFault     `yaml:"faults"`
	Failpoints []RunFailpoint `yaml:"failpoints"`
	Nemesis    RunNemesis     `yaml:"nemesis"`

	MaxSteps               int  `yaml:"max_steps"`
	TraceTail              int  `yaml:"trace_tail"`
	ContinueAfterViolation bool `yaml:"continue_after_violation"`
	NoFinalRead            bool `yaml:"no_final_read"`
	// ValidateProtocol turns on trace validation (sim.Config's field).
	ValidateProtocol bool `yaml:"validate_protocol,omitempty"`

	// Expect is what the run must show; Allowed the anomalies and
	// invariant failures it may show besides (consequences of the expected
	// ones, or what a case tolerates); LossAllowed and DuplicatesAllowed are
	// Case's flags.
	Expect            Expect   `yaml:"expect"`
	Allowed           []string `yaml:"allowed" one_of:"expect"`
	LossAllowed       bool     `yaml:"loss_allowed"`
	DuplicatesAllowed bool     `yaml:"duplicates_allowed"`
}

// RunCluster is the cluster's shape.
type RunCluster struct {
	Brokers int        `yaml:"brokers"`
	Topics  []RunTopic `yaml:"topics"`
}

// RunTopic is one topic created at the start.
type RunTopic struct {
	Name              string `yaml:"name"`
	Partitions        int32  `yaml:"partitions"`
	ReplicationFactor int    `yaml:"replication_factor"`
}

// RunBroker holds the brokers' and the controller's settings.
type RunBroker struct {
	MinInsyncReplicas      int    `yaml:"min_insync_replicas"`
	Truncation             string `yaml:"truncation" one_of:"truncation"`
	ProducerState          string `yaml:"producer_state" one_of:"producer_state"`
	ReplicaLagTimeMaxMs    int64  `yaml:"replica_lag_time_max_ms"`
	ReplicaFetchWaitMaxMs  int64  `yaml:"replica_fetch_wait_max_ms"`
	RequestTimeoutMs       int64  `yaml:"request_timeout_ms"`
	HeartbeatIntervalMs    int64  `yaml:"heartbeat_interval_ms"`
	HWCheckpointIntervalMs int64  `yaml:"hw_checkpoint_interval_ms"`
	FlushEveryAppend       bool   `yaml:"flush_every_append"`
	FlushIntervalMs        int64  `yaml:"flush_interval_ms"`
	AdvanceHWBelowMinISR   bool   `yaml:"advance_hw_below_min_isr"`
	SessionTimeoutMs       int64  `yaml:"session_timeout_ms"`
	UncleanLeaderElection  bool   `yaml:"unclean_leader_election"`
	AutoLeaderRebalance    bool   `yaml:"auto_leader_rebalance"`
	KeepISROnRestart       bool   `yaml:"keep_isr_on_restart"`
}

// RunNetwork shapes message delivery.
type RunNetwork struct {
	MinDelayMs       int64   `yaml:"min_delay_ms"`
	MaxDelayMs       int64   `yaml:"max_delay_ms"`
	DropRate         float64 `yaml:"drop_rate"`
	ResponseDropRate float64 `yaml:"response_drop_rate"`
}

// RunWorkload is what the clients do.
type RunWorkload struct {
	Producers         int    `yaml:"producers"`
	Consumers         int    `yaml:"consumers"`
	Acks              string `yaml:"acks" one_of:"acks"`
	Idempotence       bool   `yaml:"idempotence"`
	Retries           bool   `yaml:"retries"`
	MaxInFlight       int    `yaml:"max_in_flight"`
	ProduceIntervalMs int64  `yaml:"produce_interval_ms"`
	RequestTimeoutMs  int64  `yaml:"request_timeout_ms"`
	FetchMaxWaitMs    int64  `yaml:"fetch_max_wait_ms"`
	DeliveryTimeoutMs int64  `yaml:"delivery_timeout_ms"`
	UnsafeAnyAcks     bool   `yaml:"unsafe_any_acks"`
	// Group consumers (sim.Workload's fields of the same names).
	GroupConsumers           int    `yaml:"group_consumers"`
	Group                    string `yaml:"group"`
	CommitMode               string `yaml:"commit_mode" one_of:"commit_mode"`
	Assignor                 string `yaml:"assignor" one_of:"assignor"`
	ConsumerSessionTimeoutMs int64  `yaml:"consumer_session_timeout_ms"`
	FetchMinBytes            int    `yaml:"fetch_min_bytes"`
	ProcessPerTick           int    `yaml:"process_per_tick"`
	SeekBackEveryMs          int64  `yaml:"seek_back_every_ms"`
}

// RunFault is one scheduled fault.
type RunFault struct {
	Kind      string        `yaml:"kind" one_of:"fault_kind"`
	Node      int           `yaml:"node"`
	Role      string        `yaml:"role" one_of:"role"`
	Partition *RunPartition `yaml:"partition,omitempty"`
	AtMs      int64         `yaml:"at_ms"`
	AfterAcks int           `yaml:"after_acks"`
	ForMs     int64         `yaml:"for_ms"`
	DelayMs   int64         `yaml:"delay_ms"`
}

// RunPartition names a partition.
type RunPartition struct {
	Topic     string `yaml:"topic"`
	Partition int32  `yaml:"partition"`
}

// RunFailpoint switches on one broker failpoint.
type RunFailpoint struct {
	Name      string `yaml:"name" one_of:"failpoint"`
	Term      string `yaml:"term"`
	Node      int    `yaml:"node"`
	AtMs      int64  `yaml:"at_ms"`
	AfterAcks int    `yaml:"after_acks"`
	DownMs    int64  `yaml:"down_ms"`
}

// RunNemesis injects random faults.
type RunNemesis struct {
	Kinds               []string `yaml:"kinds" one_of:"fault_kind"`
	Role                string   `yaml:"role" one_of:"role"`
	IntervalMs          int64    `yaml:"interval_ms"`
	FaultMs             int64    `yaml:"fault_ms"`
	DelayMs             int64    `yaml:"delay_ms"`
	MaxFaulty           int      `yaml:"max_faulty"`
	PowerLossOnlyInSync bool     `yaml:"power_loss_only_in_sync"`
}

// Expect is a run file's expected outcome: Holds, or the anomalies and
// invariant failures that must all be found.
type Expect struct {
	Holds bool
	Found []string
}

// MarshalYAML writes `holds` or the list of names.
func (e Expect) MarshalYAML() (any, error) {
	if e.Holds || len(e.Found) == 0 {
		return "holds", nil
	}
	return e.Found, nil
}

// The values enumerated fields accept, by the name their one_of tag gives.
var enums = map[string]func() []string{
	"truncation":     func() []string { return slices.Clone(partition.TruncationNames) },
	"producer_state": func() []string { return []string{"replicated", "leader-only"} },
	"acks":           func() []string { return []string{"all", "1", "0"} },
	"role":           func() []string { return []string{"any", "leader", "follower", "coordinator"} },
	"commit_mode":    func() []string { return []string{"none", "before-process", "after-process"} },
	"assignor":       func() []string { return []string{"", "range", "roundrobin"} },
	"failpoint":      func() []string { return broker.Failpoints },
	"anomaly":        func() []string { return linearizability.AnomalyNames },
	"expect":         expectNames,
	"fault_kind": func() []string {
		out := make([]string, len(sim.FaultKinds))
		for i, k := range sim.FaultKinds {
			out[i] = string(k)
		}
		return out
	},
}

// expectNames are the names `expect` accepts: anomalies and invariants.
func expectNames() []string {
	return append(slices.Clone(linearizability.AnomalyNames), sim.Invariants...)
}

// DefaultRunFile is what a run file's unset fields default to:
// sim.DefaultConfig(0) as the harness runs it (continue_after_violation on,
// so the history shows what an invariant failure did).
func DefaultRunFile() *RunFile {
	cfg := sim.DefaultConfig(0)
	cfg.ContinueAfterViolation = true
	f := runFileFromConfig(cfg)
	f.Expect = Expect{}
	return f
}

func acksName(a partition.Acks) string {
	switch a {
	case partition.AcksAll:
		return "all"
	case partition.AcksLeader:
		return "1"
	case partition.AcksNone:
		return "0"
	}
	return strconv.Itoa(int(a))
}

func parseAcks(s string) partition.Acks {
	switch s {
	case "1":
		return partition.AcksLeader
	case "0":
		return partition.AcksNone
	}
	return partition.AcksAll
}

func commitModeName(m sim.CommitMode) string {
	if m == sim.CommitNone {
		return "none"
	}
	return string(m)
}

func parseCommitMode(s string) sim.CommitMode {
	if s == "none" {
		return sim.CommitNone
	}
	return sim.CommitMode(s)
}

func roleName(r sim.Role) string {
	if r == sim.RoleAny {
		return "any"
	}
	return string(r)
}

func parseRole(s string) sim.Role {
	if s == "any" {
		return sim.RoleAny
	}
	return sim.Role(s)
}

// runFileFromConfig writes every field of cfg explicitly.
func runFileFromConfig(cfg sim.Config) *RunFile {
	f := &RunFile{
		Seed:    cfg.Seed,
		Cluster: RunCluster{Brokers: cfg.Brokers, Topics: []RunTopic{}},
		Broker: RunBroker{
			MinInsyncReplicas:      cfg.Broker.MinInsyncReplicas,
			Truncation:             cfg.Broker.Truncation.String(),
			ProducerState:          cfg.Broker.ProducerState.String(),
			ReplicaLagTimeMaxMs:    cfg.Broker.ReplicaLagTimeMaxMs,
			ReplicaFetchWaitMaxMs:  cfg.Broker.ReplicaFetchWaitMaxMs,
			RequestTimeoutMs:       cfg.Broker.RequestTimeoutMs,
			HeartbeatIntervalMs:    cfg.Broker.HeartbeatIntervalMs,
			HWCheckpointIntervalMs: cfg.Broker.HWCheckpointIntervalMs,
			FlushEveryAppend:       cfg.Broker.FlushEveryAppend,
			FlushIntervalMs:        cfg.Broker.FlushIntervalMs,
			AdvanceHWBelowMinISR:   cfg.Broker.AdvanceHWBelowMinISR,
			SessionTimeoutMs:       cfg.Controller.SessionTimeoutMs,
			UncleanLeaderElection:  cfg.Controller.UncleanLeaderElection,
			AutoLeaderRebalance:    cfg.Controller.AutoLeaderRebalance,
			KeepISROnRestart:       cfg.Controller.KeepISROnRestart,
		},
		Network: RunNetwork{
			MinDelayMs:       cfg.Network.MinDelayMs,
			MaxDelayMs:       cfg.Network.MaxDelayMs,
			DropRate:         cfg.Network.DropRate,
			ResponseDropRate: cfg.Network.ResponseDropRate,
		},
		Workload: RunWorkload{
			Producers:         cfg.Workload.Producers,
			Consumers:         cfg.Workload.Consumers,
			Acks:              acksName(cfg.Workload.Acks),
			Idempotence:       cfg.Workload.Idempotent,
			Retries:           cfg.Workload.Retries,
			MaxInFlight:       cfg.Workload.MaxInFlight,
			ProduceIntervalMs: cfg.Workload.ProduceIntervalMs,
			RequestTimeoutMs:  cfg.Workload.RequestTimeoutMs,
			FetchMaxWaitMs:    cfg.Workload.FetchMaxWaitMs,
			DeliveryTimeoutMs: cfg.Workload.DeliveryTimeoutMs,
			UnsafeAnyAcks:     cfg.Workload.UnsafeAnyAcks,

			GroupConsumers:           cfg.Workload.GroupConsumers,
			Group:                    cfg.Workload.Group,
			CommitMode:               commitModeName(cfg.Workload.CommitMode),
			Assignor:                 cfg.Workload.Assignor,
			ConsumerSessionTimeoutMs: cfg.Workload.ConsumerSessionTimeoutMs,
			FetchMinBytes:            cfg.Workload.FetchMinBytes,
			ProcessPerTick:           cfg.Workload.ProcessPerTick,
			SeekBackEveryMs:          cfg.Workload.SeekBackEveryMs,
		},
		TickMs:         cfg.TickMs,
		DurationMs:     cfg.DurationMs,
		SettleMs:       cfg.SettleMs,
		RestartAfterMs: cfg.RestartAfterMs,
		Faults:         []RunFault{},
		Failpoints:     []RunFailpoint{},
		Nemesis: RunNemesis{
			Kinds:               []string{},
			Role:                roleName(cfg.Nemesis.Role),
			IntervalMs:          cfg.Nemesis.IntervalMs,
			FaultMs:             cfg.Nemesis.FaultMs,
			DelayMs:             cfg.Nemesis.DelayMs,
			MaxFaulty:           cfg.Nemesis.MaxFaulty,
			PowerLossOnlyInSync: cfg.Nemesis.PowerLossOnlyInSync,
		},
		MaxSteps:               cfg.MaxSteps,
		TraceTail:              cfg.TraceTail,
		ContinueAfterViolation: cfg.ContinueAfterViolation,
		ValidateProtocol:       cfg.ValidateProtocol,
		NoFinalRead:            cfg.NoFinalRead,
		Expect:                 Expect{Holds: true},
		Allowed:                []string{},
	}
	for _, t := range cfg.Topics {
		f.Cluster.Topics = append(f.Cluster.Topics, RunTopic(t))
	}
	for _, k := range cfg.Nemesis.Kinds {
		f.Nemesis.Kinds = append(f.Nemesis.Kinds, string(k))
	}
	for _, x := range cfg.Faults {
		rf := RunFault{Kind: string(x.Kind), Node: x.Node, Role: roleName(x.Role), AtMs: x.When.AtMs,
			AfterAcks: x.When.AfterAcks, ForMs: x.ForMs, DelayMs: x.DelayMs}
		if x.Partition != nil {
			rf.Partition = &RunPartition{Topic: x.Partition.Topic, Partition: x.Partition.Partition}
		}
		f.Faults = append(f.Faults, rf)
	}
	for _, x := range cfg.Failpoints {
		f.Failpoints = append(f.Failpoints, RunFailpoint{Name: x.Name, Term: x.Term, Node: x.Node,
			AtMs: x.When.AtMs, AfterAcks: x.When.AfterAcks, DownMs: x.DownMs})
	}
	return f
}

// SimConfig is the simulator configuration the file describes.
func (f *RunFile) SimConfig() sim.Config {
	cfg := sim.DefaultConfig(f.Seed)
	cfg.Brokers = f.Cluster.Brokers
	cfg.Topics = nil
	for _, t := range f.Cluster.Topics {
		cfg.Topics = append(cfg.Topics, sim.Topic(t))
	}
	b := f.Broker
	tr, _ := partition.ParseTruncation(b.Truncation)
	ps, _ := partition.ParseProducerState(b.ProducerState)
	cfg.Broker = sim.BrokerSettings{
		MinInsyncReplicas:      b.MinInsyncReplicas,
		Truncation:             tr,
		ReplicaLagTimeMaxMs:    b.ReplicaLagTimeMaxMs,
		ReplicaFetchWaitMaxMs:  b.ReplicaFetchWaitMaxMs,
		RequestTimeoutMs:       b.RequestTimeoutMs,
		HeartbeatIntervalMs:    b.HeartbeatIntervalMs,
		HWCheckpointIntervalMs: b.HWCheckpointIntervalMs,
		FlushEveryAppend:       b.FlushEveryAppend,
		FlushIntervalMs:        b.FlushIntervalMs,
		AdvanceHWBelowMinISR:   b.AdvanceHWBelowMinISR,
		ProducerState:          ps,
	}
	cfg.Controller.SessionTimeoutMs = b.SessionTimeoutMs
	cfg.Controller.UncleanLeaderElection = b.UncleanLeaderElection
	cfg.Controller.AutoLeaderRebalance = b.AutoLeaderRebalance
	cfg.Controller.KeepISROnRestart = b.KeepISROnRestart
	cfg.Network = sim.Network(f.Network)
	w := f.Workload
	cfg.Workload = sim.Workload{
		Producers:         w.Producers,
		Consumers:         w.Consumers,
		Acks:              parseAcks(w.Acks),
		ProduceIntervalMs: w.ProduceIntervalMs,
		RequestTimeoutMs:  w.RequestTimeoutMs,
		FetchMaxWaitMs:    w.FetchMaxWaitMs,
		Idempotent:        w.Idempotence,
		Retries:           w.Retries,
		MaxInFlight:       w.MaxInFlight,
		DeliveryTimeoutMs: w.DeliveryTimeoutMs,
		UnsafeAnyAcks:     w.UnsafeAnyAcks,

		GroupConsumers:           w.GroupConsumers,
		Group:                    w.Group,
		CommitMode:               parseCommitMode(w.CommitMode),
		Assignor:                 w.Assignor,
		ConsumerSessionTimeoutMs: w.ConsumerSessionTimeoutMs,
		FetchMinBytes:            w.FetchMinBytes,
		ProcessPerTick:           w.ProcessPerTick,
		SeekBackEveryMs:          w.SeekBackEveryMs,
	}
	cfg.TickMs = f.TickMs
	cfg.DurationMs = f.DurationMs
	cfg.SettleMs = f.SettleMs
	cfg.RestartAfterMs = f.RestartAfterMs
	cfg.Faults = nil
	for _, x := range f.Faults {
		sf := sim.Fault{When: sim.Trigger{AtMs: x.AtMs, AfterAcks: x.AfterAcks}, Kind: sim.FaultKind(x.Kind),
			Node: x.Node, Role: parseRole(x.Role), ForMs: x.ForMs, DelayMs: x.DelayMs}
		if x.Partition != nil {
			sf.Partition = &kafka.TopicPartition{Topic: x.Partition.Topic, Partition: x.Partition.Partition}
		}
		cfg.Faults = append(cfg.Faults, sf)
	}
	cfg.Failpoints = nil
	for _, x := range f.Failpoints {
		cfg.Failpoints = append(cfg.Failpoints, sim.Failpoint{Name: x.Name, Term: x.Term, Node: x.Node,
			When: sim.Trigger{AtMs: x.AtMs, AfterAcks: x.AfterAcks}, DownMs: x.DownMs})
	}
	n := f.Nemesis
	cfg.Nemesis = sim.Nemesis{Role: parseRole(n.Role), DelayMs: n.DelayMs, IntervalMs: n.IntervalMs,
		FaultMs: n.FaultMs, MaxFaulty: n.MaxFaulty, PowerLossOnlyInSync: n.PowerLossOnlyInSync}
	for _, k := range n.Kinds {
		cfg.Nemesis.Kinds = append(cfg.Nemesis.Kinds, sim.FaultKind(k))
	}
	cfg.MaxSteps = f.MaxSteps
	cfg.TraceTail = f.TraceTail
	cfg.ContinueAfterViolation = f.ContinueAfterViolation
	cfg.ValidateProtocol = f.ValidateProtocol
	cfg.NoFinalRead = f.NoFinalRead
	return cfg
}

// Case is the conformance case the file judges its run by: its allowed
// anomalies and flags, and Config returning the file's configuration for
// any seed (the file's own seed is f.Seed).
func (f *RunFile) Case() *Case {
	return &Case{
		Name:              f.Name,
		Summary:           f.Description,
		Allowed:           slices.Clone(f.Allowed),
		LossAllowed:       f.LossAllowed,
		DuplicatesAllowed: f.DuplicatesAllowed,
		Config: func(seed uint64) sim.Config {
			cfg := f.SimConfig()
			cfg.Seed = seed
			return cfg
		},
	}
}

// RunFileFor writes run r of case c as a run file that replays it exactly;
// it expects what the run found: the anomalies c does not allow and, unless
// c allows loss, the invariants that failed (`holds` if there were none).
func RunFileFor(r *RunResult, c *Case) *RunFile {
	f := runFileFromConfig(r.Sim.Config)
	f.Name = r.Case
	f.Description = fmt.Sprintf("case %s, seed %d: %s (saved by watermark check)", r.Case, r.Seed, r.Verdict)
	if c != nil {
		f.Allowed = slices.Clone(c.Allowed)
		if f.Allowed == nil {
			f.Allowed = []string{}
		}
		f.LossAllowed = c.LossAllowed
		f.DuplicatesAllowed = c.DuplicatesAllowed
	}
	found := FoundNames(r, f.LossAllowed)
	f.Expect = Expect{Holds: len(found) == 0, Found: found}
	return f
}

// FoundNames are the distinct anomaly names of r.Found and, unless loss is
// allowed, the invariants that failed, sorted.
func FoundNames(r *RunResult, lossAllowed bool) []string {
	set := map[string]bool{}
	for _, a := range r.Found {
		set[a.Name] = true
	}
	if !lossAllowed {
		for _, v := range r.Invariants {
			set[v.Invariant] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Marshal writes the file in the run-file format, every field explicit.
func (f *RunFile) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("# watermark run file: the format is failpoints/RUNFILE.md.\n")
	b.WriteString("# Replay it with: watermark repro FILE\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		// Only plain fields: encoding cannot fail.
		panic(fmt.Sprintf("run file: %v", err))
	}
	_ = enc.Close()
	return b.Bytes()
}

// LoadRunFile reads and checks a run file.
func LoadRunFile(path string) (*RunFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseRunFile(path, data)
}

// ParseRunFile parses a run file; name is used in errors. Every error names
// the file, the line and the field, and says what the field accepts.
func ParseRunFile(name string, data []byte) (*RunFile, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty run file: want a mapping with at least `expect` (see failpoints/RUNFILE.md)", name)
	}
	root := doc.Content[0]
	f := DefaultRunFile()
	f.Path = name
	if base := filepath.Base(name); base != "" {
		f.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	d := &decoder{file: name}
	d.decode(root, reflect.ValueOf(f).Elem(), "")
	if len(d.errs) == 0 {
		if !d.sawExpect {
			d.errorf(root, "expect", "missing: want `holds` or a list of names from %s", strings.Join(expectNames(), ", "))
		}
		if f.Expect.Holds {
			for _, n := range f.Expect.Found {
				d.errorf(root, "expect", "%q next to holds: want one or the other", n)
			}
		}
	}
	if len(d.errs) > 0 {
		return nil, errors.New(strings.Join(d.errs, "\n"))
	}
	for i := range f.Cluster.Topics {
		if f.Cluster.Topics[i].Name == "" {
			f.Cluster.Topics[i].Name = "t"
		}
		if f.Cluster.Topics[i].ReplicationFactor == 0 {
			f.Cluster.Topics[i].ReplicationFactor = f.Cluster.Brokers
		}
	}
	cfg := f.SimConfig()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return f, nil
}

// decoder fills a RunFile from a YAML node tree, strictly: an unknown or
// repeated key, a value of the wrong type and a value outside a field's
// enumeration are errors with their line.
type decoder struct {
	file      string
	errs      []string
	sawExpect bool
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, fmt.Sprintf("%s:%d: %s: %s", d.file, n.Line, path, fmt.Sprintf(format, args...)))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var expectType = reflect.TypeOf(Expect{})

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return fmt.Sprintf("%q", n.Value)
}

// decode fills v from n; oneOf is the enumeration v's values must belong
// to ("" for none).
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, oneOf ...string) {
	if n.Kind == yaml.AliasNode {
		d.errorf(n, path, "aliases are not supported: write the value out")
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // `key:` with no value keeps the default
	}
	if v.Type() == expectType {
		d.decodeExpect(n, v.Addr().Interface().(*Expect), path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Pointer:
		nv := reflect.New(v.Type().Elem())
		d.decode(n, nv.Elem(), path, oneOf...)
		v.Set(nv)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, path, "got %s: want a list", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), oneOf...)
		}
		v.Set(s)
	default:
		d.decodeScalar(n, v, path, oneOf...)
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "got %s: want a mapping", kindName(n))
		return
	}
	t := v.Type()
	fields := map[string]int{}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if k == "" || k == "-" {
			continue
		}
		fields[k] = i
		keys = append(keys, k)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		key := kn.Value
		idx, ok := fields[key]
		if !ok {
			d.errorf(kn, join(path, key), "unknown field: want one of %s", strings.Join(keys, ", "))
			continue
		}
		if seen[key] {
			d.errorf(kn, join(path, key), "given twice")
			continue
		}
		seen[key] = true
		if path == "" && key == "expect" {
			d.sawExpect = true
		}
		var oneOf []string
		if tag := t.Field(idx).Tag.Get("one_of"); tag != "" {
			oneOf = []string{tag}
		}
		d.decode(vn, v.Field(idx), join(path, key), oneOf...)
	}
}

func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string, oneOf ...string) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, path, "got %s: want a single value", kindName(n))
		return
	}
	var err error
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
		if len(oneOf) > 0 {
			allowed := enums[oneOf[0]]()
			if !slices.Contains(allowed, n.Value) {
				d.errorf(n, path, "%q is not allowed: want one of %s", n.Value, strings.Join(allowed, ", "))
			}
		}
		return
	case reflect.Bool:
		var b bool
		if err = n.Decode(&b); err == nil {
			v.SetBool(b)
			return
		}
		d.errorf(n, path, "%q: want true or false", n.Value)
	case reflect.Int, reflect.Int32, reflect.Int64:
		var x int64
		if err = n.Decode(&x); err == nil && !v.OverflowInt(x) {
			v.SetInt(x)
			return
		}
		d.errorf(n, path, "%q: want a whole number", n.Value)
	case reflect.Uint64:
		var x uint64
		if err = n.Decode(&x); err == nil {
			v.SetUint(x)
			return
		}
		d.errorf(n, path, "%q: want a whole number >= 0", n.Value)
	case reflect.Float64:
		var x float64
		if err = n.Decode(&x); err == nil {
			v.SetFloat(x)
			return
		}
		d.errorf(n, path, "%q: want a number", n.Value)
	default:
		d.errorf(n, path, "unsupported field type %s", v.Type())
	}
}

func (d *decoder) decodeExpect(n *yaml.Node, e *Expect, path string) {
	allowed := expectNames()
	*e = Expect{}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == "holds" {
			e.Holds = true
			return
		}
		d.errorf(n, path, "%q: want `holds` or a list of names from %s", n.Value, strings.Join(allowed, ", "))
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.errorf(n, path, "empty list: want `holds`, or at least one name from %s", strings.Join(allowed, ", "))
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case item.Kind != yaml.ScalarNode:
				d.errorf(item, p, "got %s: want a name from %s", kindName(item), strings.Join(allowed, ", "))
			case item.Value == "holds":
				e.Holds = true
			case !slices.Contains(allowed, item.Value):
				d.errorf(item, p, "%q is not allowed: want one of %s", item.Value, strings.Join(allowed, ", "))
			default:
				e.Found = append(e.Found, item.Value)
			}
		}
	default:
		d.errorf(n, path, "got %s: want `holds` or a list of names from %s", kindName(n), strings.Join(allowed, ", "))
	}
}
