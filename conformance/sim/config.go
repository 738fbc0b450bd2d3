// Package sim runs the reference broker as a whole cluster in one goroutine:
// the controller, N brokers, the clients, the network, the disks and the
// clock, with every random choice drawn from one seed. The same Config runs
// the same way, event for event, so any failure replays exactly.
//
// After every step (one delivered message, one timer) the simulator checks
// the protocol invariants of SEMANTICS.md on the cluster's global state and
// stops at the first violation, keeping the steps that led to it.
package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/broker"
	refclient "github.com/watermarkhq/watermark/impl/client"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// Config describes one run completely.
type Config struct {
	Seed    uint64
	Brokers int
	Topics  []Topic

	Broker     BrokerSettings
	Controller controller.Config
	Network    Network

	// TickMs is the period of every node's timer.
	TickMs int64
	// DurationMs is how long the workload and the nemesis run; then all
	// faults heal and the run settles for SettleMs before it ends.
	DurationMs int64
	SettleMs   int64

	Workload Workload
	// Faults is a fixed schedule; Nemesis adds random faults.
	Faults  []Fault
	Nemesis Nemesis
	// Failpoints fire inside brokers at exact points of the protocol.
	Failpoints []Failpoint
	// RestartAfterMs is how long a crashed or powered-off broker stays down.
	RestartAfterMs int64

	// MaxSteps bounds a run (0: no bound); TraceTail is how many of the last
	// steps a violation report shows.
	MaxSteps  int
	TraceTail int
	// ContinueAfterViolation keeps running after an invariant fails, so the
	// clients' history shows what the failure did (each invariant is
	// reported once, at its first failure). By default a run stops there.
	ContinueAfterViolation bool
	// ValidateProtocol checks every replication step of the run against
	// spec/protocol's model (trace validation, protocoltrace.go); the
	// verdict is Result.Protocol. It slows a run down several times.
	ValidateProtocol bool
	// ProtocolModel, when set, is the model variant trace validation
	// judges the run by, instead of the one matching the brokers' own
	// configuration (to show that validation catches a broker that does
	// not follow the model).
	ProtocolModel *protocol.Variant `json:",omitempty"`
	// NoFinalRead skips the read of every partition to its end after the
	// faults heal.
	NoFinalRead bool
}

// Topic is created at the start of the run.
type Topic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int
}

// BrokerSettings are the protocol settings every broker runs with.
type BrokerSettings struct {
	MinInsyncReplicas      int
	Truncation             partition.Truncation
	ReplicaLagTimeMaxMs    int64
	ReplicaFetchWaitMaxMs  int64
	RequestTimeoutMs       int64
	HeartbeatIntervalMs    int64
	HWCheckpointIntervalMs int64
	FlushEveryAppend       bool
	FlushIntervalMs        int64
	AdvanceHWBelowMinISR   bool
	ProducerState          partition.ProducerState
}

// Network shapes message delivery.
type Network struct {
	MinDelayMs int64
	MaxDelayMs int64   // delays are uniform in [Min, Max]: this also reorders
	DropRate   float64 // probability that a message is lost
	// ResponseDropRate is the probability that a broker's answer to a
	// produce is lost on top of DropRate: the write took effect, the
	// producer cannot know, and retries (the at-least-once and
	// exactly-once cases).
	ResponseDropRate float64
}

// Workload is what the simulated clients do.
type Workload struct {
	Producers         int
	Consumers         int
	Acks              partition.Acks
	ProduceIntervalMs int64
	RequestTimeoutMs  int64 // the broker's produce timeout; clients wait a little longer
	FetchMaxWaitMs    int64
	// The reference producer's settings (impl/client): idempotence,
	// retries, batches in flight per partition (0: 1), and how long a send
	// may take in all (0: three request timeouts).
	Idempotent        bool
	Retries           bool
	MaxInFlight       int
	DeliveryTimeoutMs int64
	// UnsafeAnyAcks allows idempotence with acks other than all (repros only).
	UnsafeAnyAcks bool

	// Group consumers: members of Group running the reference consumer
	// (impl/client) subscribed to every topic, with an application that
	// processes ProcessPerTick records a tick and commits per CommitMode.
	GroupConsumers           int
	Group                    string
	CommitMode               CommitMode
	Assignor                 string // range (default) or roundrobin
	ConsumerSessionTimeoutMs int64  // 0: the consumer's default
	FetchMinBytes            int    // 0: 1
	ProcessPerTick           int    // 0: 1
	// SeekBackEveryMs makes each group consumer seek every partition it
	// holds 5 records back this often, to re-read them (0: never).
	SeekBackEveryMs int64
}

// DefaultConfig is the strong-consistency recipe of SEMANTICS.md on three
// brokers: RF 3, min ISR 2, acks=all, truncation=epoch, no unclean election.
func DefaultConfig(seed uint64) Config {
	return Config{
		Seed:    seed,
		Brokers: 3,
		Topics:  []Topic{{Name: "t", Partitions: 2, ReplicationFactor: 3}},
		Broker: BrokerSettings{
			MinInsyncReplicas:      2,
			Truncation:             partition.TruncateToEpoch,
			ReplicaLagTimeMaxMs:    3000,
			ReplicaFetchWaitMaxMs:  200,
			RequestTimeoutMs:       2000,
			HeartbeatIntervalMs:    200,
			HWCheckpointIntervalMs: 1000,
		},
		Controller: controller.Config{SessionTimeoutMs: 1500},
		Network:    Network{MinDelayMs: 1, MaxDelayMs: 5},
		TickMs:     20,
		DurationMs: 20000,
		SettleMs:   10000,
		Workload: Workload{
			Producers:         2,
			Consumers:         1,
			Acks:              partition.AcksAll,
			ProduceIntervalMs: 20,
			RequestTimeoutMs:  3000,
			FetchMaxWaitMs:    200,
			Idempotent:        true,
			Retries:           true,
			MaxInFlight:       5,
		},
		RestartAfterMs: 1000,
		TraceTail:      60,
	}
}

// Validate reports what is wrong with c, all at once.
func (c *Config) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.Brokers < 1 || c.Brokers >= int(broker.ClientIDBase)-1 {
		bad("brokers = %d: want 1..%d", c.Brokers, broker.ClientIDBase-2)
	}
	if len(c.Topics) == 0 {
		bad("no topics: want at least one")
	}
	for _, t := range c.Topics {
		if t.Partitions < 1 || t.ReplicationFactor < 1 || t.ReplicationFactor > c.Brokers {
			bad("topic %q: %d partitions, replication factor %d: want partitions >= 1 and 1 <= RF <= brokers (%d)",
				t.Name, t.Partitions, t.ReplicationFactor, c.Brokers)
		}
	}
	if c.TickMs <= 0 {
		bad("tick = %d ms: want > 0", c.TickMs)
	}
	if c.DurationMs < 0 || c.SettleMs < 0 {
		bad("duration %d ms, settle %d ms: want >= 0", c.DurationMs, c.SettleMs)
	}
	if c.Network.MinDelayMs < 0 || c.Network.MaxDelayMs < c.Network.MinDelayMs {
		bad("network delay [%d, %d] ms: want 0 <= min <= max", c.Network.MinDelayMs, c.Network.MaxDelayMs)
	}
	if c.Network.DropRate < 0 || c.Network.DropRate >= 1 {
		bad("drop rate %g: want 0 <= rate < 1", c.Network.DropRate)
	}
	if c.Network.ResponseDropRate < 0 || c.Network.ResponseDropRate >= 1 {
		bad("response drop rate %g: want 0 <= rate < 1", c.Network.ResponseDropRate)
	}
	if c.RestartAfterMs <= 0 {
		bad("restart after %d ms: want > 0", c.RestartAfterMs)
	}
	if c.Workload.Producers < 0 || c.Workload.Consumers < 0 {
		bad("workload: %d producers, %d consumers: want >= 0", c.Workload.Producers, c.Workload.Consumers)
	}
	if c.Workload.Producers > 0 && (c.Workload.ProduceIntervalMs <= 0 || c.Workload.RequestTimeoutMs <= 0) {
		bad("workload: produce interval %d ms, request timeout %d ms: want > 0",
			c.Workload.ProduceIntervalMs, c.Workload.RequestTimeoutMs)
	}
	if c.Workload.Producers > 0 {
		if err := c.producerConfig().Validate(); err != nil {
			bad("workload: %v", err)
		}
	}
	if w := c.Workload; w.GroupConsumers < 0 {
		bad("workload: %d group consumers: want >= 0", w.GroupConsumers)
	} else if w.GroupConsumers > 0 {
		if w.Group == "" {
			bad("workload: group consumers without a group: set Workload.Group")
		}
		if !slices.Contains(CommitModes, w.CommitMode) {
			bad("workload: commit mode %q: want one of %q", w.CommitMode, CommitModes)
		}
		if err := c.consumerConfig([]string{"t"}).Validate(); err != nil {
			bad("workload: %v", err)
		}
	}
	for i, f := range c.Faults {
		if err := f.validate(c.Brokers); err != nil {
			bad("fault %d: %v", i, err)
		}
		if f.Kind == FaultRestartProducer && (f.Node < 0 || f.Node >= c.Workload.Producers) {
			bad("fault %d: restart of producer %d: producers are 0..%d", i, f.Node, c.Workload.Producers-1)
		}
		if f.Kind == FaultCrashConsumer && (f.Node < 0 || f.Node >= c.Workload.GroupConsumers) {
			bad("fault %d: crash of group consumer %d: group consumers are 0..%d", i, f.Node, c.Workload.GroupConsumers-1)
		}
	}
	seen := map[string]bool{}
	for i, fp := range c.Failpoints {
		if err := fp.validate(c.Brokers); err != nil {
			bad("failpoint %d: %v", i, err)
		}
		if seen[fp.Name] {
			bad("failpoint %d: %s is configured twice; a failpoint has one term per run", i, fp.Name)
		}
		seen[fp.Name] = true
	}
	if _, err := c.brokerConfig(1); err != nil {
		bad("%v", err)
	}
	if err := c.Controller.Validate(); err != nil {
		bad("controller: %v", err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid simulation config:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// brokerConfig is the configuration of broker id.
func (c *Config) brokerConfig(id int) (broker.Config, error) {
	return c.Broker.BrokerConfig(id, GroupSettings())
}

// BrokerConfig is the configuration of broker id under s, with groups'
// coordinator settings.
func (s BrokerSettings) BrokerConfig(id int, groups broker.GroupConfig) (broker.Config, error) {
	p := partition.DefaultConfig(int32(id))
	p.MinInsyncReplicas = s.MinInsyncReplicas
	p.Truncation = s.Truncation
	p.ReplicaLagTimeMaxMs = s.ReplicaLagTimeMaxMs
	p.ReplicaFetchWaitMaxMs = s.ReplicaFetchWaitMaxMs
	p.RequestTimeoutMs = s.RequestTimeoutMs
	p.AdvanceHWBelowMinISR = s.AdvanceHWBelowMinISR
	p.ProducerState = s.ProducerState
	cfg := broker.Config{
		ID:                     broker.NodeID(id),
		Partition:              p,
		HeartbeatIntervalMs:    s.HeartbeatIntervalMs,
		HWCheckpointIntervalMs: s.HWCheckpointIntervalMs,
		FlushEveryAppend:       s.FlushEveryAppend,
		FlushIntervalMs:        s.FlushIntervalMs,
		Groups:                 groups,
	}
	return cfg, cfg.Validate()
}

// GroupSettings are the group coordinator settings of the simulated
// brokers and of real clusters the harness starts: Kafka's, but with
// session timeouts down to 100 ms allowed, for runs of seconds, and 3
// offsets partitions, so that groups spread over brokers.
func GroupSettings() broker.GroupConfig {
	return broker.GroupConfig{
		OffsetsTopicPartitions:        3,
		OffsetsTopicReplicationFactor: 3,
		CommitTimeoutMs:               5000,
		Coordinator:                   group.Config{MinSessionTimeoutMs: 100, MaxSessionTimeoutMs: 1_800_000},
	}
}

// GroupPartition is the offsets-topic partition that coordinates group g
// under GroupSettings.
func GroupPartition(g string) kafka.TopicPartition {
	return kafka.TopicPartition{Topic: broker.OffsetsTopic, Partition: group.PartitionFor(g, GroupSettings().OffsetsTopicPartitions)}
}

// producerConfig is the reference producer's configuration for the workload.
func (c *Config) producerConfig() refclient.Config {
	w := c.Workload
	pc := refclient.DefaultConfig()
	pc.Acks = w.Acks
	pc.Idempotent = w.Idempotent
	pc.Retries = w.Retries
	pc.UnsafeAnyAcks = w.UnsafeAnyAcks
	pc.MaxInFlight = max(w.MaxInFlight, 1)
	pc.RequestTimeoutMs = w.RequestTimeoutMs
	// Wait for an answer a little past the broker's own timeout, and at
	// least twice the network's worst delay.
	pc.ResponseSlackMs = max(1000, 2*(c.Network.MaxDelayMs+c.Network.MinDelayMs)+100)
	pc.DeliveryTimeoutMs = w.DeliveryTimeoutMs
	if pc.DeliveryTimeoutMs == 0 {
		pc.DeliveryTimeoutMs = 3 * w.RequestTimeoutMs
	}
	for id := 1; id <= c.Brokers; id++ {
		pc.Bootstrap = append(pc.Bootstrap, int32(id))
	}
	return pc
}
