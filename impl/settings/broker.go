package settings

import (
	"errors"
	"fmt"
	"math"
)

// Node ids: the controller is ControllerID, brokers are 1 up to below
// ClientIDBase, and clients use ids from ClientIDBase up
// (impl/broker.NodeID).
const (
	ControllerID = 0
	ClientIDBase = 1000
)

// Broker are a broker's settings (impl/broker.Settings): its replicas'
// protocol settings and its own. A cluster's brokers all run with the
// same. As in Partition, a field's yaml tag names it in run files and as a
// `watermark serve` flag, and its doc tag is its help line.
type Broker struct {
	Partition `yaml:",inline"`
	// HeartbeatIntervalMs is how often the broker tells the controller it
	// lives.
	HeartbeatIntervalMs int64 `yaml:"heartbeat_interval_ms" doc:"how often a broker tells the controller it is alive (broker.heartbeat.interval.ms)"`
	// HWCheckpointIntervalMs is how often HWs are written; 0 writes every
	// change.
	HWCheckpointIntervalMs int64 `yaml:"hw_checkpoint_interval_ms" doc:"how often HWs are checkpointed; 0 writes every change (replica.high.watermark.checkpoint.interval.ms)"`
	// FlushEveryAppend syncs the log after every append. Kafka's default is
	// off: durability comes from replication, and a power loss drops
	// unsynced records.
	FlushEveryAppend bool `yaml:"flush_every_append" doc:"fsync the log after every append (log.flush.interval.messages=1)"`
	// FlushIntervalMs syncs every log this often; 0 never syncs on a timer.
	FlushIntervalMs int64 `yaml:"flush_interval_ms" doc:"fsync every log this often; 0 leaves it to the OS (log.flush.interval.ms)"`
	// ControlledShutdownTimeoutMs bounds how long a stopping broker waits
	// for the controller to move its leaderships (BeginShutdown); past
	// it the broker flushes and stops without them, as Kafka does.
	ControlledShutdownTimeoutMs int64 `yaml:"controlled_shutdown_timeout_ms" doc:"how long a stopping broker waits for the controller to move its leaderships before it stops without them (Kafka: five minutes, no setting)"`
	// LogSegmentBytes, LogIndexIntervalBytes and LogRollMs shape each
	// log's segments (Log, impl/storage.LogConfig).
	LogSegmentBytes       int64 `yaml:"log_segment_bytes" doc:"the most a log segment file holds; the batch that would pass it starts a new one (log.segment.bytes)"`
	LogIndexIntervalBytes int64 `yaml:"log_index_interval_bytes" doc:"bytes of batches between two entries of a segment's offset index (log.index.interval.bytes)"`
	LogRollMs             int64 `yaml:"log_roll_ms" doc:"a batch whose records are this much newer than the segment's first batch starts a new segment (log.roll.ms)"`
	// LogRetentionMs and LogRetentionBytes delete a log's oldest segments
	// (Log, impl/storage.LogConfig), checked every
	// LogRetentionCheckIntervalMs.
	LogRetentionMs              int64 `yaml:"log_retention_ms" doc:"delete a log segment whose records are all this much older than the broker's clock; -1 keeps them (log.retention.ms)"`
	LogRetentionBytes           int64 `yaml:"log_retention_bytes" doc:"delete a log's oldest segments while it holds this many bytes without them; -1 has no limit (log.retention.bytes)"`
	LogRetentionCheckIntervalMs int64 `yaml:"log_retention_check_interval_ms" doc:"how often retention looks for segments to delete (log.retention.check.interval.ms)"`
	// LogVerifyOnStart reads every segment at a start, not only those
	// past the recovery point, so that damage in a synced segment is found
	// (and the data it costs reported) before the replica can lead.
	LogVerifyOnStart bool `yaml:"log_verify_on_start" doc:"read and check every log segment at a start, not only those past the recovery point (Kafka trusts them); off, damage there is found by the read that meets it, and the next start reads every segment"`
	// MessageMaxBytes bounds a produced record batch as it comes on the
	// wire (compressed as the producer sent it), as Kafka's
	// message.max.bytes does; a bigger one is MESSAGE_TOO_LARGE.
	MessageMaxBytes int `yaml:"message_max_bytes" doc:"the largest record batch a broker accepts, as produced, compressed or not; bigger is MESSAGE_TOO_LARGE (message.max.bytes)"`
	BrokerGroups    `yaml:",inline"`
}

// BrokerGroups are the settings of the group coordinators a broker hosts
// and of the offsets topic they keep their state in
// (impl/broker.GroupSettings).
type BrokerGroups struct {
	OffsetsTopicPartitions int32 `yaml:"offsets_topic_partitions" doc:"partitions of __consumer_offsets, created at the first FindCoordinator (offsets.topic.num.partitions)"`
	// OffsetsTopicReplicationFactor: as in Kafka, the topic is not created
	// with fewer replicas while brokers are missing, so groups have no
	// coordinator until that many brokers are up.
	OffsetsTopicReplicationFactor int `yaml:"offsets_topic_replication_factor" doc:"replication factor of __consumer_offsets; groups have no coordinator until that many brokers are up (offsets.topic.replication.factor)"`
	// OffsetsCommitTimeoutMs bounds how long a commit or a group's
	// metadata may wait to be committed in the offsets topic.
	OffsetsCommitTimeoutMs int64 `yaml:"offsets_commit_timeout_ms" doc:"how long a commit may wait for the offsets topic (offsets.commit.timeout.ms)"`
	Config                 `yaml:",inline"`
}

// Config is Group under the name BrokerGroups embeds it by: a broker's
// settings reach their group coordinators' as .Config, as they did when
// they were impl/broker's and the coordinators' impl/group.Config.
type Config = Group

// DefaultMessageMaxBytes is Kafka's default message.max.bytes: 1 MiB and a
// v2 batch's log overhead.
const DefaultMessageMaxBytes = 1048588

// DefaultBroker are Kafka's defaults, but for
// group.initial.rebalance.delay.ms, which is 0 (DefaultGroup).
func DefaultBroker() Broker {
	return Broker{
		Partition:              DefaultPartition(),
		HeartbeatIntervalMs:    2000,
		HWCheckpointIntervalMs: 5000,
		// Kafka 4.1 has no setting for it: BrokerServer waits at most
		// five minutes (KafkaBroker.shutdown), then shuts down anyway.
		ControlledShutdownTimeoutMs: 300_000,
		MessageMaxBytes:             DefaultMessageMaxBytes,
		LogSegmentBytes:             DefaultSegmentBytes,
		LogIndexIntervalBytes:       DefaultIndexIntervalBytes,
		LogRollMs:                   DefaultRollMs,
		LogRetentionMs:              DefaultRetentionMs,
		LogRetentionBytes:           DefaultRetentionBytes,
		// Kafka's log.retention.check.interval.ms: five minutes.
		LogRetentionCheckIntervalMs: 300_000,
		BrokerGroups: BrokerGroups{
			OffsetsTopicPartitions:        50,
			OffsetsTopicReplicationFactor: 3,
			OffsetsCommitTimeoutMs:        5000,
			Config:                        DefaultGroup(),
		},
	}
}

// Validate reports settings a broker cannot run with, all at once.
func (s Broker) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := s.Partition.Validate(); err != nil {
		errs = append(errs, err)
	}
	if s.HeartbeatIntervalMs <= 0 {
		bad("heartbeat_interval_ms must be > 0, got %d", s.HeartbeatIntervalMs)
	}
	if s.ControlledShutdownTimeoutMs <= 0 {
		bad("controlled_shutdown_timeout_ms must be > 0, got %d", s.ControlledShutdownTimeoutMs)
	}
	if s.FlushIntervalMs < 0 {
		bad("flush_interval_ms must be >= 0, got %d", s.FlushIntervalMs)
	}
	if s.MessageMaxBytes <= 0 {
		bad("message_max_bytes must be > 0, got %d (Kafka's default is %d)", s.MessageMaxBytes, DefaultMessageMaxBytes)
	}
	if s.LogSegmentBytes <= 0 || s.LogIndexIntervalBytes <= 0 || s.LogRollMs <= 0 {
		bad("log_segment_bytes, log_index_interval_bytes and log_roll_ms must be > 0, got %d, %d and %d (Kafka's defaults are %d, %d and %d)",
			s.LogSegmentBytes, s.LogIndexIntervalBytes, s.LogRollMs, DefaultSegmentBytes, DefaultIndexIntervalBytes, DefaultRollMs)
	} else if err := s.Log().Validate(); err != nil {
		errs = append(errs, err)
	}
	if s.LogRetentionMs == 0 || s.LogRetentionMs < -1 || s.LogRetentionBytes == 0 || s.LogRetentionBytes < -1 {
		bad("log_retention_ms and log_retention_bytes must be > 0, or -1 for no limit, got %d and %d (Kafka's defaults are %d and %d)",
			s.LogRetentionMs, s.LogRetentionBytes, DefaultRetentionMs, DefaultRetentionBytes)
	}
	if s.LogRetentionCheckIntervalMs <= 0 {
		bad("log_retention_check_interval_ms must be > 0, got %d (Kafka's default is 300000)", s.LogRetentionCheckIntervalMs)
	}
	if s.HWCheckpointIntervalMs < 0 {
		bad("hw_checkpoint_interval_ms must be >= 0, got %d", s.HWCheckpointIntervalMs)
	}
	if s.OffsetsTopicPartitions < 1 {
		bad("offsets_topic_partitions must be >= 1, got %d", s.OffsetsTopicPartitions)
	}
	if s.OffsetsTopicReplicationFactor < 1 {
		bad("offsets_topic_replication_factor must be >= 1, got %d", s.OffsetsTopicReplicationFactor)
	}
	if s.OffsetsCommitTimeoutMs <= 0 {
		bad("offsets_commit_timeout_ms must be > 0, got %d", s.OffsetsCommitTimeoutMs)
	}
	if err := s.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Log is the shape of the broker's logs.
func (s Broker) Log() Log {
	return Log{SegmentBytes: s.LogSegmentBytes, IndexIntervalBytes: s.LogIndexIntervalBytes, RollMs: s.LogRollMs,
		RetentionMs: s.LogRetentionMs, RetentionBytes: s.LogRetentionBytes}
}

// Log shapes a log's segments: the settings of impl/storage.LogConfig.
// The zero value of a field means Kafka's default.
type Log struct {
	SegmentBytes       int64 // log.segment.bytes
	IndexIntervalBytes int64 // log.index.interval.bytes
	RollMs             int64 // log.roll.ms
	RetentionMs        int64 // log.retention.ms; -1 keeps segments forever
	RetentionBytes     int64 // log.retention.bytes; -1 has no limit
}

// Kafka's defaults for a log's shape.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultIndexIntervalBytes = 4096
	DefaultRollMs             = 7 * 24 * 3600 * 1000
	DefaultRetentionMs        = 7 * 24 * 3600 * 1000
	DefaultRetentionBytes     = -1
)

// MaxSegmentBytes caps log.segment.bytes: a segment's index holds
// positions as uint32s (impl/storage).
const MaxSegmentBytes = math.MaxInt32

// Validate reports a setting out of range, naming Kafka's setting.
func (c Log) Validate() error {
	switch {
	case c.SegmentBytes < 0 || c.SegmentBytes > MaxSegmentBytes:
		return fmt.Errorf("log.segment.bytes %d: want 1 to %d (0 for the default, %d)", c.SegmentBytes, MaxSegmentBytes, DefaultSegmentBytes)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("log.index.interval.bytes %d: want 1 or more (0 for the default, %d)", c.IndexIntervalBytes, DefaultIndexIntervalBytes)
	case c.RollMs < 0:
		return fmt.Errorf("log.roll.ms %d: want 1 or more (0 for the default, %d)", c.RollMs, DefaultRollMs)
	case c.RetentionMs < -1:
		return fmt.Errorf("log.retention.ms %d: want 1 or more, or -1 for no limit (0 for the default, %d)", c.RetentionMs, DefaultRetentionMs)
	case c.RetentionBytes < -1:
		return fmt.Errorf("log.retention.bytes %d: want 1 or more, or -1 for no limit (the default)", c.RetentionBytes)
	}
	return nil
}
