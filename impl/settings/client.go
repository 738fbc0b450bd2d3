package settings

import (
	"errors"
	"fmt"
	"slices"
)

// The settings of the reference's clients (conformance/kitclient): a producer's
// (Producer, conformance/kitclient.Config) and a consumer's (Consumer,
// conformance/kitclient.ConsumerConfig). Names follow the Java client's settings
// where there is one. They have no yaml tags: a run's workload
// (conformance/run.Workload) derives them.

var (
	// ErrInvalidProducer wraps every Producer.Validate error
	// (conformance/kitclient.ErrInvalidConfig).
	ErrInvalidProducer = errors.New("invalid producer config")
	// ErrInvalidConsumer wraps every Consumer.Validate error
	// (conformance/kitclient.ErrInvalidConsumerConfig).
	ErrInvalidConsumer = errors.New("invalid consumer config")
)

// MaxIdempotentInFlight is the most batches per partition an idempotent
// producer may have unresolved: the broker deduplicates a retry only against
// its last DedupWindow batches of the producer.
const MaxIdempotentInFlight = DedupWindow

// Producer is the producer configuration.
type Producer struct {
	// Acks is acks: 0, 1 or all (-1).
	Acks Acks
	// Idempotent is enable.idempotence. It requires Acks == AcksAll,
	// Retries, and MaxInFlight <= MaxIdempotentInFlight, as the Java client
	// does when the user sets it explicitly.
	Idempotent bool
	// MaxInFlight bounds, per partition, the batches sent and not yet
	// completed to the caller (max.in.flight.requests.per.connection, but
	// per partition). Without idempotence, ordering under retries holds
	// only with MaxInFlight == 1, as in Kafka.
	MaxInFlight int
	// Retries allows resending a batch after a retriable error. Off, a
	// batch is sent once.
	Retries bool
	// RetryBackoffMs is the pause before resending a batch, and between
	// metadata or producer-id requests after an answer (retry.backoff.ms).
	RetryBackoffMs int64
	// RequestTimeoutMs is the produce timeout the broker is given: how long
	// an acks=all produce may wait for the ISR.
	RequestTimeoutMs int64
	// ResponseSlackMs is how much longer than RequestTimeoutMs the producer
	// waits for a produce answer before it counts the attempt as lost.
	ResponseSlackMs int64
	// MetadataTimeoutMs is how long the producer waits for a metadata or
	// InitProducerID answer before asking another broker.
	MetadataTimeoutMs int64
	// DeliveryTimeoutMs bounds a send from Send to its Result
	// (delivery.timeout.ms): no attempt starts after it. An attempt in
	// flight at the deadline is allowed to finish, so a Result can come up
	// to RequestTimeoutMs + ResponseSlackMs late.
	DeliveryTimeoutMs int64
	// Bootstrap lists brokers to ask for metadata and producer ids until a
	// metadata answer names the live ones. Empty: wait for UpdateMetadata.
	Bootstrap []int32
	// UnsafeAnyAcks lets an idempotent producer use acks=0 or 1, which
	// Kafka's clients refuse. Only repros set it, to show what a broker does
	// with sequences when acks=1 loses an acknowledged batch.
	UnsafeAnyAcks bool
}

// DefaultProducer returns the Java client's defaults (acks=all,
// idempotence on, 5 in flight, retries on, 100 ms backoff), with timeouts
// scaled for the simulator's logical milliseconds.
func DefaultProducer() Producer {
	return Producer{
		Acks:              AcksAll,
		Idempotent:        true,
		MaxInFlight:       MaxIdempotentInFlight,
		Retries:           true,
		RetryBackoffMs:    100,
		RequestTimeoutMs:  3000,
		ResponseSlackMs:   1000,
		MetadataTimeoutMs: 1000,
		DeliveryTimeoutMs: 10000,
	}
}

// Validate reports a configuration the producer cannot run with.
func (c Producer) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidProducer, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Acks != AcksNone && c.Acks != AcksLeader && c.Acks != AcksAll:
		return bad("acks %d: want 0, 1 or -1 (all)", c.Acks)
	case c.MaxInFlight < 1:
		return bad("max in flight %d: want >= 1", c.MaxInFlight)
	case c.Idempotent && c.Acks != AcksAll && !c.UnsafeAnyAcks:
		return bad("idempotence requires acks=all, not acks=%d", c.Acks)
	case c.Idempotent && !c.Retries:
		return bad("idempotence requires retries")
	case c.Idempotent && c.MaxInFlight > MaxIdempotentInFlight:
		return bad("idempotence allows at most %d batches in flight per partition, not %d", MaxIdempotentInFlight, c.MaxInFlight)
	case c.RetryBackoffMs < 0, c.ResponseSlackMs < 0:
		return bad("negative backoff or slack")
	case c.RequestTimeoutMs <= 0, c.MetadataTimeoutMs <= 0:
		return bad("request and metadata timeouts must be positive")
	case c.DeliveryTimeoutMs < c.RequestTimeoutMs:
		return bad("delivery timeout %d ms is shorter than the request timeout %d ms", c.DeliveryTimeoutMs, c.RequestTimeoutMs)
	}
	return nil
}

// The assignors a Consumer may name (partition.assignment.strategy).
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

// Consumer is the consumer configuration.
type Consumer struct {
	// Group is group.id; "" means no group: partitions come from Assign
	// only and Commit fails with conformance/kitclient.ErrNoGroup. With a Group and no Topics the
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

// DefaultConsumer returns the Java client's defaults (range assignor,
// fetch.min.bytes 1, 1 MB per partition, auto.offset.reset latest, 100 ms
// backoff) with timeouts scaled for the simulator's logical milliseconds.
func DefaultConsumer() Consumer {
	return Consumer{
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
func (c Consumer) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConsumer, fmt.Sprintf(format, args...))
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
