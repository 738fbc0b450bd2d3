package controller

import (
	"fmt"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// EventKind says what an Event records.
type EventKind int8

// The kinds of Event.
const (
	BrokerRegistered   EventKind = iota + 1 // first registration, or a new incarnation
	BrokerDead                              // session expired, or fenced because it restarted
	BrokerRevived                           // a dead broker of the same incarnation is heard from again
	PartitionCreated                        // a partition came into being
	ElectionClean                           // a new leader from the ISR
	ElectionUnclean                         // a new leader from outside the ISR, ISR reset to it
	ElectionPreferred                       // leadership moved back to the preferred replica
	Offline                                 // the leader was lost and no replica may replace it
	ISRChange                               // ISR changed, leader did not
	ElectionEligible                        // a new leader from the eligible leader replicas (KIP-966), ISR reset to it
	BrokerShuttingDown                      // a broker asked for a controlled shutdown
	ElectionShutdown                        // a new leader from the ISR, as the leader shuts down
	BrokerShutDown                          // a broker's controlled shutdown is done: fenced, it may stop
	ElectionRecovery                        // an unclean recovery's leader: the replica whose reported log end ranks highest (KIP-966), ISR reset to it
)

var kindNames = [...]string{
	BrokerRegistered:   "broker-registered",
	BrokerDead:         "broker-dead",
	BrokerRevived:      "broker-revived",
	PartitionCreated:   "partition-created",
	ElectionClean:      "election-clean",
	ElectionUnclean:    "election-unclean",
	ElectionPreferred:  "election-preferred",
	Offline:            "offline",
	ISRChange:          "isr-change",
	ElectionEligible:   "election-eligible",
	BrokerShuttingDown: "broker-shutting-down",
	ElectionShutdown:   "election-shutdown",
	BrokerShutDown:     "broker-shut-down",
	ElectionRecovery:   "election-recovery",
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
	return k == BrokerRegistered || k == BrokerDead || k == BrokerRevived || k == BrokerShuttingDown || k == BrokerShutDown
}

// IsElection reports whether events of this kind give a partition a new
// leader.
func (k EventKind) IsElection() bool {
	switch k {
	case ElectionClean, ElectionUnclean, ElectionPreferred, ElectionEligible, ElectionShutdown, ElectionRecovery:
		return true
	}
	return false
}

// Event records one decision of the controller, for traces and for checkers
// that annotate histories with elections.
//
// Invariants:
//  1. Kind.IsBroker() implies only Now, Broker and Incarnation are set.
//  2. Otherwise State is the partition's state after the change, OldLeader
//     and OldISR its leader and ISR before it (kafka.NoLeader and nil for
//     PartitionCreated), and Broker the leader whose AlterPartition caused
//     the change, or -1 when the controller decided on its own.
//  3. Ends is set for ElectionRecovery only: every answer the recovery
//     took, sorted by broker, the new leader's among them.
type Event struct {
	Kind        EventKind
	Now         int64 // logical time of the call that caused the event
	Broker      int32
	Incarnation int64
	State       kafka.PartitionState
	OldLeader   int32
	OldISR      []int32
	// Ends are the log ends the replicas reported to an unclean recovery:
	// what it chose from. Records past the new leader's end on any other
	// replica, answered or not, are lost; nobody can know those of the
	// replicas that did not answer.
	Ends []ReplicaEnd
}

// ReplicaEnd is one replica's answer to an unclean recovery.
type ReplicaEnd struct {
	Broker int32
	kafka.LogEnd
}

// String renders e on one line.
func (e Event) String() string {
	if e.Kind.IsBroker() {
		return fmt.Sprintf("t=%d %s broker=%d incarnation=%d", e.Now, e.Kind, e.Broker, e.Incarnation)
	}
	s := e.State
	out := fmt.Sprintf("t=%d %s %s leader=%d->%d leader-epoch=%d isr=%s->%s partition-epoch=%d",
		e.Now, e.Kind, s.TopicPartition, e.OldLeader, s.Leader, s.LeaderEpoch,
		ids(e.OldISR), ids(s.ISR), s.PartitionEpoch)
	if e.Kind == ElectionRecovery {
		out += " ends=" + ends(e.Ends)
	}
	return out
}

// ends renders recovery answers as "[2:0/340 3:0/200]" (broker:epoch/offset).
func ends(es []ReplicaEnd) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("%d:%s", e.Broker, e.LogEnd)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Update is the set of partition states one broker must apply: Kafka's
// LeaderAndIsr request, or the slice of metadata a KRaft broker replays.
//
// Invariants:
//  1. States is non-empty and sorted by topic, then partition, one per partition.
//  2. Broker is alive and is a replica of every partition in States.
type Update struct {
	Broker int32
	States []kafka.PartitionState
}

// Ready is everything the controller decided since the previous Ready.
//
// Invariants:
//  1. Events are in the order the controller decided them.
//  2. Updates are sorted by Broker, one per broker.
//  3. Asks are the questions of unclean recoveries (recovery.go), each to
//     a live replica of an offline partition, in the order asked.
//  4. Answers answer brokers' requests, in the order received. The driver
//     sends them last: a broker learns an outcome only after the states
//     it produced.
//  5. Records hold the new value of everything durable that changed,
//     one record per thing, with its newest value: topics sorted by
//     name, then brokers sorted by id, then partitions sorted by
//     kafka.TopicPartition.Compare (records.go). Applied in order to an
//     Image of the state before, they make it the controller's state.
type Ready struct {
	Events  []Event
	Records []Record
	Updates []Update
	Asks    []kafka.ReplicaLogInfoRequest
	Answers []Answer
}

// Answer is the controller's answer to one broker's request.
type Answer struct {
	Broker int32
	Msg    kafka.Answer
}

// IsEmpty reports whether there is nothing to send or log.
func (r Ready) IsEmpty() bool {
	return len(r.Events) == 0 && len(r.Records) == 0 && len(r.Updates) == 0 && len(r.Asks) == 0 && len(r.Answers) == 0
}

// String renders r on several lines, for scenario tests and traces.
func (r Ready) String() string {
	var b strings.Builder
	for _, e := range r.Events {
		fmt.Fprintf(&b, "event %s\n", e)
	}
	for _, rec := range r.Records {
		fmt.Fprintf(&b, "record %s\n", rec)
	}
	for _, u := range r.Updates {
		for _, s := range u.States {
			fmt.Fprintf(&b, "update broker=%d %s\n", u.Broker, s)
		}
	}
	for _, a := range r.Asks {
		fmt.Fprintf(&b, "ask broker=%d incarnation=%d %s partition-epoch=%d\n", a.BrokerID, a.Incarnation, a.TopicPartition, a.PartitionEpoch)
	}
	for _, a := range r.Answers {
		fmt.Fprintf(&b, "answer broker=%d %s\n", a.Broker, a.Msg)
	}
	return b.String()
}

// ids renders broker ids as "[1 2 3]".
func ids(s []int32) string { return fmt.Sprint(s) }
