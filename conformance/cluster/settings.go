package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/conformance/sim"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/partition"
)

// Settings are the protocol settings of a real cluster: every broker runs
// with the same ones, and the controller with its own part. The defaults
// (DefaultSettings) are Kafka's strong-consistency recipe with timeouts
// shrunk for tests on one machine.
type Settings struct {
	// The brokers' protocol settings, the simulator's own type: a case's
	// settings carry over to a real cluster as they are.
	sim.BrokerSettings
	// Group coordinators: the offsets topic's partitions and replication
	// factor, and the shortest session.timeout.ms a member may ask for.
	OffsetsTopicPartitions        int32
	OffsetsTopicReplicationFactor int
	GroupMinSessionTimeoutMs      int64

	// The controller's settings.
	SessionTimeoutMs      int64
	UncleanLeaderElection bool
	KeepISROnRestart      bool
	AutoLeaderRebalance   bool
}

// DefaultSettings: min ISR 2, truncation to the leader epoch, heartbeat
// 100 ms, session timeout 1500 ms, replica lag 3000 ms, replica fetch wait
// 200 ms, request timeout 2000 ms, HW checkpoint every 1000 ms, no unclean
// election.
func DefaultSettings() Settings {
	return Settings{
		BrokerSettings: sim.BrokerSettings{
			MinInsyncReplicas:      2,
			Truncation:             partition.TruncateToEpoch,
			ReplicaLagTimeMaxMs:    3000,
			ReplicaFetchWaitMaxMs:  200,
			RequestTimeoutMs:       2000,
			HeartbeatIntervalMs:    100,
			HWCheckpointIntervalMs: 1000,
			ProducerState:          partition.ProducerStateReplicated,
		},
		SessionTimeoutMs: 1500,

		OffsetsTopicPartitions:        3,
		OffsetsTopicReplicationFactor: 3,
		GroupMinSessionTimeoutMs:      100,
	}
}

// BrokerConfig is the configuration of broker id under s.
func (s Settings) BrokerConfig(id int) (broker.Config, error) {
	return s.BrokerSettings.BrokerConfig(id, broker.GroupConfig{
		OffsetsTopicPartitions:        s.OffsetsTopicPartitions,
		OffsetsTopicReplicationFactor: s.OffsetsTopicReplicationFactor,
		Coordinator: group.Config{
			MinSessionTimeoutMs: max(s.GroupMinSessionTimeoutMs, 1),
			MaxSessionTimeoutMs: group.DefaultConfig().MaxSessionTimeoutMs,
		},
	})
}

// ControllerConfig is the controller's configuration under s.
func (s Settings) ControllerConfig() (controller.Config, error) {
	cfg := controller.Config{
		SessionTimeoutMs:      s.SessionTimeoutMs,
		UncleanLeaderElection: s.UncleanLeaderElection,
		AutoLeaderRebalance:   s.AutoLeaderRebalance,
		KeepISROnRestart:      s.KeepISROnRestart,
	}
	return cfg, cfg.Validate()
}

// Validate reports what is wrong with s, all at once.
func (s Settings) Validate() error {
	var errs []error
	if _, err := s.BrokerConfig(1); err != nil {
		errs = append(errs, fmt.Errorf("broker settings: %w", err))
	}
	if _, err := s.ControllerConfig(); err != nil {
		errs = append(errs, fmt.Errorf("controller settings: %w", err))
	}
	return errors.Join(errs...)
}

// BrokerArgs are the `watermark serve` flags that give a broker s.
func (s Settings) BrokerArgs() []string {
	return []string{
		"--min-insync-replicas=" + strconv.Itoa(s.MinInsyncReplicas),
		"--truncation=" + s.Truncation.String(),
		"--replica-lag-time-max-ms=" + itoa(s.ReplicaLagTimeMaxMs),
		"--replica-fetch-wait-max-ms=" + itoa(s.ReplicaFetchWaitMaxMs),
		"--request-timeout-ms=" + itoa(s.RequestTimeoutMs),
		"--heartbeat-interval-ms=" + itoa(s.HeartbeatIntervalMs),
		"--hw-checkpoint-interval-ms=" + itoa(s.HWCheckpointIntervalMs),
		"--flush-every-append=" + strconv.FormatBool(s.FlushEveryAppend),
		"--flush-interval-ms=" + itoa(s.FlushIntervalMs),
		"--advance-hw-below-min-isr=" + strconv.FormatBool(s.AdvanceHWBelowMinISR),
		"--producer-state=" + s.ProducerState.String(),
		"--offsets-topic-partitions=" + strconv.Itoa(int(s.OffsetsTopicPartitions)),
		"--offsets-topic-replication-factor=" + strconv.Itoa(s.OffsetsTopicReplicationFactor),
		"--group-min-session-timeout-ms=" + itoa(s.GroupMinSessionTimeoutMs),
	}
}

// ControllerArgs are the `watermark serve --role controller` flags that
// give the controller s.
func (s Settings) ControllerArgs() []string {
	return []string{
		"--session-timeout-ms=" + itoa(s.SessionTimeoutMs),
		"--unclean-leader-election=" + strconv.FormatBool(s.UncleanLeaderElection),
		"--keep-isr-on-restart=" + strconv.FormatBool(s.KeepISROnRestart),
		"--auto-leader-rebalance=" + strconv.FormatBool(s.AutoLeaderRebalance),
	}
}

// String is s as flags, for logs and reports.
func (s Settings) String() string {
	return strings.Join(append(s.BrokerArgs(), s.ControllerArgs()...), " ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
