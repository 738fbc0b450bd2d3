package kafka

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String renders tp as Kafka's logs do, "topic-partition".
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Compare orders partitions by topic, then by partition number. Every pass
// over a set of partitions uses this order (slices.SortFunc(tps,
// TopicPartition.Compare)), so that nothing depends on map order.
func (tp TopicPartition) Compare(o TopicPartition) int {
	if c := strings.Compare(tp.Topic, o.Topic); c != 0 {
		return c
	}
	return cmp.Compare(tp.Partition, o.Partition)
}

// NoLeader is the Leader of an offline partition.
const NoLeader int32 = -1

// PartitionState is what the controller publishes for one partition:
// Kafka's LeaderAndIsr (ZooKeeper mode) or PartitionRecord (KRaft). Replicas
// learn their role from it; clients learn leaders from it in metadata.
//
// Invariants (for every state the controller holds or hands out):
//  1. Replicas is non-empty, holds distinct broker ids, and never changes.
//  2. ISR is non-empty, sorted, holds distinct ids, and is a subset of Replicas.
//  3. Leader == NoLeader or Leader is in ISR.
//  4. LeaderEpoch grows by exactly one on every change of Leader, including a
//     change to or from NoLeader, and never otherwise.
//  5. PartitionEpoch (KIP-497) grows by exactly one on every change of Leader
//     or ISR, and never otherwise.
type PartitionState struct {
	TopicPartition
	Replicas       []int32 // assignment; Replicas[0] is the preferred leader
	Leader         int32   // NoLeader when offline
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
}

// Clone returns a deep copy, so that callers never alias another's state.
func (s PartitionState) Clone() PartitionState {
	s.Replicas = slices.Clone(s.Replicas)
	s.ISR = slices.Clone(s.ISR)
	return s
}

// NewerThan reports whether s supersedes old: a higher leader epoch, or the
// same leader epoch with a higher partition epoch. States travel late and
// out of order; only a newer one may replace what a node knows.
func (s PartitionState) NewerThan(old PartitionState) bool {
	if s.LeaderEpoch != old.LeaderEpoch {
		return s.LeaderEpoch > old.LeaderEpoch
	}
	return s.PartitionEpoch > old.PartitionEpoch
}

// String renders s on one line.
func (s PartitionState) String() string {
	return fmt.Sprintf("%s replicas=%v leader=%d leader-epoch=%d isr=%v partition-epoch=%d",
		s.TopicPartition, s.Replicas, s.Leader, s.LeaderEpoch, s.ISR, s.PartitionEpoch)
}

// AlterPartition is a leader's proposal of a new ISR to the controller
// (KIP-497's AlterPartition, formerly AlterIsr).
type AlterPartition struct {
	TopicPartition
	// ProposalID ties the controller's answer to this proposal: answers
	// can be late and reordered, and only the answer to the proposal in
	// flight may end it.
	ProposalID        uint64
	LeaderID          int32 // the sender, which must be the partition's leader
	LeaderIncarnation int64 // the sender's process incarnation (KIP-903's broker epoch)
	LeaderEpoch       int32 // the leader epoch the sender leads in
	PartitionEpoch    int32 // the partition epoch the proposal was made from
	NewISR            []int32
	// NewISRIncarnations holds, for each member of NewISR, the incarnation
	// its fetches came from (0 when the leader has not heard from it in
	// this epoch), KIP-903's NewIsrWithEpochs. The controller refuses to
	// add a member whose process has since restarted. nil skips the check.
	NewISRIncarnations []int64
}

// AlterPartitionAnswer is the controller's answer to an AlterPartition.
type AlterPartitionAnswer struct {
	TopicPartition
	ProposalID uint64 // echoes the proposal's
	Err        error
	// State is the partition's state after the proposal, accepted or not,
	// so that a refused leader learns the current epochs; zero for an
	// unknown partition.
	State PartitionState
}

// TopicConfig is a topic's own settings, set as it is created (Kafka's
// topic configs); a zero field means the broker's setting applies.
type TopicConfig struct {
	// MaxMessageBytes bounds a produced record batch of the topic, as it
	// comes on the wire (max.message.bytes); 0: the broker's
	// message.max.bytes.
	MaxMessageBytes int32 `json:",omitempty"`
	// MinInsyncReplicas is the ISR size an acks=all produce needs, and
	// below which the HW stands still and KIP-966's eligible replicas are
	// kept (min.insync.replicas); 0: the broker's.
	MinInsyncReplicas int32 `json:",omitempty"`
	// UncleanLeaderElection, when set, says whether a replica outside the
	// ISR may lead when no ISR member can (unclean.leader.election.enable);
	// nil: the controller's.
	UncleanLeaderElection *bool `json:",omitempty"`
}

// IsZero reports whether c sets nothing.
func (c TopicConfig) IsZero() bool { return c == TopicConfig{} }
