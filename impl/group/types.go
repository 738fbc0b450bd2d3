package group

import (
	"errors"
	"fmt"
	"strings"

	"github.com/watermarkhq/watermark/impl/groupmsg"
	"github.com/watermarkhq/watermark/impl/settings"
)

// Sentinel errors; callers branch on them with errors.Is.
var (
	ErrInvalidConfig = settings.ErrInvalidGroup
	ErrBadRecord     = errors.New("malformed offsets-topic record")
)

// Config holds the coordinator's settings (settings.Group, with their
// run-file names, Kafka's defaults and their validation).
type Config = settings.Group

// DefaultConfig returns Kafka's session bounds (6 s, 30 min) and no initial
// rebalance delay.
func DefaultConfig() Config { return settings.DefaultGroup() }

// State is a group's state, as Kafka's classic GroupCoordinator names it.
// Kafka's Dead state is a group that is gone: here it is absent from the map.
type State int8

// The group states.
const (
	Empty               State = iota // no members; may hold offsets
	PreparingRebalance               // waiting for members to (re)join
	CompletingRebalance              // generation chosen, waiting for the leader's assignment to persist
	Stable                           // every member has its assignment
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable"}

// String returns Kafka's name of the state.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// The requests and responses of the group protocol, and what they hold,
// are impl/groupmsg's (which see).
type (
	Protocol             = groupmsg.Protocol
	JoinRequest          = groupmsg.JoinRequest
	JoinMember           = groupmsg.JoinMember
	JoinResponse         = groupmsg.JoinResponse
	SyncRequest          = groupmsg.SyncRequest
	SyncResponse         = groupmsg.SyncResponse
	HeartbeatRequest     = groupmsg.HeartbeatRequest
	HeartbeatResponse    = groupmsg.HeartbeatResponse
	LeaveRequest         = groupmsg.LeaveRequest
	LeaveMember          = groupmsg.LeaveMember
	LeaveResponse        = groupmsg.LeaveResponse
	OffsetToCommit       = groupmsg.OffsetToCommit
	CommitRequest        = groupmsg.CommitRequest
	PartitionError       = groupmsg.PartitionError
	CommitResponse       = groupmsg.CommitResponse
	FetchOffsetsRequest  = groupmsg.FetchOffsetsRequest
	FetchedOffset        = groupmsg.FetchedOffset
	FetchOffsetsResponse = groupmsg.FetchOffsetsResponse
)

// Answer completes the request whose caller-chosen id is ID.
type Answer struct {
	ID  uint64
	Msg Response
}

// Record is one record of the offsets topic: a key and a value, nil for a
// tombstone. The broker wraps it in a record.Record.
type Record struct {
	Key   []byte
	Value []byte
}

// Append asks the broker to append Records, in order and atomically (one
// batch), to the offsets partition, and to call AppendDone(ID, err) once
// the batch is committed (HW passed it) or has failed.
type Append struct {
	ID      uint64
	Records []Record
}

// EventKind says what an Event records.
type EventKind int8

// The kinds of Event.
const (
	RebalanceStarted   EventKind = iota + 1 // the group went PreparingRebalance
	RebalanceCompleted                      // a generation was chosen (or the group went Empty)
	GroupStable                             // the leader's assignment was persisted
	MemberAdded                             // a member joined the group
	MemberRemoved                           // a member left or was expired; Reason says which
	AppendFailed                            // a write to the offsets partition failed; Reason says why
)

var kindNames = [...]string{
	RebalanceStarted:   "rebalance-started",
	RebalanceCompleted: "rebalance-completed",
	GroupStable:        "stable",
	MemberAdded:        "member-added",
	MemberRemoved:      "member-removed",
	AppendFailed:       "append-failed",
}

// String returns the kind's name as traces print it.
func (k EventKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int8(k))
}

// Event records one decision of the coordinator, for traces and checkers.
//
// Invariants:
//  1. Generation is the group's generation after the event.
//  2. Members is set, sorted, for RebalanceCompleted and GroupStable;
//     Member is set for MemberAdded and MemberRemoved.
type Event struct {
	Kind       EventKind
	Now        int64
	Group      string
	Generation int32
	Members    []string
	Member     string
	Reason     string
}

// String renders e on one line.
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%d %s group=%s generation=%d", e.Now, e.Kind, e.Group, e.Generation)
	if e.Members != nil {
		fmt.Fprintf(&b, " members=%v", e.Members)
	}
	if e.Member != "" {
		fmt.Fprintf(&b, " member=%s", e.Member)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " reason=%s", e.Reason)
	}
	return b.String()
}

// Ready is everything the coordinator decided since the previous Ready.
// The caller performs Appends (their outcome arrives later through
// AppendDone), sends Answers, and logs Events. Answers never depend on an
// Append of the same Ready: an answer that needs one waits for AppendDone.
//
// Invariants:
//  1. Answers, Appends and Events are each in the order they were decided.
//  2. Append ids are distinct and increase.
type Ready struct {
	Answers []Answer
	Appends []Append
	Events  []Event
}

// IsEmpty reports whether there is nothing to do.
func (r Ready) IsEmpty() bool {
	return len(r.Answers) == 0 && len(r.Appends) == 0 && len(r.Events) == 0
}
