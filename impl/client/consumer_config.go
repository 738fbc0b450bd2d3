package client

import (
	"errors"
	"fmt"
	"slices"
)

// Errors a consumer event can carry besides the brokers' own (impl/kafka's,
// the group coordinator's among them). Callers branch on them with
// errors.Is.
var (
	// ErrInvalidConsumerConfig wraps every ConsumerConfig.Validate error.
	ErrInvalidConsumerConfig = errors.New("invalid consumer config")
	// ErrNoGroup: a commit from a consumer configured without a group.
	ErrNoGroup = errors.New("no group configured")
	// ErrNoOffset: auto.offset.reset is "none" and the partition has no
	// committed offset, or its position is out of range. The partition is
	// not fetched until Seek.
	ErrNoOffset = errors.New("no offset to start from and auto.offset.reset is none")
	// ErrNoCoordinator: a commit waited RequestTimeoutMs without a
	// coordinator to send it to. It was never sent.
	ErrNoCoordinator = errors.New("no group coordinator found")
	// ErrClosed: the consumer was closed before the commit resolved.
	ErrClosed = errors.New("consumer closed")
	// ErrNotAssigned: Seek of a partition the consumer is not assigned.
	ErrNotAssigned = errors.New("partition not assigned")
	// ErrSubscribed: Assign on a consumer that subscribes through its group.
	ErrSubscribed = errors.New("consumer subscribes through its group: no manual assignment")
)

// The assignors a ConsumerConfig may name (partition.assignment.strategy).
const (
	AssignorRange      = "range"
	AssignorRoundRobin = "roundrobin"
)

// The auto.offset.reset policies.
const (
	ResetEarliest = "earliest"
	ResetLatest   = "latest"
	ResetNone     = "none"
)

// ConsumerConfig is the consumer configuration. Names follow the Java
// client's settings where there is one.
type ConsumerConfig struct {
	// Group is group.id; "" means no group: partitions come from Assign
	// only and Commit fails with ErrNoGroup. With a Group and no Topics the
	// consumer is assigned by hand but commits ("simple" commits,
	// generation -1, no member id) and starts from committed offsets.
	Group string
	// Topics is the subscription (subscribe()): with a Group, the consumer
	// joins the group and consumes what the leader assigns it.
	Topics []string
	// Assignor is partition.assignment.strategy: AssignorRange or
	// AssignorRoundRobin.
	Assignor string
	// ClientID is client.id; the coordinator prefixes member ids with it.
	ClientID string
	// SessionTimeoutMs is session.timeout.ms: how long the coordinator
	// keeps a silent member.
	SessionTimeoutMs int64
	// HeartbeatIntervalMs is heartbeat.interval.ms; below SessionTimeoutMs.
	HeartbeatIntervalMs int64
	// RebalanceTimeoutMs is max.poll.interval.ms as JoinGroup sends it: how
	// long the coordinator waits for members to rejoin.
	RebalanceTimeoutMs int64
	// FetchMinBytes is fetch.min.bytes: the broker holds a fetch until this
	// much is readable or FetchMaxWaitMs pass.
	FetchMinBytes int
	// FetchMaxWaitMs is fetch.max.wait.ms.
	FetchMaxWaitMs int64
	// MaxPartitionFetchBytes is max.partition.fetch.bytes. It also bounds
	// what the consumer buffers per partition before Poll: a partition
	// holding that much unpolled is not fetched.
	MaxPartitionFetchBytes int
	// AutoOffsetReset is auto.offset.reset: ResetEarliest, ResetLatest or
	// ResetNone.
	AutoOffsetReset string
	// RequestTimeoutMs is request.timeout.ms: how long the consumer waits
	// for an answer before counting the request as lost. Fetches get
	// FetchMaxWaitMs more; JoinGroup and SyncGroup RebalanceTimeoutMs more,
	// since the coordinator parks them.
	RequestTimeoutMs int64
	// MetadataTimeoutMs is how long the consumer waits for a metadata or
	// FindCoordinator answer before asking another broker. Shorter than
	// RequestTimeoutMs: in the simulator a dead broker is silent, and a
	// member that looks for its coordinator for a whole session timeout
	// is expired by the new one.
	MetadataTimeoutMs int64
	// RetryBackoffMs is retry.backoff.ms: the pause after a failed request.
	RetryBackoffMs int64
	// MetadataMaxAgeMs is metadata.max.age.ms: metadata is refreshed at
	// least this often.
	MetadataMaxAgeMs int64
	// Bootstrap lists brokers to ask for metadata and coordinators until a
	// metadata answer names the live ones.
	Bootstrap []int32
}

// DefaultConsumerConfig returns the Java client's defaults (range
// assignor, fetch.min.bytes 1, 1 MB per partition, auto.offset.reset
// latest, 100 ms backoff) with timeouts scaled for the simulator's logical
// milliseconds.
func DefaultConsumerConfig() ConsumerConfig {
	return ConsumerConfig{
		Assignor:               AssignorRange,
		ClientID:               "consumer",
		SessionTimeoutMs:       3000,
		HeartbeatIntervalMs:    500,
		RebalanceTimeoutMs:     3000,
		FetchMinBytes:          1,
		FetchMaxWaitMs:         200,
		MaxPartitionFetchBytes: 1 << 20,
		AutoOffsetReset:        ResetLatest,
		RequestTimeoutMs:       3000,
		MetadataTimeoutMs:      1000,
		RetryBackoffMs:         100,
		MetadataMaxAgeMs:       5000,
	}
}

// Validate reports a configuration the consumer cannot run with.
func (c ConsumerConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConsumerConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case len(c.Topics) > 0 && c.Group == "":
		return bad("a subscription needs a group")
	case slices.Contains(c.Topics, ""):
		return bad("empty topic name in the subscription")
	case c.Assignor != AssignorRange && c.Assignor != AssignorRoundRobin:
		return bad("assignor %q: want %q or %q", c.Assignor, AssignorRange, AssignorRoundRobin)
	case c.SessionTimeoutMs <= 0, c.RebalanceTimeoutMs <= 0:
		return bad("session and rebalance timeouts must be positive")
	case c.HeartbeatIntervalMs <= 0 || c.HeartbeatIntervalMs >= c.SessionTimeoutMs:
		return bad("heartbeat interval %d ms: want > 0 and below the session timeout %d ms", c.HeartbeatIntervalMs, c.SessionTimeoutMs)
	case c.FetchMinBytes < 0, c.FetchMaxWaitMs < 0:
		return bad("negative fetch min bytes or max wait")
	case c.MaxPartitionFetchBytes <= 0:
		return bad("max partition fetch bytes %d: want > 0", c.MaxPartitionFetchBytes)
	case c.AutoOffsetReset != ResetEarliest && c.AutoOffsetReset != ResetLatest && c.AutoOffsetReset != ResetNone:
		return bad("auto.offset.reset %q: want earliest, latest or none", c.AutoOffsetReset)
	case c.RequestTimeoutMs <= 0, c.MetadataTimeoutMs <= 0, c.MetadataMaxAgeMs <= 0:
		return bad("request and metadata timeouts and metadata max age must be positive")
	case c.RetryBackoffMs < 0:
		return bad("negative retry backoff")
	}
	return nil
}
