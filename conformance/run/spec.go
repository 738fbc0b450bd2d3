package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// Spec describes one run completely: the same Spec runs the same way on
// the simulator, event for event.
type Spec struct {
	Seed     uint64 `yaml:"seed"`
	Cluster  `yaml:"cluster"`
	Settings `yaml:",inline"`
	Network  Network  `yaml:"network"`
	Workload Workload `yaml:"workload"`

	// TickMs is the period of every node's timer.
	TickMs int64 `yaml:"tick_ms"`
	// DurationMs is how long the workload and the nemesis run; then all
	// faults heal and the run settles for SettleMs before it ends.
	DurationMs int64 `yaml:"duration_ms"`
	SettleMs   int64 `yaml:"settle_ms"`
	// RestartAfterMs is how long a crashed or powered-off broker stays down.
	RestartAfterMs int64 `yaml:"restart_after_ms"`

	// Faults is a fixed schedule; Nemesis adds random faults.
	Faults []Fault `yaml:"faults"`
	// Failpoints fire inside brokers at exact points of the protocol.
	Failpoints []Failpoint `yaml:"failpoints"`
	Nemesis    Nemesis     `yaml:"nemesis"`

	// MaxSteps bounds a run (0: no bound); TraceTail is how many of the last
	// steps a violation report shows.
	MaxSteps  int `yaml:"max_steps"`
	TraceTail int `yaml:"trace_tail"`
	// ContinueAfterViolation keeps running after an invariant fails, so the
	// clients' history shows what the failure did (each invariant is
	// reported once, at its first failure). By default a run stops there.
	ContinueAfterViolation bool `yaml:"continue_after_violation"`
	// NoFinalRead skips the read of every partition to its end after the
	// faults heal.
	NoFinalRead bool `yaml:"no_final_read"`
	// ValidateProtocol checks every replication step of the run against
	// spec/protocol's model (trace validation); the verdict is
	// Result.Protocol. It slows a run down several times.
	ValidateProtocol bool `yaml:"validate_protocol,omitempty"`
	// ProtocolModel, when set, is the model variant trace validation
	// judges the run by, instead of the one matching the brokers' own
	// settings (to show that validation catches a broker that does not
	// follow the model). Not part of run files.
	ProtocolModel *protocol.Variant `yaml:"-" json:",omitempty"`
}

// Cluster is the cluster's shape.
type Cluster struct {
	Brokers int     `yaml:"brokers"`
	Topics  []Topic `yaml:"topics"`
}

// Topic is created at the start of the run.
type Topic struct {
	Name              string `yaml:"name"`
	Partitions        int32  `yaml:"partitions"`
	ReplicationFactor int    `yaml:"replication_factor"`
}

// Settings are a cluster's protocol settings: every broker's and the
// controller's.
type Settings struct {
	Broker     settings.Broker     `yaml:"broker"`
	Controller settings.Controller `yaml:"controller"`
	// Quorum is the controller quorum: how many voters, where they run,
	// and their elections' timing.
	Quorum settings.Quorum `yaml:"quorum"`
}

// Network shapes message delivery.
type Network struct {
	MinDelayMs int64 `yaml:"min_delay_ms"`
	// MaxDelayMs: delays are uniform in [MinDelayMs, MaxDelayMs]. Each
	// link (from one node to another) keeps its messages in order, as a
	// TCP connection does; messages on different links overtake each
	// other. A messages fault's reorder breaks a link's order.
	MaxDelayMs int64 `yaml:"max_delay_ms"`
	// DropRate is the probability that a message is lost.
	DropRate float64 `yaml:"drop_rate"`
	// ResponseDropRate is the probability that a broker's answer to a
	// produce is lost on top of DropRate: the write took effect, the
	// producer cannot know, and retries (the at-least-once and
	// exactly-once cases).
	ResponseDropRate float64 `yaml:"response_drop_rate"`
	// ResponseDropPart limits the loss of answers to this first part of
	// the workload (0.6: its first 60%; 0: the whole run), so that every
	// retry can get its answer before the run ends, whatever its length.
	ResponseDropPart float64 `yaml:"response_drop_part"`
}

// DropsAnswer reports whether the answer to a produce sent at now is
// lost by Network.ResponseDropRate, drawing from rng.
func (s *Spec) DropsAnswer(now int64, rng interface{ Float64() float64 }) bool {
	n := s.Network
	if n.ResponseDropRate <= 0 || (n.ResponseDropPart > 0 && float64(now) >= n.ResponseDropPart*float64(s.DurationMs)) {
		return false
	}
	return rng.Float64() < n.ResponseDropRate
}

// DefaultSettings are the settings the harness runs the reference with:
// the strong-consistency recipe of spec/SEMANTICS.md (min ISR 2,
// truncation to the leader epoch, no unclean election) with Kafka's
// timeouts shrunk so that a run of seconds sees failures and recoveries:
// heartbeat 200 ms, session 1500 ms, replica lag 3000 ms, replica fetch
// wait 200 ms, request timeout 2000 ms, HW checkpoint every 1000 ms, an
// unclean recovery's wait for answers (off by default) 2000 ms, sessions
// of group members down to 100 ms, and 3 offsets partitions so that
// groups spread over brokers. `watermark serve --fast` and
// `watermark cluster --fast` take them; without --fast they take
// KafkaSettings.
func DefaultSettings() Settings {
	b := settings.DefaultBroker()
	b.MinInsyncReplicas = 2
	b.Truncation = settings.TruncateToEpoch
	b.ReplicaLagTimeMaxMs = 3000
	b.ReplicaFetchWaitMaxMs = 200
	b.RequestTimeoutMs = 2000
	b.HeartbeatIntervalMs = 200
	b.HWCheckpointIntervalMs = 1000
	b.ControlledShutdownTimeoutMs = 5000
	b.OffsetsTopicPartitions = 3
	b.OffsetsTopicReplicationFactor = 3
	b.OffsetsCommitTimeoutMs = 5000
	b.Config = settings.Group{MinSessionTimeoutMs: 100, MaxSessionTimeoutMs: 1_800_000}
	return Settings{Broker: b, Controller: settings.Controller{SessionTimeoutMs: 1500, UncleanRecoveryTimeoutMs: 2000}, Quorum: FastQuorum()}
}

// FastQuorum is one voter with KRaft's quorum timing shrunk as
// DefaultSettings shrinks the brokers': a voter campaigns after 500 ms
// without its leader (plus up to 250 ms), the leader sends every 100 ms,
// and a snapshot every 100 entries, so that runs of seconds see
// elections and snapshots.
func FastQuorum() settings.Quorum {
	return settings.Quorum{Voters: 1, ElectionTimeoutMs: 500, ElectionBackoffMaxMs: 250, HeartbeatMs: 100, SnapshotEntries: 100}
}

// KafkaSettings are the strong recipe's safety settings (min ISR 2,
// truncation epoch, no unclean election) with Kafka's own timeouts, the
// defaults of `watermark serve` and `watermark cluster`: heartbeat 2 s
// (broker.heartbeat.interval.ms), session 9 s (broker.session.timeout.ms),
// replica lag 30 s, replica fetch wait 500 ms, request timeout 30 s, HW
// checkpoint 5 s, 50 offsets partitions, group sessions from 6 s
// (group.min.session.timeout.ms), an unclean recovery's wait 5 min
// (KIP-966's unclean.recovery.timeout.ms). On a busy machine a session of
// 1.5 s expires brokers that are only slow; these do not. DefaultSettings
// are the fast ones, for runs of seconds (serve --fast).
func KafkaSettings() Settings {
	s := DefaultSettings()
	b := &s.Broker
	b.HeartbeatIntervalMs = 2000
	b.ReplicaLagTimeMaxMs = 30000
	b.ReplicaFetchWaitMaxMs = 500
	b.RequestTimeoutMs = 30000
	b.HWCheckpointIntervalMs = 5000
	b.ControlledShutdownTimeoutMs = settings.DefaultBroker().ControlledShutdownTimeoutMs
	b.OffsetsTopicPartitions = 50
	b.Config.MinSessionTimeoutMs = 6000
	s.Controller.SessionTimeoutMs = settings.DefaultController().SessionTimeoutMs
	s.Controller.UncleanRecoveryTimeoutMs = settings.DefaultController().UncleanRecoveryTimeoutMs
	s.Quorum = settings.DefaultQuorum()
	return s
}

// ControllerConfig is the controller's config with what it takes from the
// brokers' settings: the min ISR of its eligible leader replicas, which
// are sound only while brokers hold their HW below min ISR (none with
// advance_hw_below_min_isr).
func (s Settings) ControllerConfig() settings.Controller {
	c := s.Controller
	c.EligibleMinISR = s.Broker.MinInsyncReplicas
	if s.Broker.AdvanceHWBelowMinISR || s.Controller.NoEligibleLeaders {
		c.EligibleMinISR = 0
	}
	return c
}

// Validate reports what is wrong with s, all at once.
func (s Settings) Validate() error {
	var errs []string
	if err := s.Broker.Validate(); err != nil {
		errs = append(errs, "broker: "+strings.ReplaceAll(err.Error(), "\n", "\n  broker: "))
	}
	if err := s.Controller.Validate(); err != nil {
		errs = append(errs, "controller: "+err.Error())
	}
	if err := s.Quorum.Validate(); err != nil {
		errs = append(errs, "quorum: "+err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n  "))
	}
	return nil
}

// DefaultSpec is the strong-consistency recipe on three brokers (RF 3,
// min ISR 2, acks=all, idempotence, truncation to the leader epoch, no
// unclean election) under the harness's usual workload, with no faults.
func DefaultSpec(seed uint64) Spec {
	return Spec{
		Seed:     seed,
		Cluster:  Cluster{Brokers: 3, Topics: []Topic{{Name: "t", Partitions: 2, ReplicationFactor: 3}}},
		Settings: DefaultSettings(),
		Network:  Network{MinDelayMs: 1, MaxDelayMs: 5},
		TickMs:   20, DurationMs: 20000, SettleMs: 10000,
		Workload: Workload{
			Producers:         2,
			Consumers:         1,
			Acks:              settings.AcksAll,
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

// Partitions lists every topic-partition of the run, in order.
func (s *Spec) Partitions() []kafka.TopicPartition {
	var tps []kafka.TopicPartition
	for _, t := range s.Topics {
		for p := int32(0); p < t.Partitions; p++ {
			tps = append(tps, kafka.TopicPartition{Topic: t.Name, Partition: p})
		}
	}
	return tps
}

// LossByDesign reports whether the run's settings let the controller elect
// a replica that may lack committed records (unclean leader election, or
// KIP-966's unclean recovery): such a run may lose them legitimately, and
// is judged as a case that allows loss is.
func (s *Spec) LossByDesign() bool {
	return s.Controller.UncleanLeaderElection || s.Controller.UncleanRecovery != settings.RecoveryNone
}

// GroupPartition is the offsets-topic partition that coordinates the
// workload's group.
func (s *Spec) GroupPartition() kafka.TopicPartition {
	return kafka.TopicPartition{Topic: kafka.OffsetsTopic, Partition: kafka.OffsetsPartition(s.Workload.Group, s.Broker.OffsetsTopicPartitions)}
}

// Validate reports what is wrong with s, all at once.
func (s *Spec) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if s.Brokers < 1 || s.Brokers >= settings.ClientIDBase-1 {
		bad("brokers = %d: want 1..%d", s.Brokers, settings.ClientIDBase-2)
	}
	if len(s.Topics) == 0 {
		bad("no topics: want at least one")
	}
	for _, t := range s.Topics {
		if t.Partitions < 1 || t.ReplicationFactor < 1 || t.ReplicationFactor > s.Brokers {
			bad("topic %q: %d partitions, replication factor %d: want partitions >= 1 and 1 <= RF <= brokers (%d)",
				t.Name, t.Partitions, t.ReplicationFactor, s.Brokers)
		}
	}
	if s.TickMs <= 0 {
		bad("tick = %d ms: want > 0", s.TickMs)
	}
	if s.DurationMs < 0 || s.SettleMs < 0 {
		bad("duration %d ms, settle %d ms: want >= 0", s.DurationMs, s.SettleMs)
	}
	if s.Network.MinDelayMs < 0 || s.Network.MaxDelayMs < s.Network.MinDelayMs {
		bad("network delay [%d, %d] ms: want 0 <= min <= max", s.Network.MinDelayMs, s.Network.MaxDelayMs)
	}
	if s.Network.DropRate < 0 || s.Network.DropRate >= 1 {
		bad("drop rate %g: want 0 <= rate < 1", s.Network.DropRate)
	}
	if s.Network.ResponseDropPart < 0 || s.Network.ResponseDropPart > 1 {
		bad("response_drop_part %g: want 0..1 (0.6: the first 60%% of the workload; 0: the whole run)", s.Network.ResponseDropPart)
	}
	if s.Network.ResponseDropRate < 0 || s.Network.ResponseDropRate >= 1 {
		bad("response drop rate %g: want 0 <= rate < 1", s.Network.ResponseDropRate)
	}
	if s.RestartAfterMs <= 0 {
		bad("restart after %d ms: want > 0", s.RestartAfterMs)
	}
	errs = append(errs, s.validateWorkload()...)
	for i, f := range s.Faults {
		if err := f.validate(s.Brokers); err != nil {
			bad("fault %d: %v", i, err)
		}
		if f.Kind == FaultRestartProducer && (f.Node < 0 || f.Node >= s.Workload.Producers) {
			bad("fault %d: restart of producer %d: producers are 0..%d", i, f.Node, s.Workload.Producers-1)
		}
		if f.Kind == FaultCrashConsumer && (f.Node < 0 || f.Node >= s.Workload.GroupConsumers) {
			bad("fault %d: crash of group consumer %d: group consumers are 0..%d", i, f.Node, s.Workload.GroupConsumers-1)
		}
	}
	if err := s.Nemesis.validate(s.Brokers); err != nil {
		bad("nemesis: %v", err)
	}
	seen := map[string]bool{}
	for i, fp := range s.Failpoints {
		if err := fp.validate(s.Brokers); err != nil {
			bad("failpoint %d: %v", i, err)
		}
		if seen[fp.Name] {
			bad("failpoint %d: %s is configured twice; a failpoint has one term per run", i, fp.Name)
		}
		seen[fp.Name] = true
	}
	if err := s.Settings.Validate(); err != nil {
		bad("%v", err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid run:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// Clone returns a copy of s that shares nothing with it.
func (s Spec) Clone() Spec {
	s.Topics = slices.Clone(s.Topics)
	s.Faults = slices.Clone(s.Faults)
	for i := range s.Faults {
		if p := s.Faults[i].Partition; p != nil {
			q := *p
			s.Faults[i].Partition = &q
		}
		s.Faults[i].Messages = s.Faults[i].Messages.Clone()
	}
	s.Failpoints = slices.Clone(s.Failpoints)
	s.Nemesis.Kinds = slices.Clone(s.Nemesis.Kinds)
	s.Nemesis.Messages = s.Nemesis.Messages.Clone()
	if s.ProtocolModel != nil {
		m := *s.ProtocolModel
		s.ProtocolModel = &m
	}
	return s
}
