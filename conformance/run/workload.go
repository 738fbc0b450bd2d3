package run

import (
	"fmt"
	"slices"

	"github.com/watermarkhq/watermark/impl/settings"
)

// Workload is what the harness's clients do: producers writing unique
// values round-robin over the partitions, plain consumers reading them,
// and group consumers, all recorded in the run's history.
type Workload struct {
	Producers         int           `yaml:"producers"`
	Consumers         int           `yaml:"consumers"`
	Acks              settings.Acks `yaml:"acks"`
	ProduceIntervalMs int64         `yaml:"produce_interval_ms"`
	// RequestTimeoutMs is the broker's produce timeout; clients wait a
	// little longer.
	RequestTimeoutMs int64 `yaml:"request_timeout_ms"`
	FetchMaxWaitMs   int64 `yaml:"fetch_max_wait_ms"`
	// The reference producer's settings (conformance/kitclient): idempotence,
	// retries, batches in flight per partition (0: 1), and how long a send
	// may take in all (0: three request timeouts).
	Idempotent        bool  `yaml:"idempotence"`
	Retries           bool  `yaml:"retries"`
	MaxInFlight       int   `yaml:"max_in_flight"`
	DeliveryTimeoutMs int64 `yaml:"delivery_timeout_ms"`
	// UnsafeAnyAcks allows idempotence with acks other than all (repros only).
	UnsafeAnyAcks bool `yaml:"unsafe_any_acks"`

	// Group consumers: members of Group running the reference consumer
	// (conformance/kitclient) subscribed to every topic, with an application that
	// processes ProcessPerTick records a tick and commits per CommitMode.
	GroupConsumers int        `yaml:"group_consumers"`
	Group          string     `yaml:"group"`
	CommitMode     CommitMode `yaml:"commit_mode"`
	// Assignor is range (the default when empty) or roundrobin.
	Assignor string `yaml:"assignor" one_of:"assignor"`
	// ConsumerSessionTimeoutMs is the members' session.timeout.ms (0: the
	// consumer's default).
	ConsumerSessionTimeoutMs int64 `yaml:"consumer_session_timeout_ms"`
	FetchMinBytes            int   `yaml:"fetch_min_bytes"`  // 0: 1
	ProcessPerTick           int   `yaml:"process_per_tick"` // 0: 1
	// SeekBackEveryMs makes each group consumer seek every partition it
	// holds 5 records back this often, to re-read them (0: never).
	SeekBackEveryMs int64 `yaml:"seek_back_every_ms"`
	// ListOffsetsEveryMs makes each plain consumer look its partitions'
	// offsets up this often, latest and earliest in turn, between its
	// fetches: answers given while a leader's HW is below its LEO, or
	// while retention moves its log start (0: never).
	ListOffsetsEveryMs int64 `yaml:"list_offsets_every_ms,omitempty"`
	// ValuePrefix starts every value the producers write: the run's own
	// id on a cluster the harness does not own afresh (--target kafka),
	// so that another run's records read back are foreign, never taken
	// for this run's (empty: values are c<client>-<n>).
	ValuePrefix string `yaml:"value_prefix,omitempty"`
}

// CommitMode is when a group consumer commits what it consumed.
type CommitMode string

// Commit modes: the consumer side of spec/SEMANTICS.md's delivery levels.
const (
	// CommitNone never commits.
	CommitNone CommitMode = ""
	// CommitBeforeProcess commits a batch's next offset first and
	// processes the batch only once the commit is accepted: a crash
	// between the two loses the batch (at-most-once).
	CommitBeforeProcess CommitMode = "before-process"
	// CommitAfterProcess processes a batch, then commits its next
	// offset: a crash between the two processes it again (at-least-once).
	CommitAfterProcess CommitMode = "after-process"
)

// CommitModes lists the modes.
var CommitModes = []CommitMode{CommitNone, CommitBeforeProcess, CommitAfterProcess}

// String names the mode as run files do ("none" for CommitNone).
func (m CommitMode) String() string {
	if m == CommitNone {
		return "none"
	}
	return string(m)
}

// Values lists the names a CommitMode takes.
func (CommitMode) Values() []string {
	return []string{"none", string(CommitBeforeProcess), string(CommitAfterProcess)}
}

// MarshalText writes the mode's name.
func (m CommitMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads one of Values.
func (m *CommitMode) UnmarshalText(b []byte) error {
	for _, c := range CommitModes {
		if c.String() == string(b) {
			*m = c
			return nil
		}
	}
	return fmt.Errorf("unknown commit mode %q: want one of %v", b, CommitMode("").Values())
}

// Assignors are the values Workload.Assignor takes.
var Assignors = []string{"", settings.AssignorRange, settings.AssignorRoundRobin}

func (s *Spec) validateWorkload() []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	w := s.Workload
	if w.Producers < 0 || w.Consumers < 0 {
		bad("workload: %d producers, %d consumers: want >= 0", w.Producers, w.Consumers)
	}
	if w.Producers > 0 && (w.ProduceIntervalMs <= 0 || w.RequestTimeoutMs <= 0) {
		bad("workload: produce interval %d ms, request timeout %d ms: want > 0", w.ProduceIntervalMs, w.RequestTimeoutMs)
	}
	if w.Producers > 0 {
		if err := s.ProducerConfig().Validate(); err != nil {
			bad("workload: %v", err)
		}
	}
	if w.GroupConsumers < 0 {
		bad("workload: %d group consumers: want >= 0", w.GroupConsumers)
	} else if w.GroupConsumers > 0 {
		if w.Group == "" {
			bad("workload: group consumers without a group: set workload.group")
		}
		if !slices.Contains(CommitModes, w.CommitMode) {
			bad("workload: commit mode %q: want one of %v", w.CommitMode, CommitMode("").Values())
		}
		if err := s.ConsumerConfig().Validate(); err != nil {
			bad("workload: %v", err)
		}
	}
	return errs
}

// ProducerConfig is the reference producer's configuration for the
// workload (conformance/kitclient.Config).
func (s *Spec) ProducerConfig() settings.Producer {
	w := s.Workload
	pc := settings.DefaultProducer()
	pc.Acks = w.Acks
	pc.Idempotent = w.Idempotent
	pc.Retries = w.Retries
	pc.UnsafeAnyAcks = w.UnsafeAnyAcks
	pc.MaxInFlight = max(w.MaxInFlight, 1)
	pc.RequestTimeoutMs = w.RequestTimeoutMs
	// Wait for an answer a little past the broker's own timeout, and at
	// least twice the network's worst delay.
	pc.ResponseSlackMs = max(1000, 2*(s.Network.MaxDelayMs+s.Network.MinDelayMs)+100)
	pc.DeliveryTimeoutMs = w.DeliveryTimeoutMs
	if pc.DeliveryTimeoutMs == 0 {
		pc.DeliveryTimeoutMs = 3 * w.RequestTimeoutMs
	}
	for id := 1; id <= s.Brokers; id++ {
		pc.Bootstrap = append(pc.Bootstrap, int32(id))
	}
	return pc
}

// ConsumerConfig is the reference consumer's configuration for a group
// member of the workload, subscribed to every topic
// (conformance/kitclient.ConsumerConfig).
func (s *Spec) ConsumerConfig() settings.Consumer {
	w := s.Workload
	cc := settings.DefaultConsumer()
	cc.Group = w.Group
	for _, t := range s.Topics {
		cc.Topics = append(cc.Topics, t.Name)
	}
	if w.Assignor != "" {
		cc.Assignor = w.Assignor
	}
	cc.AutoOffsetReset = settings.ResetEarliest
	if w.ConsumerSessionTimeoutMs > 0 {
		cc.SessionTimeoutMs = w.ConsumerSessionTimeoutMs
		cc.RebalanceTimeoutMs = w.ConsumerSessionTimeoutMs
		cc.HeartbeatIntervalMs = max(w.ConsumerSessionTimeoutMs/6, 1)
	}
	if w.FetchMaxWaitMs > 0 {
		cc.FetchMaxWaitMs = w.FetchMaxWaitMs
	}
	if w.FetchMinBytes > 0 {
		cc.FetchMinBytes = w.FetchMinBytes
	}
	for id := 1; id <= s.Brokers; id++ {
		cc.Bootstrap = append(cc.Bootstrap, int32(id))
	}
	return cc
}
