package settings

import "fmt"

// Truncation selects how a follower finds where its log diverges from its
// leader's.
type Truncation int

const (
	// TruncateToEpoch is truncation on fetch, Kafka's follower path since
	// KAFKA-10554 (2.7, always so in 4.x): the follower fetches from its
	// LEO naming the latest epoch in its cache (LastFetchedEpoch, KIP-595's
	// Fetch v12 field); a leader that does not hold that epoch up to the
	// fetch offset answers with the largest epoch it holds at or below it
	// and that epoch's end (DivergingEpoch) and no records, and the
	// follower truncates by KIP-279's rule (HandleFetchResponse). Safe.
	TruncateToEpoch Truncation = iota
	// TruncateToHW truncates to the replica's own high watermark, as Kafka
	// did before 0.11. Loses committed data in KIP-101's scenarios.
	TruncateToHW
	// TruncateToEpochKIP101 is KIP-101 as shipped in Kafka 0.11, without
	// KIP-279: the leader answers OffsetsForLeaderEpoch with an end offset
	// only (storage.EndOffsetKIP101) and the follower truncates to
	// min(that offset, its LEO) in one round, without comparing epochs.
	// Unsafe: a follower asking about an epoch the leader never saw keeps
	// records the leader does not have (KAFKA-6361). The deviation lives in
	// impl/partition's EpochEnd (leader.go) and HandleEpochEndResponse
	// (follower.go).
	TruncateToEpochKIP101
	// TruncateToEpochNoBump is TruncateToEpochQuery except that a follower
	// told to follow the same leader in a newer epoch keeps fetching
	// without the truncation step, as Kafka did before KAFKA-7164's fix.
	// Unsafe: a follower that missed the epochs in between keeps records
	// the leader no longer has. The deviation lives in impl/partition's
	// becomeFollower (follower.go).
	TruncateToEpochNoBump
	// TruncateToEpochQuery asks the leader where the replica's last leader
	// epoch ended (OffsetsForLeaderEpoch) when it becomes a follower, and
	// truncates there before it fetches (KIP-101 with KIP-279's iteration),
	// as Kafka did before truncation on fetch (KAFKA-10554). Safe. The
	// variants hw, epoch-kip101 and epoch-no-bump are built on this path.
	TruncateToEpochQuery
)

// OnFetch reports whether followers settle divergence on the fetch
// answer (LastFetchedEpoch and DivergingEpoch) rather than by asking
// OffsetsForLeaderEpoch first.
func (t Truncation) OnFetch() bool { return t == TruncateToEpoch }

var truncationNames = names[Truncation]{
	{TruncateToEpoch, "epoch"},
	{TruncateToHW, "hw"},
	{TruncateToEpochKIP101, "epoch-kip101"},
	{TruncateToEpochNoBump, "epoch-no-bump"},
	{TruncateToEpochQuery, "epoch-query"},
}

// String names the variant as run files and flags spell it.
func (t Truncation) String() string { return truncationNames.format(t) }

// Values lists the names a Truncation takes.
func (Truncation) Values() []string { return truncationNames.list() }

// MarshalText writes the variant's name.
func (t Truncation) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads one of Values.
func (t *Truncation) UnmarshalText(b []byte) (err error) {
	*t, err = truncationNames.parse("truncation", string(b))
	return err
}

// Acks is the producer's acks setting.
type Acks int8

// The three acks levels of spec/SEMANTICS.md.
const (
	AcksNone   Acks = 0
	AcksLeader Acks = 1
	AcksAll    Acks = -1
)

var acksNames = names[Acks]{{AcksAll, "all"}, {AcksLeader, "1"}, {AcksNone, "0"}}

// String names the level as Kafka's producer config does: all, 1 or 0.
func (a Acks) String() string { return acksNames.format(a) }

// Values lists the names an Acks takes.
func (Acks) Values() []string { return acksNames.list() }

// MarshalText writes the level's name.
func (a Acks) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads one of Values.
func (a *Acks) UnmarshalText(b []byte) (err error) {
	*a, err = acksNames.parse("acks", string(b))
	return err
}

// DedupWindow is how many of a producer's latest batches a partition
// remembers: a retry of any of them is answered with the original offset.
// Kafka's client keeps at most 5 batches in flight per partition for the
// same reason.
const DedupWindow = 5

// ProducerState says how producer state (PID, epoch, recent sequences) is
// kept.
type ProducerState int

const (
	// ProducerStateReplicated: every replica rebuilds producer state from
	// the batches it appends, leader and follower alike, so a new leader
	// deduplicates as the old one did. Correct.
	ProducerStateReplicated ProducerState = iota
	// ProducerStateLeaderOnly: only the leader that appended a batch learns
	// of it; followers do not rebuild. A new leader knows nothing of a
	// producer and takes its retry as a new producer's first batch. This is
	// the "dedup across leader change" bug of spec/SEMANTICS.md.
	ProducerStateLeaderOnly
)

var producerStateNames = names[ProducerState]{
	{ProducerStateReplicated, "replicated"},
	{ProducerStateLeaderOnly, "leader-only"},
}

// String names the variant as run files and flags spell it.
func (v ProducerState) String() string { return producerStateNames.format(v) }

// Values lists the names a ProducerState takes.
func (ProducerState) Values() []string { return producerStateNames.list() }

// MarshalText writes the variant's name.
func (v ProducerState) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads one of Values.
func (v *ProducerState) UnmarshalText(b []byte) (err error) {
	*v, err = producerStateNames.parse("producer state", string(b))
	return err
}

// Partition are a replica's protocol settings (impl/partition.Settings);
// every replica of a broker runs with the same. Each field's yaml tag is
// its name in run files and, with dashes for underscores, its
// `watermark serve` flag; its doc tag is its help line. Kafka's broker
// config of the same meaning is named in the doc where there is one.
type Partition struct {
	MinInsyncReplicas int        `yaml:"min_insync_replicas" doc:"ISR members an acks=all produce needs (min.insync.replicas)"`
	Truncation        Truncation `yaml:"truncation" doc:"how a follower finds where its log diverges from its leader's"`
	// ReplicaLagTimeMaxMs: a follower that has not caught up with the
	// leader's LEO for this long leaves the ISR.
	ReplicaLagTimeMaxMs int64 `yaml:"replica_lag_time_max_ms" doc:"a follower this long behind the leader leaves the ISR (replica.lag.time.max.ms)"`
	// ReplicaFetchWaitMaxMs is how long a leader may hold a follower's
	// fetch that found nothing new.
	ReplicaFetchWaitMaxMs int64 `yaml:"replica_fetch_wait_max_ms" doc:"how long a leader holds a follower's fetch that found nothing new (replica.fetch.wait.max.ms)"`
	ReplicaFetchMaxBytes  int   `yaml:"replica_fetch_max_bytes" doc:"the most a replica fetch answer carries, at least one batch (replica.fetch.max.bytes)"`
	// RequestTimeoutMs is how long a follower waits for a fetch or epoch
	// answer, and a leader for the controller's ISR answer, before asking
	// again. Messages can be lost; the protocol must not stall. It also
	// bounds how long a broker holds an acks=all produce.
	RequestTimeoutMs int64 `yaml:"request_timeout_ms" doc:"how long a replica waits for an answer before asking again"`
	RetryBackoffMs   int64 `yaml:"retry_backoff_ms" doc:"the pause after an error answer before a replica retries (retry.backoff.ms)"`
	// AdvanceHWBelowMinISR lets the leader advance HW while the ISR is
	// smaller than min.insync.replicas. Kafka did this before KIP-966; it is
	// the "last replica standing" bug. Off is the safe default.
	AdvanceHWBelowMinISR bool `yaml:"advance_hw_below_min_isr" doc:"let HW advance while the ISR is below min.insync.replicas (the last-replica-standing bug; unsafe)"`
	// ProducerState says whether followers rebuild idempotent-producer
	// state from what they replicate (they must; see ProducerStateLeaderOnly).
	ProducerState ProducerState `yaml:"producer_state" doc:"who keeps idempotent-producer state (leader-only is the dedup-across-leader-change bug)"`
}

// DefaultPartition are Kafka's defaults.
func DefaultPartition() Partition {
	return Partition{
		MinInsyncReplicas:     1,
		Truncation:            TruncateToEpoch,
		ReplicaLagTimeMaxMs:   30000,
		ReplicaFetchWaitMaxMs: 500,
		ReplicaFetchMaxBytes:  1 << 20,
		RequestTimeoutMs:      30000,
		RetryBackoffMs:        100,
	}
}

// Validate reports settings the protocol cannot run with.
func (c Partition) Validate() error {
	if c.ReplicaLagTimeMaxMs <= 0 {
		return fmt.Errorf("replica_lag_time_max_ms must be > 0, got %d", c.ReplicaLagTimeMaxMs)
	}
	if c.MinInsyncReplicas < 1 {
		return fmt.Errorf("min_insync_replicas must be >= 1, got %d", c.MinInsyncReplicas)
	}
	if c.ReplicaFetchMaxBytes <= 0 {
		return fmt.Errorf("replica_fetch_max_bytes must be > 0, got %d", c.ReplicaFetchMaxBytes)
	}
	if c.ReplicaFetchWaitMaxMs < 0 {
		return fmt.Errorf("replica_fetch_wait_max_ms must be >= 0, got %d", c.ReplicaFetchWaitMaxMs)
	}
	if c.RequestTimeoutMs <= c.ReplicaFetchWaitMaxMs {
		return fmt.Errorf("request_timeout_ms (%d) must exceed replica_fetch_wait_max_ms (%d), or every held fetch times out",
			c.RequestTimeoutMs, c.ReplicaFetchWaitMaxMs)
	}
	if c.RetryBackoffMs <= 0 {
		return fmt.Errorf("retry_backoff_ms must be > 0, got %d", c.RetryBackoffMs)
	}
	return nil
}
