// Package kitclient is the conformance kit's producer and consumer:
// Kafka's producer protocol (partitioning, acks, retries, idempotence) and
// its consumer protocol (long-poll fetches, positions and offset reset,
// group membership with generations, the range and round-robin assignors,
// commits) as pure state machines. The consumer is in consumer*.go; its
// exactly-once example (the offset stored with the output) is
// TestExactlyOnceByStoringTheOffsetWithTheOutput.
//
// The traffic (conformance/traffic) runs them against the simulated
// reference and, through impl/kafkaclient, against any Kafka-compatible
// broker: they are the kit's own clients, not a part of the reference
// broker. They speak the client plane's messages (impl/clientmsg,
// impl/groupmsg) and import none of the reference's cores; only their
// tests run them against in-process reference brokers (impl/broker).
//
// Like the reference's cores (impl/partition, impl/controller), they never
// read a clock, a random source or the network. Inputs are method calls
// carrying a logical time in milliseconds (Send, Handle, Tick,
// UpdateMetadata); Ready hands over the messages to send and the sends
// that completed. The caller delivers the messages and feeds the answers
// back through Handle.
//
// Each Send is one batch of one record. Per partition, batches are sent and
// completed in Send order, at most MaxInFlight of them between first send
// and completion. A retry resends the same batch; with idempotence it keeps
// its PID, epoch and sequence, so the broker deduplicates it. Outcomes are
// honest: OutcomeFail only when the record certainly was not written,
// OutcomeUnknown whenever an attempt may have been.
//
// When a partition's sequence can no longer advance under the current PID
// (a real gap: OUT_OF_ORDER_SEQUENCE or UNKNOWN_PRODUCER_ID with nothing
// earlier outstanding; INVALID_PRODUCER_EPOCH; a sequenced batch given up
// on), the producer takes a fresh PID from InitProducerID rather than
// bumping the epoch as KIP-360 does, and the partition restarts at sequence
// 0 once its batches under the old PID are resolved. A batch that may have
// been written under the old PID is never resent under the new one, which
// could not deduplicate it: it completes as OutcomeUnknown.
package kitclient

import (
	"errors"
	"fmt"

	"github.com/watermarkhq/watermark/impl/settings"
)

// Errors a Result can carry besides the brokers' own (kafka.Err...).
// Callers branch on them with errors.Is.
var (
	// ErrInvalidConfig wraps every Config.Validate error.
	ErrInvalidConfig = settings.ErrInvalidProducer
	// ErrInvalidMessage: the message names no topic or a partition < -1.
	ErrInvalidMessage = errors.New("invalid message")
	// ErrDeliveryTimeout: DeliveryTimeoutMs passed before the send
	// resolved. It wraps the last attempt's error, if any.
	ErrDeliveryTimeout = errors.New("delivery timeout expired")
	// ErrResponseTimeout: no answer to a produce within RequestTimeoutMs +
	// ResponseSlackMs; the request or its answer was lost, or the broker
	// is stuck.
	ErrResponseTimeout = errors.New("no response within the request timeout")
	// ErrSessionReset: the partition's producer session (PID, epoch) was
	// abandoned while this batch might have been written under it, so the
	// batch cannot be retried under the next one without risking a
	// duplicate. It wraps the batch's last error.
	ErrSessionReset = errors.New("producer session reset with the batch unresolved")
)

// MaxIdempotentInFlight is the most batches per partition an idempotent
// producer may have unresolved: the broker deduplicates a retry only against
// its last settings.DedupWindow batches of the producer.
const MaxIdempotentInFlight = settings.MaxIdempotentInFlight

// Config is the producer configuration (settings.Producer, with the Java
// client's defaults and its validation).
type Config = settings.Producer

// DefaultConfig returns the Java client's defaults (acks=all, idempotence
// on, 5 in flight, retries on, 100 ms backoff), with timeouts scaled for
// the simulator's logical milliseconds.
func DefaultConfig() Config { return settings.DefaultProducer() }

// Message is one record to send.
type Message struct {
	Topic string
	// Partition is the partition to send to, or -1 to let the Partitioner
	// choose.
	Partition int32
	// Key is hashed to choose the partition; nil (not empty) means none.
	Key   []byte
	Value []byte
}

// Outcome is what the producer knows about a send once it completes.
type Outcome uint8

// The outcomes. The zero value is invalid so that an unset Result is caught.
const (
	// OutcomeOK: the leader acknowledged the record at Result.Offset.
	OutcomeOK Outcome = iota + 1
	// OutcomeFail: the record was certainly not written: no attempt
	// reached a broker, or every attempt was refused before the append.
	OutcomeFail
	// OutcomeUnknown: the record may or may not have been written (an
	// acks=0 send, a lost answer, an error after the append).
	OutcomeUnknown
)

// String names the outcome as histories print it.
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeFail:
		return "fail"
	case OutcomeUnknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Result is the completion of one Send. Results of one partition come out
// in Send order.
type Result struct {
	ID        uint64
	Topic     string
	Partition int32 // -1 if the send never got a partition
	// Offset is the record's offset when Outcome is OutcomeOK, else -1.
	Offset  int64
	Outcome Outcome
	// Err is nil for OutcomeOK and for an acks=0 send; otherwise the
	// reason, matching a kafka.Err... or client Err...
	// sentinel with errors.Is.
	Err error
	// Attempts counts the produce requests sent for the record.
	Attempts int
	// ProducerID, ProducerEpoch and Sequence are what the last attempt
	// carried: record.NoProducerID, -1 and record.NoSequence when the
	// producer is not idempotent or the record was never sent with them.
	ProducerID    int64
	ProducerEpoch int16
	Sequence      int32
}
