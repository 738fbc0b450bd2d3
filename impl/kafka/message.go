package kafka

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
)

// Message is one message between the reference's nodes: the control plane
// (broker and controller), replication (broker and broker) and the client
// plane (the reference client and a broker). Every message type implements
// it, and each kind has one row in the registry (Register), which says
// what answers it and whether it crosses between processes.
type Message interface {
	// Kind names the message. A run file's messages fault selects messages
	// by it, and traces print it.
	Kind() Kind
}

// Kind names a kind of Message, as run files spell it: "replica-fetch",
// "produce-response".
type Kind string

// Answer is a message that answers a request.
type Answer interface {
	Message
	// Corr is the correlation of the request it answers: the client's
	// correlation on the client plane, the request's id on replication.
	Corr() uint64
	// Failure is the error it answers with, nil when none. Between
	// processes it must be a *Error (impl/node refuses to send another),
	// so that the receiver can branch on it with errors.Is.
	Failure() error
}

// Partitioned is a message about one partition.
type Partitioned interface {
	Message
	Subject() TopicPartition
}

// Row is the registry's row of one kind of message.
type Row struct {
	Kind Kind
	// Proto is a value of the message's type (its zero value will do):
	// impl/node registers it with gob when Wire is set.
	Proto Message
	// Answer is the kind that answers it; "" when nothing does (an answer,
	// a notice such as a heartbeat, or a request answered by a kind of
	// another name, which Answer then names).
	Answer Kind
	// Wire says the message crosses between processes: the control plane
	// and replication. A client request never does: a connection's
	// requests go to the broker it reached.
	Wire bool
	// Family is a second name a messages fault selects the kind by ("group"
	// selects every request of the group plane); "" when none.
	Family Kind
}

var registry struct {
	sync.RWMutex
	rows map[Kind]Row
}

// Register adds rows to the registry, each package its own messages from
// its init. A kind registered twice, or a Proto whose Kind is not its
// row's, is a programming error and panics.
func Register(rows ...Row) {
	registry.Lock()
	defer registry.Unlock()
	if registry.rows == nil {
		registry.rows = map[Kind]Row{}
	}
	for _, r := range rows {
		if r.Kind == "" || r.Proto == nil {
			panic(fmt.Sprintf("kafka.Register: row %+v needs a Kind and a Proto", r))
		}
		if _, dup := registry.rows[r.Kind]; dup {
			panic(fmt.Sprintf("kafka.Register: kind %q registered twice", r.Kind))
		}
		registry.rows[r.Kind] = r
	}
}

// RowOf is kind k's row.
func RowOf(k Kind) (Row, bool) {
	registry.RLock()
	defer registry.RUnlock()
	r, ok := registry.rows[k]
	return r, ok
}

// Rows lists every registered row, sorted by kind.
func Rows() []Row {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Row, 0, len(registry.rows))
	for _, r := range registry.rows {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Row) int { return cmp.Compare(a.Kind, b.Kind) })
	return out
}

// Subject makes every message that embeds a TopicPartition Partitioned.
func (tp TopicPartition) Subject() TopicPartition { return tp }

// The control plane's messages of this package: a leader's ISR proposal
// and an unclean recovery's question, with their answers.
func init() {
	Register(
		Row{Kind: "alter-partition", Proto: AlterPartition{}, Answer: "alter-partition-response", Wire: true},
		Row{Kind: "alter-partition-response", Proto: AlterPartitionAnswer{}, Wire: true},
		Row{Kind: "replica-log-info", Proto: ReplicaLogInfoRequest{}, Answer: "replica-log-info-response", Wire: true},
		Row{Kind: "replica-log-info-response", Proto: ReplicaLogInfo{}, Wire: true},
	)
}

// Kind implements Message.
func (AlterPartition) Kind() Kind { return "alter-partition" }

// ControllerNode is the controller's node id, where an AlterPartition
// goes.
const ControllerNode int32 = 0

// Destination is where a proposal goes: the controller.
func (AlterPartition) Destination() int32 { return ControllerNode }

// Kind implements Message.
func (AlterPartitionAnswer) Kind() Kind { return "alter-partition-response" }

// Corr implements Answer: the proposal answered.
func (a AlterPartitionAnswer) Corr() uint64 { return a.ProposalID }

// Failure implements Answer.
func (a AlterPartitionAnswer) Failure() error { return a.Err }

// String renders the answer as controller scenarios print it: the
// partition's state and the error's name.
func (a AlterPartitionAnswer) String() string { return fmt.Sprintf("%s err=%s", a.State, Name(a.Err)) }

// Kind implements Message.
func (ReplicaLogInfoRequest) Kind() Kind { return "replica-log-info" }

// Kind implements Message.
func (ReplicaLogInfo) Kind() Kind { return "replica-log-info-response" }
