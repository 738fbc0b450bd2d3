package clientmsg

import (
	"github.com/watermarkhq/watermark/impl/groupmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/settings"
)

// Client plane: clients -> brokers.

// ProduceRequest appends one batch of records to one partition, as the
// producer built it: an idempotent producer's batch carries its producer id
// (from InitProducerID), epoch and base sequence; another's has
// record.NoProducerID and record.NoSequence. The leader sets the offsets
// and the leader epoch.
type ProduceRequest struct {
	Correlation uint64
	kafka.TopicPartition
	Acks      settings.Acks
	Batch     record.Batch
	TimeoutMs int64
	// WireBytes is the batch's size as the producer sent it, compressed
	// or not, which max.message.bytes bounds; 0 when it came over no wire
	// (the simulator's clients), which nothing bounds.
	WireBytes int
}

// InitProducerIDRequest asks any broker for a producer id (PID) and epoch.
type InitProducerIDRequest struct {
	Correlation uint64
}

// InitProducerIDResponse carries a PID never handed out before in the
// cluster, with epoch 0.
type InitProducerIDResponse struct {
	Correlation   uint64
	ProducerID    int64
	ProducerEpoch int16
	Err           error
}

// ProduceResponse answers a produce (never sent for acks=0).
type ProduceResponse struct {
	Correlation uint64
	kafka.TopicPartition
	BaseOffset int64
	Err        error
	// Leader is the partition's leader as the broker knows it when Err
	// says it does not lead (NOT_LEADER_OR_FOLLOWER): KIP-951's
	// CurrentLeader, so that a client moves to it without asking for
	// metadata first. Leader.ID is -1 when unknown.
	Leader LeaderHint
}

// LeaderHint names a partition's current leader, its epoch and where it
// listens (KIP-951's CurrentLeader and NodeEndpoints).
type LeaderHint struct {
	ID      int32
	Epoch   int32
	Address string // host:port, empty when unknown
}

// FetchRequest is a consumer fetch with long poll: the broker holds it until
// MinBytes are readable below HW or MaxWaitMs pass.
type FetchRequest struct {
	Correlation uint64
	kafka.TopicPartition
	Offset             int64
	MaxBytes           int
	MinBytes           int
	MaxWaitMs          int64
	CurrentLeaderEpoch int32 // -1: do not check (KIP-320)
}

// FetchResponse answers a consumer fetch.
type FetchResponse struct {
	Correlation uint64
	kafka.TopicPartition
	Batches []record.Batch
	HW      int64
	LEO     int64
	// LogStart is the leader's log start offset, which retention moves
	// (-1 when the answer is an error from a broker that is not leader).
	LogStart int64
	Err      error
}

// FetchManyRequest is a consumer's fetch of several partitions answered
// as one, as Kafka's Fetch is: MinBytes and MaxWaitMs apply to the whole
// answer, so the broker holds it until its partitions together hold
// MinBytes, one of them fails, or MaxWaitMs pass.
type FetchManyRequest struct {
	Correlation uint64
	Partitions  []FetchPartition
	MinBytes    int
	MaxWaitMs   int64
}

// FetchPartition is one partition of a FetchManyRequest.
type FetchPartition struct {
	kafka.TopicPartition
	Offset             int64
	MaxBytes           int
	CurrentLeaderEpoch int32 // -1: do not check (KIP-320)
}

// FetchManyResponse answers a FetchManyRequest, one FetchResponse per
// partition in the request's order.
type FetchManyResponse struct {
	Correlation uint64
	Partitions  []FetchResponse
}

// ListOffsetsRequest asks for the earliest offset or the latest visible one.
type ListOffsetsRequest struct {
	Correlation uint64
	kafka.TopicPartition
	Latest bool
}

// ListOffsetsResponse answers ListOffsets: Offset is 0 for earliest, HW for latest.
type ListOffsetsResponse struct {
	Correlation uint64
	kafka.TopicPartition
	Offset      int64
	LeaderEpoch int32
	Err         error
}

// EpochEndRequest asks a partition's leader, for a client, where leader
// epoch LeaderEpoch ended: Kafka's OffsetForLeaderEpoch from a consumer,
// which checks its position against it after a leader change (KIP-320).
// CurrentLeaderEpoch fences it as a fetch's does (-1: do not check).
type EpochEndRequest struct {
	Correlation uint64
	kafka.TopicPartition
	LeaderEpoch        int32
	CurrentLeaderEpoch int32
}

// EpochEndResponse answers EpochEndRequest: the largest epoch the leader
// holds at or below the one asked, and where it ended (-1 and -1 when it
// holds none).
type EpochEndResponse struct {
	Correlation uint64
	kafka.TopicPartition
	LeaderEpoch int32
	EndOffset   int64
	Err         error
}

// MetadataRequest asks a broker for the partition states it knows.
type MetadataRequest struct {
	Correlation uint64
}

// MetadataResponse lists partition states and live brokers.
type MetadataResponse struct {
	Correlation uint64
	Partitions  []kafka.PartitionState
	LiveBrokers []int32
	Addresses   map[int32]string // advertised address of each broker known
	// Err is set by a client's network layer, never by a broker: the
	// connection broke before the answer came (kafka.ErrNetwork), and
	// the client asks another broker at once.
	Err error
}

// Group plane: clients -> a group's coordinator.

// FindCoordinatorRequest asks any broker which broker coordinates Group.
type FindCoordinatorRequest struct {
	Correlation uint64
	Group       string
}

// FindCoordinatorResponse names the coordinator (a broker id).
type FindCoordinatorResponse struct {
	Correlation uint64
	Coordinator int32
	Err         error
}

// GroupRequest carries one group request to the group's coordinator: a
// groupmsg.JoinRequest, SyncRequest, HeartbeatRequest, LeaveRequest,
// CommitRequest or FetchOffsetsRequest.
type GroupRequest struct {
	Correlation uint64
	Req         groupmsg.Request
}

// GroupResponse answers a GroupRequest with the matching group response
// (groupmsg.JoinResponse, ...). A broker that does not coordinate the group
// answers with the response's Err set to kafka.ErrNotCoordinator.
type GroupResponse struct {
	Correlation uint64
	Resp        groupmsg.Response
}
