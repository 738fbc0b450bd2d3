package broker

import "github.com/watermarkhq/watermark/impl/kafka"

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
	// ControllerEpoch is the term of the active controller that answers
	// (every message a controller sends a broker carries it): a broker
	// ignores a controller older than the newest it heard from.
	ControllerEpoch uint64
}

// HeartbeatAnswer answers a Heartbeat the active controller accepted
// (KRaft's BrokerHeartbeatResponse): a broker that hears none for a while
// takes its controller for gone and looks for the active one.
type HeartbeatAnswer struct {
	Incarnation     int64
	ControllerEpoch uint64
}

// NotController answers a broker that sent a controller request to a
// voter that is not the active controller (NOT_CONTROLLER): Leader is the
// voter it knows leads the quorum, 0 when it knows none, Epoch its term.
// The broker sends its next requests there, or to the next voter.
type NotController struct {
	Epoch  uint64
	Leader NodeID
}

// StateUpdate carries partition states from the controller. Incarnation is
// the broker incarnation the controller addressed: a restarted broker
// ignores updates meant for its previous life, so it never acts on a
// leadership the controller granted before it knew of the restart.
type StateUpdate struct {
	Incarnation int64
	// Version is the metadata log's index the update is current to (a
	// full state, or the changes its last committed batch made): it only
	// grows, across controllers too, as the log does.
	Version uint64
	// Prev is the Version of the update sent before this one (0 for the
	// first an active controller sends): a broker whose last applied
	// version is not Prev missed one.
	Prev uint64
	// ControllerEpoch is the sending controller's term.
	ControllerEpoch uint64
	Full            bool // the broker's registration was accepted; this is everything
	States          []kafka.PartitionState
	LiveBrokers     []int32
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
