package groupmsg

import "github.com/watermarkhq/watermark/impl/kafka"

// Protocol is one assignment strategy a member supports, with the metadata
// (for "consumer", the subscription) it sends for it.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is JoinGroup (v4+).
type JoinRequest struct {
	Group string
	// MemberID is "" for a member that has none yet; it then gets
	// MEMBER_ID_REQUIRED with an id to rejoin with (KIP-394).
	MemberID string
	// ClientID prefixes the member id the coordinator assigns.
	ClientID           string
	SessionTimeoutMs   int64
	RebalanceTimeoutMs int64 // 0 means SessionTimeoutMs, as JoinGroup v0
	ProtocolType       string
	Protocols          []Protocol // in the member's order of preference
}

// JoinMember is one member as the leader sees it in its JoinResponse.
type JoinMember struct {
	MemberID string
	Metadata []byte // the member's metadata for the chosen protocol
}

// JoinResponse answers a JoinGroup.
type JoinResponse struct {
	Err          error
	Generation   int32
	ProtocolType string
	Protocol     string
	LeaderID     string
	MemberID     string
	Members      []JoinMember // the leader's answer only; sorted by member id
}

// SyncRequest is SyncGroup. Assignments is set by the leader only.
type SyncRequest struct {
	Group        string
	MemberID     string
	Generation   int32
	ProtocolType string // checked when set (v5+)
	Protocol     string // checked when set (v5+)
	Assignments  map[string][]byte
}

// SyncResponse answers a SyncGroup with the member's assignment.
type SyncResponse struct {
	Err          error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// HeartbeatRequest is Heartbeat.
type HeartbeatRequest struct {
	Group      string
	MemberID   string
	Generation int32
}

// HeartbeatResponse answers a Heartbeat.
type HeartbeatResponse struct{ Err error }

// LeaveRequest is LeaveGroup v3+: several members may leave at once.
type LeaveRequest struct {
	Group   string
	Members []string
}

// LeaveMember is the outcome for one member of a LeaveRequest.
type LeaveMember struct {
	MemberID string
	Err      error
}

// LeaveResponse answers a LeaveGroup, one entry per requested member in
// request order.
type LeaveResponse struct {
	Err     error
	Members []LeaveMember
}

// OffsetToCommit is one partition's offset in an OffsetCommit.
type OffsetToCommit struct {
	kafka.TopicPartition
	Offset   int64 // the next offset to read
	Metadata string
}

// CommitRequest is OffsetCommit. Generation -1 with MemberID "" is a
// "simple" commit from a consumer that does not use group management.
type CommitRequest struct {
	Group      string
	MemberID   string
	Generation int32
	Offsets    []OffsetToCommit
}

// PartitionError is the outcome for one partition.
type PartitionError struct {
	kafka.TopicPartition
	Err error
}

// CommitResponse answers an OffsetCommit, one entry per requested
// partition in request order. Kafka answers per partition only; every
// entry carries the request's outcome, except that a partition with an
// empty topic or a negative number gets UNKNOWN_TOPIC_OR_PARTITION while
// the others are committed.
type CommitResponse struct {
	Partitions []PartitionError
}

// FetchOffsetsRequest is OffsetFetch; Partitions nil asks for every
// partition the group has an offset for.
type FetchOffsetsRequest struct {
	Group      string
	Partitions []kafka.TopicPartition
}

// FetchedOffset is one partition's committed offset, -1 when none.
type FetchedOffset struct {
	kafka.TopicPartition
	Offset   int64
	Metadata string
}

// FetchOffsetsResponse answers an OffsetFetch, sorted by topic and partition
// when Partitions was nil, in request order otherwise.
type FetchOffsetsResponse struct {
	Err        error
	Partitions []FetchedOffset
}
