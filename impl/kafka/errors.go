package kafka

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is an outcome a node answers with: one of the sentinels below, or
// one derived from a sentinel with more detail (With). Each has a Kafka
// error code; several sentinels may share one (ErrLeaderChanged and
// ErrNotLeader are both NOT_LEADER_OR_FOLLOWER on the wire), and within a
// process they stay apart, because a caller may treat them differently.
//
// Callers branch with errors.Is(err, ErrX). An Error crossing the internal
// transport keeps its identity (gob, below); one crossing the Kafka wire
// keeps its code, and comes back as the code's first sentinel in the
// table.
type Error struct {
	kafka *kerr.Error // Kafka's code, name and retriability
	text  string
	// base is the sentinel this error is or derives from (itself for a
	// sentinel): errors.Is matches it.
	base *Error
}

// The table: every error a node answers with, in one place. The first
// sentinel of a code is its canonical one, what ForCode returns.
var (
	ErrUnknownServer                = sentinel(kerr.UnknownServerError, "unknown server error")
	ErrOffsetOutOfRange             = sentinel(kerr.OffsetOutOfRange, "offset out of range")
	ErrCorruptMessage               = sentinel(kerr.CorruptMessage, "corrupt record batch")
	ErrMessageTooLarge              = sentinel(kerr.MessageTooLarge, "record batch too large")
	ErrUnknownTopicOrPartition      = sentinel(kerr.UnknownTopicOrPartition, "unknown topic or partition")
	ErrNotLeader                    = sentinel(kerr.NotLeaderForPartition, "not leader or follower")
	ErrRequestTimedOut              = sentinel(kerr.RequestTimedOut, "request timed out")
	ErrCoordinatorLoadInProgress    = sentinel(kerr.CoordinatorLoadInProgress, "coordinator load in progress")
	ErrCoordinatorNotAvailable      = sentinel(kerr.CoordinatorNotAvailable, "coordinator not available")
	ErrNotCoordinator               = sentinel(kerr.NotCoordinator, "not coordinator")
	ErrInvalidTopic                 = sentinel(kerr.InvalidTopicException, "invalid topic name")
	ErrNotEnoughReplicas            = sentinel(kerr.NotEnoughReplicas, "not enough replicas")
	ErrNotEnoughReplicasAfterAppend = sentinel(kerr.NotEnoughReplicasAfterAppend, "not enough replicas after append")
	ErrIllegalGeneration            = sentinel(kerr.IllegalGeneration, "illegal generation")
	ErrInconsistentGroupProtocol    = sentinel(kerr.InconsistentGroupProtocol, "inconsistent group protocol")
	ErrInvalidGroupID               = sentinel(kerr.InvalidGroupID, "invalid group id")
	ErrUnknownMemberID              = sentinel(kerr.UnknownMemberID, "unknown member id")
	ErrInvalidSessionTimeout        = sentinel(kerr.InvalidSessionTimeout, "invalid session timeout")
	ErrRebalanceInProgress          = sentinel(kerr.RebalanceInProgress, "rebalance in progress")
	ErrTopicExists                  = sentinel(kerr.TopicAlreadyExists, "topic already exists")
	ErrInvalidPartitions            = sentinel(kerr.InvalidPartitions, "invalid number of partitions")
	ErrInvalidReplicationFactor     = sentinel(kerr.InvalidReplicationFactor, "invalid replication factor")
	ErrInvalidRequest               = sentinel(kerr.InvalidRequest, "invalid request")
	ErrOutOfOrderSequence           = sentinel(kerr.OutOfOrderSequenceNumber, "out of order sequence number")
	ErrInvalidProducerEpoch         = sentinel(kerr.InvalidProducerEpoch, "invalid producer epoch")
	ErrStorage                      = sentinel(kerr.KafkaStorageError, "log failed after an I/O error")
	ErrUnknownProducerID            = sentinel(kerr.UnknownProducerID, "unknown producer id")
	ErrGroupIDNotFound              = sentinel(kerr.GroupIDNotFound, "group id not found")
	ErrFencedLeaderEpoch            = sentinel(kerr.FencedLeaderEpoch, "fenced leader epoch")
	ErrUnknownLeaderEpoch           = sentinel(kerr.UnknownLeaderEpoch, "unknown leader epoch")
	ErrUnsupportedCompression       = sentinel(kerr.UnsupportedCompressionType, "unsupported compression codec")
	ErrStaleBrokerEpoch             = sentinel(kerr.StaleBrokerEpoch, "stale broker epoch")
	ErrMemberIDRequired             = sentinel(kerr.MemberIDRequired, "member id required")
	ErrInvalidRecord                = sentinel(kerr.InvalidRecord, "invalid record")
	ErrInvalidUpdateVersion         = sentinel(kerr.InvalidUpdateVersion, "invalid update version")
	ErrBrokerIDNotRegistered        = sentinel(kerr.BrokerIDNotRegistered, "unknown broker")
	ErrIneligibleReplica            = sentinel(kerr.IneligibleReplica, "ineligible replica")
	ErrNotController                = sentinel(kerr.NotController, "not the active controller")
	ErrInvalidConfig                = sentinel(kerr.InvalidConfig, "invalid config")
	// ErrNetwork: the connection closed before the answer came (Kafka
	// clients' NetworkException, retriable): the request may have been
	// carried out.
	ErrNetwork = sentinel(kerr.NetworkException, "the connection closed before the answer came")
	// ErrDuplicateBrokerRegistration refuses a new process's registration
	// while the broker's previous process still has a live session, and
	// was not in a controlled shutdown (KRaft's ClusterControlManager).
	ErrDuplicateBrokerRegistration = sentinel(kerr.DuplicateBrokerRegistration, "another process of this broker is registered and its session is live")

	// Sentinels that share a code with one above: the same answer on the
	// wire, a different meaning to a caller in the same process.

	// ErrLeaderChanged answers a produce parked on a leader that lost its
	// leadership: the batch is in the old leader's log and may yet commit.
	ErrLeaderChanged = sentinel(kerr.NotLeaderForPartition, "leader changed before the request completed")
	// ErrStaleIncarnation refuses a registration or heartbeat from a broker
	// process older than the registered one (KIP-903's broker epoch).
	ErrStaleIncarnation = sentinel(kerr.StaleBrokerEpoch, "stale broker incarnation")
	// ErrInvalidBrokerID refuses a broker id outside the cluster's range.
	ErrInvalidBrokerID = sentinel(kerr.InvalidRequest, "invalid broker id")
	// ErrProducerIDsExhausted: one broker process handed out every producer
	// id it may (Kafka has no code for it).
	ErrProducerIDsExhausted = sentinel(kerr.UnknownServerError, "producer ids exhausted for this broker process: restart it")
)

var (
	sentinels []*Error          // in table order
	canonical map[int16]*Error  // the first sentinel of each code
	byText    map[errKey]*Error // every sentinel, by code and text
)

type errKey struct {
	code int16
	text string
}

// sentinel adds an error to the table. It returns an error, not an *Error,
// so that a variable holding one is never a typed nil.
func sentinel(k *kerr.Error, text string) error { return newError(k, text) }

func newError(k *kerr.Error, text string) *Error {
	e := &Error{kafka: k, text: text}
	e.base = e
	sentinels = append(sentinels, e)
	return e
}

func init() {
	canonical = map[int16]*Error{}
	byText = map[errKey]*Error{}
	for _, e := range sentinels {
		if _, ok := canonical[e.Code()]; !ok {
			canonical[e.Code()] = e
		}
		byText[errKey{e.Code(), e.text}] = e
	}
}

// Sentinels lists the table, in order.
func Sentinels() []error {
	out := make([]error, len(sentinels))
	for i, e := range sentinels {
		out[i] = e
	}
	return out
}

// Error returns what happened, in words.
func (e *Error) Error() string { return e.text }

// Code is the Kafka error code the wire carries for e.
func (e *Error) Code() int16 { return e.kafka.Code }

// Name is Kafka's name of e's code, such as NOT_LEADER_OR_FOLLOWER.
func (e *Error) Name() string {
	if n, ok := renamed[e.Code()]; ok {
		return n
	}
	return e.kafka.Message
}

// renamed holds the codes Kafka has renamed since franz-go's kerr took
// their names: Kafka 2.7 calls code 6 NOT_LEADER_OR_FOLLOWER, since
// followers serve fetches too (KIP-392).
var renamed = map[int16]string{6: "NOT_LEADER_OR_FOLLOWER"}

// Retriable reports whether Kafka's clients retry on e's code.
func (e *Error) Retriable() bool { return e.kafka.Retriable }

// Is matches the sentinel e is or derives from, and franz-go's kerr value
// of its code, so that errors.Is(err, kerr.NotLeaderForPartition) holds too.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *Error:
		return t == e.base
	case *kerr.Error:
		return t.Code == e.Code()
	}
	return false
}

// With derives an error from a sentinel with more detail: the same code,
// and errors.Is matches the sentinel. Use it rather than fmt.Errorf for an
// error that travels between nodes, where only an *Error crosses. An err
// that is no *Error is wrapped with fmt.Errorf.
func With(err error, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	e, ok := err.(*Error)
	if !ok {
		return fmt.Errorf("%w: %s", err, detail)
	}
	return &Error{kafka: e.kafka, text: e.text + ": " + detail, base: e.base}
}

// CommitOutcomeUnknown reports whether err, a coordinator's answer to an
// OffsetCommit that reached it, leaves the commit's outcome unknown: the
// offsets may have been stored or not. It holds for NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT and
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, matched by code so that an error read
// back from the wire counts as the sentinel it stands for.
//
// Kafka 4.x's coordinator appends a commit with acks=1 and answers once the
// high watermark passes it (CoordinatorRuntime, CoordinatorPartitionWriter):
// a commit that outlives offsets.commit.timeout.ms is answered
// COORDINATOR_NOT_AVAILABLE (REQUEST_TIMED_OUT, remapped by
// CoordinatorOperationExceptionHelper.handleOperationException) and one
// whose leader moved NOT_COORDINATOR, while its record may still commit.
// Kafka 3.x's coordinator wrote with acks=all and answered a timeout as
// REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS_AFTER_APPEND as
// COORDINATOR_NOT_AVAILABLE (GroupMetadataManager.storeOffsets); a broker
// that passes the append's own error on answers the latter as is.
func CommitOutcomeUnknown(err error) bool {
	if err == nil {
		return false
	}
	switch CodeOf(err) {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.RequestTimedOut.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return true
	}
	return false
}

// CodeOf is the Kafka error code for err: 0 for nil, the code of the
// *Error it is or wraps, and UNKNOWN_SERVER_ERROR for anything else.
func CodeOf(err error) int16 {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return kerr.UnknownServerError.Code
}

// ForCode is the error a Kafka error code stands for: nil for 0, the
// code's canonical sentinel, or for a code outside the table an *Error of
// that code named as Kafka names it.
func ForCode(code int16) error {
	if code == 0 {
		return nil
	}
	if e, ok := canonical[code]; ok {
		return e
	}
	k, ok := kerr.ErrorForCode(code).(*kerr.Error)
	if !ok || k.Code != code {
		k = &kerr.Error{Message: fmt.Sprintf("UNKNOWN_CODE_%d", code), Code: code}
	}
	e := &Error{kafka: k, text: k.Message}
	e.base = e
	return e
}

// Name is Kafka's name of err's code: NONE for nil, UNKNOWN_SERVER_ERROR for
// an error outside the table.
func Name(err error) string {
	if err == nil {
		return "NONE"
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Name()
	}
	return kerr.UnknownServerError.Message
}

// wireError is an Error as the internal transport carries it.
type wireError struct {
	Code     int16
	BaseText string
	Text     string
}

// GobEncode lets an Error travel in a gob-encoded message as itself: the
// receiver gets the same sentinel back (or one derived from it), so
// errors.Is works across processes.
func (e *Error) GobEncode() ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(wireError{Code: e.Code(), BaseText: e.base.text, Text: e.text})
	return buf.Bytes(), err
}

// GobDecode rebuilds what GobEncode wrote. A sentinel this build does not
// know (a peer of another version) becomes its code's canonical one.
func (e *Error) GobDecode(data []byte) error {
	var w wireError
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return err
	}
	base, ok := byText[errKey{w.Code, w.BaseText}]
	if !ok {
		b, _ := ForCode(w.Code).(*Error)
		if b == nil {
			return fmt.Errorf("error with code 0 (%q): want a failure", w.Text)
		}
		base = b
	}
	*e = Error{kafka: base.kafka, text: w.Text, base: base}
	if w.Text == base.text {
		e.text = base.text
	}
	return nil
}
