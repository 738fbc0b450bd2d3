package partition

import (
	"fmt"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Ready is what a replica needs done after an input, in the order the
// fields are declared: storage first, then the network.
type Ready struct {
	// StartAt, when >= 0, empties the stored log and starts it at that
	// offset (storage.Log.ResetTo), before Truncate and Append: a follower
	// that fell behind its leader's log start begins again there.
	StartAt int64
	// Truncate, when >= 0, is the offset to truncate the stored log to
	// before appending.
	Truncate int64
	// Append holds batches to append to the stored log, in order.
	Append []record.Batch
	// HWChanged says HW moved; the caller checkpoints it (possibly later,
	// as Kafka does every replica.high.watermark.checkpoint.interval.ms).
	HWChanged bool
	HW        int64
	// EpochsChanged says the leader-epoch cache changed and must be
	// written before any message is sent.
	EpochsChanged bool
	// Messages go to other brokers or the controller.
	Messages []Message
	// Answers reply to the requests handed in (Produce, ReplicaFetch,
	// EpochEnd, Read), each under its ref, in the order given.
	Answers []Answer
	// Events describe what happened, for traces and reports.
	Events []Event
	// ReadErr, when set, is a read of the replica's Log that failed: its
	// storage broke under it, and the caller treats it as it treats a
	// failed write (NewOnLog's replicas only).
	ReadErr error
}

// Message is a request from this replica to another node: a
// FetchRequest or EpochEndRequest to the leader, or a kafka.AlterPartition
// to the controller. Each names who it goes to (Destination).
type Message interface {
	kafka.Message
	// Destination is the node the message goes to: a broker id, or
	// kafka.ControllerNode.
	Destination() int32
}

// Destination implements Message: the leader.
func (r FetchRequest) Destination() int32 { return r.To }

// Destination implements Message: the leader.
func (r EpochEndRequest) Destination() int32 { return r.To }

// noEpoch is Kafka's UNDEFINED_EPOCH (-1): a LastFetchedEpoch or
// DivergingEpoch that is absent.
const noEpoch = storage.UndefinedEpoch

// FetchRequest is a follower's replica fetch. Its FetchOffset is the
// follower's LEO: sending it acknowledges everything below, unless the
// answer says the log diverged (DivergingEpoch).
type FetchRequest struct {
	kafka.TopicPartition
	ID                 uint64 // matches the response to the request in flight
	ReplicaID          int32
	ReplicaIncarnation int64 // the follower process's incarnation (KIP-903's broker epoch)
	To                 int32 // the leader
	FetchOffset        int64
	CurrentLeaderEpoch int32
	// LastFetchedEpoch is the latest epoch in the follower's cache, the
	// epoch of the record before FetchOffset (Fetch v12+, KIP-595); -1
	// when the cache is empty, or on the variants that settle divergence
	// by OffsetsForLeaderEpoch first.
	LastFetchedEpoch int32
	MaxBytes         int
}

// FetchResponse answers a FetchRequest.
type FetchResponse struct {
	kafka.TopicPartition
	ID      uint64
	Err     error
	Batches []record.Batch
	HW      int64
	LEO     int64
	// LogStart is the leader's log start offset: a FetchOffset below it
	// is OFFSET_OUT_OF_RANGE, and the follower starts again there.
	LogStart int64
	// Diverging says the follower's log diverges from the leader's
	// (Fetch v12+'s DivergingEpoch, KIP-595): DivergingEpoch is the
	// leader's largest epoch at or below the request's LastFetchedEpoch
	// and DivergingEndOffset where it ends in the leader's log, and either
	// the epoch is not the one asked or it ends below the FetchOffset.
	// Such an answer carries no batches. The two are -1 when the leader
	// answers otherwise; the flag, not them, says which, so that a
	// FetchResponse built without them never reads as a divergence.
	Diverging          bool
	DivergingEpoch     int32
	DivergingEndOffset int64
}

// EpochEndRequest is OffsetsForLeaderEpoch: where did Epoch end on the leader?
type EpochEndRequest struct {
	kafka.TopicPartition
	ID                 uint64
	ReplicaID          int32
	To                 int32
	Epoch              int32
	CurrentLeaderEpoch int32
}

// EpochEndResponse answers with the largest epoch <= the one asked and the
// offset where it ended, or -1/-1 when the leader has no such epoch.
type EpochEndResponse struct {
	kafka.TopicPartition
	ID        uint64
	Err       error
	Epoch     int32
	EndOffset int64
}

// EventKind classifies an Event.
type EventKind int

// Event kinds.
const (
	EventBecameLeader EventKind = iota
	EventBecameFollower
	EventHWAdvanced
	EventTruncated
	EventISRShrinkProposed
	EventISRExpandProposed
	EventISRChanged
	EventFenced
	EventReset // a follower below its leader's log start began again there
)

var eventNames = [...]string{"became-leader", "became-follower", "hw-advanced", "truncated",
	"isr-shrink-proposed", "isr-expand-proposed", "isr-changed", "fenced", "reset"}

// String names the kind.
func (k EventKind) String() string { return eventNames[k] }

// Event is one protocol step worth showing a person.
type Event struct {
	Kind   EventKind
	Detail string
}

func (r *Replica) event(k EventKind, format string, args ...any) {
	r.ready.Events = append(r.ready.Events, Event{Kind: k, Detail: fmt.Sprintf(format, args...)})
}
