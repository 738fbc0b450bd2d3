package controller

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// NoLeader is the Leader of an offline partition.
const NoLeader int32 = -1

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String renders tp the way Kafka's logs do, "topic-partition".
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// compareTP orders partitions by topic, then by partition number; every pass
// over partitions uses this order so that output never depends on map order.
func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// PartitionState is what the controller publishes for one partition: Kafka's
// LeaderAndIsr (ZooKeeper mode) or PartitionRecord (KRaft).
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

// Clone returns a deep copy, so that callers never alias controller state.
func (s PartitionState) Clone() PartitionState {
	s.Replicas = slices.Clone(s.Replicas)
	s.ISR = slices.Clone(s.ISR)
	return s
}

// String renders s on one line, in the form Describe uses.
func (s PartitionState) String() string {
	return fmt.Sprintf("%s replicas=%s leader=%d leader-epoch=%d isr=%s partition-epoch=%d",
		s.TopicPartition, ids(s.Replicas), s.Leader, s.LeaderEpoch, ids(s.ISR), s.PartitionEpoch)
}

// Error is the outcome of an AlterPartition request, named after the Kafka
// error code the wire layer sends for it. It is not a Go error: None is success.
type Error int8

// The AlterPartition outcomes; see AlterPartition for when each is returned.
const (
	None                    Error = iota // accepted
	UnknownTopicOrPartition              // no such partition
	StaleBrokerEpoch                     // the sender's incarnation is not the registered one
	FencedLeaderEpoch                    // the request's LeaderEpoch is not the current one
	NotLeader                            // the sender does not lead the partition
	InvalidUpdateVersion                 // the request's PartitionEpoch is not the current one
	InvalidRequest                       // NewISR is malformed: empty, duplicates, non-replicas, or no leader
	IneligibleReplica                    // NewISR adds a broker that is dead or of another incarnation
)

var errorNames = [...]string{
	None:                    "NONE",
	UnknownTopicOrPartition: "UNKNOWN_TOPIC_OR_PARTITION",
	StaleBrokerEpoch:        "STALE_BROKER_EPOCH",
	FencedLeaderEpoch:       "FENCED_LEADER_EPOCH",
	NotLeader:               "NOT_LEADER_OR_FOLLOWER",
	InvalidUpdateVersion:    "INVALID_UPDATE_VERSION",
	InvalidRequest:          "INVALID_REQUEST",
	IneligibleReplica:       "INELIGIBLE_REPLICA",
}

// String returns the Kafka name of the error code.
func (e Error) String() string {
	if int(e) < len(errorNames) && e >= 0 {
		return errorNames[e]
	}
	return fmt.Sprintf("Error(%d)", int8(e))
}

// EventKind says what an Event records.
type EventKind int8

// The kinds of Event.
const (
	BrokerRegistered  EventKind = iota + 1 // first registration, or a new incarnation
	BrokerDead                             // session expired, or fenced because it restarted
	BrokerRevived                          // a dead broker of the same incarnation is heard from again
	PartitionCreated                       // a partition came into being
	ElectionClean                          // a new leader from the ISR
	ElectionUnclean                        // a new leader from outside the ISR, ISR reset to it
	ElectionPreferred                      // leadership moved back to the preferred replica
	Offline                                // the leader was lost and no replica may replace it
	ISRChange                              // ISR changed, leader did not
)

var kindNames = [...]string{
	BrokerRegistered:  "broker-registered",
	BrokerDead:        "broker-dead",
	BrokerRevived:     "broker-revived",
	PartitionCreated:  "partition-created",
	ElectionClean:     "election-clean",
	ElectionUnclean:   "election-unclean",
	ElectionPreferred: "election-preferred",
	Offline:           "offline",
	ISRChange:         "isr-change",
}

// String returns the kind's name as Describe and traces print it.
func (k EventKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int8(k))
}

// IsBroker reports whether events of this kind are about a broker rather
// than a partition.
func (k EventKind) IsBroker() bool {
	return k == BrokerRegistered || k == BrokerDead || k == BrokerRevived
}

// Event records one decision of the controller, for traces and for checkers
// that annotate histories with elections.
//
// Invariants:
//  1. Kind.IsBroker() implies only Now, Broker and Incarnation are set.
//  2. Otherwise State is the partition's state after the change, OldLeader
//     and OldISR its leader and ISR before it (NoLeader and nil for
//     PartitionCreated), and Broker the leader whose AlterPartition caused
//     the change, or -1 when the controller decided on its own.
type Event struct {
	Kind        EventKind
	Now         int64 // logical time of the call that caused the event
	Broker      int32
	Incarnation int64
	State       PartitionState
	OldLeader   int32
	OldISR      []int32
}

// String renders e on one line.
func (e Event) String() string {
	if e.Kind.IsBroker() {
		return fmt.Sprintf("t=%d %s broker=%d incarnation=%d", e.Now, e.Kind, e.Broker, e.Incarnation)
	}
	s := e.State
	return fmt.Sprintf("t=%d %s %s leader=%d->%d leader-epoch=%d isr=%s->%s partition-epoch=%d",
		e.Now, e.Kind, s.TopicPartition, e.OldLeader, s.Leader, s.LeaderEpoch,
		ids(e.OldISR), ids(s.ISR), s.PartitionEpoch)
}

// Update is the set of partition states one broker must apply: Kafka's
// LeaderAndIsr request, or the slice of metadata a KRaft broker replays.
//
// Invariants:
//  1. States is non-empty and sorted by topic, then partition, one per partition.
//  2. Broker is alive and is a replica of every partition in States.
type Update struct {
	Broker int32
	States []PartitionState
}

// Ready is everything the controller decided since the previous Ready.
//
// Invariants:
//  1. Events are in the order the controller decided them.
//  2. Updates are sorted by Broker, one per broker.
type Ready struct {
	Events  []Event
	Updates []Update
}

// IsEmpty reports whether there is nothing to send or log.
func (r Ready) IsEmpty() bool { return len(r.Events) == 0 && len(r.Updates) == 0 }

// String renders r on several lines, for scenario tests and traces.
func (r Ready) String() string {
	var b strings.Builder
	for _, e := range r.Events {
		fmt.Fprintf(&b, "event %s\n", e)
	}
	for _, u := range r.Updates {
		for _, s := range u.States {
			fmt.Fprintf(&b, "update broker=%d %s\n", u.Broker, s)
		}
	}
	return b.String()
}

// ids renders broker ids as "[1 2 3]".
func ids(s []int32) string { return fmt.Sprint(s) }
