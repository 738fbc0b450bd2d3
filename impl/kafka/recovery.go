package kafka

import (
	"cmp"
	"fmt"
)

// ReplicaLogInfoRequest is the controller's question to one replica of an
// offline partition during an unclean recovery: where does your log end?
// KIP-966's GetReplicaLogInfo, which Kafka 4.1 does not have (the RPCs of
// KAFKA-18681 were reverted); the reference's own message.
type ReplicaLogInfoRequest struct {
	TopicPartition
	// BrokerID is the replica asked; Incarnation its process the
	// controller registered. Another process of the broker does not
	// answer: what it holds may differ from what the recovery is about.
	BrokerID    int32
	Incarnation int64
	// PartitionEpoch is the partition epoch of the offline state the
	// recovery began from; the answer echoes it, so that an answer to an
	// earlier recovery of the same partition is told apart.
	PartitionEpoch int32
}

// ReplicaLogInfo answers a ReplicaLogInfoRequest with where the replica's
// log ends.
type ReplicaLogInfo struct {
	TopicPartition
	// BrokerID is the answering replica: the network's sender, which the
	// controller's host fills in, as it does AlterPartition's LeaderID.
	BrokerID    int32
	Incarnation int64 // the answering process
	// PartitionEpoch echoes the request's.
	PartitionEpoch int32
	LogEnd
}

// LogEnd is where a replica's log ends: the leader epoch of its last
// record (KIP-966's LastWrittenLeaderEpoch; -1 for a log with none) and
// its log end offset.
type LogEnd struct {
	LastEpoch int32
	Offset    int64
}

// Compare orders log ends as an unclean recovery ranks them: the higher
// last epoch first, then the longer log (KIP-966). A log whose last
// record is of a later epoch was written by a later leader, who held
// every record committed before it; what a longer log of an older epoch
// holds beyond that was never committed.
func (e LogEnd) Compare(o LogEnd) int {
	if c := cmp.Compare(e.LastEpoch, o.LastEpoch); c != 0 {
		return c
	}
	return cmp.Compare(e.Offset, o.Offset)
}

// String renders e as "epoch/offset".
func (e LogEnd) String() string { return fmt.Sprintf("%d/%d", e.LastEpoch, e.Offset) }
