package kitclient

import (
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// ConsumerEvent is one thing a consumer learnt, for a harness to write a
// history: *Joined, *Assigned, *Revoked, *OffsetsFetched, *Positioned,
// *NoOffset, *Fetched, *Committed or *GroupFailed. Every event carries the
// Span of the operation it completes.
type ConsumerEvent interface {
	// Times returns when the event's request was sent (or the call that
	// caused it made) and when its answer came.
	Times() Span
	// Tell gives the event to the method of h for its kind.
	Tell(h ConsumerEvents)
}

// ConsumerEvents is what a harness does with each kind of ConsumerEvent
// (ConsumerEvent.Tell). A harness implements every method, an empty one
// for a kind it has no use for, so that a new kind of event is a compile
// error in every harness rather than a case a type switch forgets.
type ConsumerEvents interface {
	OnJoined(*Joined)
	OnAssigned(*Assigned)
	OnRevoked(*Revoked)
	OnOffsetsFetched(*OffsetsFetched)
	OnPositioned(*Positioned)
	OnNoOffset(*NoOffset)
	OnFetched(*Fetched)
	OnCommitted(*Committed)
	OnGroupFailed(*GroupFailed)
}

// Tell implements ConsumerEvent.
func (e *Joined) Tell(h ConsumerEvents) { h.OnJoined(e) }

// Tell implements ConsumerEvent.
func (e *Assigned) Tell(h ConsumerEvents) { h.OnAssigned(e) }

// Tell implements ConsumerEvent.
func (e *Revoked) Tell(h ConsumerEvents) { h.OnRevoked(e) }

// Tell implements ConsumerEvent.
func (e *OffsetsFetched) Tell(h ConsumerEvents) { h.OnOffsetsFetched(e) }

// Tell implements ConsumerEvent.
func (e *Positioned) Tell(h ConsumerEvents) { h.OnPositioned(e) }

// Tell implements ConsumerEvent.
func (e *NoOffset) Tell(h ConsumerEvents) { h.OnNoOffset(e) }

// Tell implements ConsumerEvent.
func (e *Fetched) Tell(h ConsumerEvents) { h.OnFetched(e) }

// Tell implements ConsumerEvent.
func (e *Committed) Tell(h ConsumerEvents) { h.OnCommitted(e) }

// Tell implements ConsumerEvent.
func (e *GroupFailed) Tell(h ConsumerEvents) { h.OnGroupFailed(e) }

// Span is when an operation started (CallMs: its request was sent, or
// the application call was made) and ended (ReturnMs: its answer came, or
// it was given up on), in the consumer's logical ms.
type Span struct {
	CallMs, ReturnMs int64
}

// Times returns s; every event embeds a Span.
func (s Span) Times() Span { return s }

// Joined: a JoinGroup succeeded; the member is in Generation.
type Joined struct {
	Span
	Generation int32
	MemberID   string
	Leader     bool // this member computes the assignment
	// Coordinator is the broker that answered.
	Coordinator clientmsg.NodeID
}

// Assigned: the member's partitions for Generation (SyncGroup's answer),
// or a manual Assign (Generation -1, MemberID "").
type Assigned struct {
	Span
	Generation int32
	MemberID   string
	Partitions []kafka.TopicPartition // sorted
	// Coordinator is the broker that answered the SyncGroup (0 for a
	// manual Assign).
	Coordinator clientmsg.NodeID
}

// Revoked: the consumer stopped consuming Partitions, which it held in
// Generation (a rebalance, a fenced member, Close, a new manual Assign).
// Fetches in flight for them are ignored; records fetched and not yet
// polled are dropped.
type Revoked struct {
	Span
	Generation int32
	MemberID   string
	Partitions []kafka.TopicPartition // sorted
}

// OffsetsFetched: the group's committed offset of TP (OffsetFetch), -1
// when there is none.
type OffsetsFetched struct {
	Span
	TP     kafka.TopicPartition
	Offset int64
	// Coordinator is the broker that answered.
	Coordinator clientmsg.NodeID
}

// Why a position was set.
const (
	WhyCommitted = "committed" // the group's committed offset
	WhyReset     = "reset"     // auto.offset.reset, through ListOffsets
	WhySeek      = "seek"      // the application's Seek
)

// Positioned: TP's position (the next offset to fetch and to deliver) was
// set to Offset for reason Why.
type Positioned struct {
	Span
	TP     kafka.TopicPartition
	Offset int64
	Why    string
}

// NoOffset: TP has no offset to start from and auto.offset.reset is
// "none" (Err wraps ErrNoOffset). The partition waits for Seek.
type NoOffset struct {
	Span
	TP  kafka.TopicPartition
	Err error
}

// Fetched is one fetch answer: the fetch asked for TP from Offset;
// Records are the records at or after Offset it returned, in offset order
// (none when the long poll expired). HW is the leader's high watermark, -1
// with an error.
type Fetched struct {
	Span
	TP      kafka.TopicPartition
	Offset  int64
	Records []ConsumerRecord
	HW      int64
	// LogStart is the log start offset the broker answered with (-1 when
	// it gave none); below it, retention deleted the records.
	LogStart int64
	Err      error
}

// Committed is the outcome of Commit ID: Err nil when the coordinator
// stored Offsets. Unknown means they may or may not have been stored: no
// answer, or an answer after which the write may still commit
// (kafka.CommitOutcomeUnknown: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND; Kafka 4.x answers a
// timed-out write COORDINATOR_NOT_AVAILABLE). Generation and MemberID are
// what the commit carried. CallMs is when Commit was called.
type Committed struct {
	Span
	ID         uint64
	Generation int32
	MemberID   string
	Offsets    map[kafka.TopicPartition]int64
	Err        error
	Unknown    bool
	// Coordinator is the broker the commit was last sent to (0: it never
	// was), which answered it unless its outcome is unknown.
	Coordinator clientmsg.NodeID
}

// GroupFailed: the coordinator refused the member for good (an invalid
// session timeout, group id or protocol). The consumer stops taking part
// in the group.
type GroupFailed struct {
	Span
	Err error
}

// ConsumerRecord is one record as a consumer reads it.
type ConsumerRecord struct {
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp int64
}

// Delivery is what Poll returns for one partition: records in offset
// order, fetched in Generation (-1 without group membership).
type Delivery struct {
	TP         kafka.TopicPartition
	Generation int32
	Records    []ConsumerRecord
}
