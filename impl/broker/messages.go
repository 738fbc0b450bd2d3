package broker

import (
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/settings"
)

// NodeID names a node: the controller, a broker or a client.
type NodeID int32

// ControllerID is the controller's node id. Brokers are 1..N; clients use
// ids from ClientIDBase up (settings.ControllerID, settings.ClientIDBase).
const (
	ControllerID NodeID = settings.ControllerID
	ClientIDBase NodeID = settings.ClientIDBase
)

// Envelope is one message on the network.
type Envelope struct {
	From, To NodeID
	Msg      kafka.Message
}

// Control plane: broker <-> controller.

// RegisterBroker announces a broker process (a new incarnation per start).
type RegisterBroker struct {
	Incarnation int64
	// Address is where clients reach the broker (host:port, its advertised
	// listener); empty in the simulator. The controller publishes it.
	Address string
	// LostData names the partitions whose logs this process recovered with
	// committed records lost (a log that ends below its checkpointed HW, or
	// damage inside it): the controller must not make it their leader
	// until it is back in their ISR.
	LostData []kafka.TopicPartition
	// EmptyDisk: the process found no partition on its disk (a first start,
	// or a disk replaced or wiped). The controller takes it to have lost
	// every partition it is a replica of, until it is back in their ISRs.
	EmptyDisk bool
	// PreviousIncarnation is the incarnation whose clean shutdown left
	// the marker this process found at start (shutdown.go), 0 when there
	// was none: Kafka's PreviousBrokerEpoch (KIP-966). The controller
	// calls the restart clean when it names the incarnation it last
	// registered (controller.Registration).
	PreviousIncarnation int64
	// Synced: the process before this one on the same disk synced every
	// append before reporting it (flush_every_append), so even a crash
	// or power loss lost nothing it had reported beyond LostData: the
	// controller takes its restart as clean too.
	Synced bool
}

// Heartbeat keeps a broker's session alive. MetadataVersion is the last
// StateUpdate version the broker applied with none missing before it: the
// controller sends the whole state again to a broker that has fallen
// behind, so a lost update costs a heartbeat interval, not the partition.
type Heartbeat struct {
	Incarnation     int64
	MetadataVersion uint64
	// WantShutDown asks for a controlled shutdown (KRaft's
	// BrokerHeartbeat.WantShutDown): the controller moves the broker's
	// leaderships away, takes it out of the ISRs and answers with a
	// ShutdownAnswer.
	WantShutDown bool
}

// ShutdownAnswer answers a Heartbeat that asked to shut down:
// ShouldShutDown once the broker leads no partition (KRaft's
// BrokerHeartbeatResponse.ShouldShutDown).
type ShutdownAnswer struct {
	Incarnation    int64
	ShouldShutDown bool
}

// StateUpdate carries partition states from the controller. Incarnation is
// the broker incarnation the controller addressed: a restarted broker
// ignores updates meant for its previous life, so it never acts on a
// leadership the controller granted before it knew of the restart.
type StateUpdate struct {
	Incarnation int64
	// Version numbers the controller's updates, 1, 2, ... (a full state
	// carries the version it is current to): a broker that sees a gap
	// knows an update was lost.
	Version     uint64
	Full        bool // the broker's registration was accepted; this is everything
	States      []kafka.PartitionState
	LiveBrokers []int32
	// Addresses maps broker ids to their advertised addresses, as
	// registered; nil when nothing changed.
	Addresses map[int32]string
	// TopicConfigs holds the settings of every topic that has its own
	// (nil: none); each update carries them all.
	TopicConfigs map[string]kafka.TopicConfig
}

// CreateTopic asks the controller for a new topic (kafka.CreateTopic).
type CreateTopic = kafka.CreateTopic

// CreateTopicResponse answers CreateTopic.
type CreateTopicResponse = kafka.CreateTopicResponse

// Client plane: clients -> brokers.

// ProduceRequest appends one batch of records to one partition, as the
// producer built it: an idempotent producer's batch carries its producer id
// (from InitProducerID), epoch and base sequence; another's has
// record.NoProducerID and record.NoSequence. The leader sets the offsets
// and the leader epoch.
type ProduceRequest struct {
	Correlation uint64
	kafka.TopicPartition
	Acks      partition.Acks
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
