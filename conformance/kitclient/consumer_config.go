package kitclient

import (
	"errors"

	"github.com/watermarkhq/watermark/impl/settings"
)

// Errors a consumer event can carry besides the brokers' own (impl/kafka's,
// the group coordinator's among them). Callers branch on them with
// errors.Is.
var (
	// ErrInvalidConsumerConfig wraps every ConsumerConfig.Validate error.
	ErrInvalidConsumerConfig = settings.ErrInvalidConsumer
	// ErrNoGroup: a commit from a consumer configured without a group.
	ErrNoGroup = errors.New("no group configured")
	// ErrNoOffset: auto.offset.reset is "none" and the partition has no
	// committed offset, or its position is out of range. The partition is
	// not fetched until Seek.
	ErrNoOffset = errors.New("no offset to start from and auto.offset.reset is none")
	// ErrNoCoordinator: a commit waited RequestTimeoutMs without a
	// coordinator to send it to. It was never sent.
	ErrNoCoordinator = errors.New("no group coordinator found")
	// ErrClosed: the consumer was closed before the commit resolved.
	ErrClosed = errors.New("consumer closed")
	// ErrNotAssigned: Seek of a partition the consumer is not assigned.
	ErrNotAssigned = errors.New("partition not assigned")
	// ErrSubscribed: Assign on a consumer that subscribes through its group.
	ErrSubscribed = errors.New("consumer subscribes through its group: no manual assignment")
)

// The assignors a ConsumerConfig may name (partition.assignment.strategy).
const (
	AssignorRange      = settings.AssignorRange
	AssignorRoundRobin = settings.AssignorRoundRobin
)

// The auto.offset.reset policies.
const (
	ResetEarliest = settings.ResetEarliest
	ResetLatest   = settings.ResetLatest
	ResetNone     = settings.ResetNone
)

// ConsumerConfig is the consumer configuration (settings.Consumer, with the
// Java client's defaults and its validation).
type ConsumerConfig = settings.Consumer

// DefaultConsumerConfig returns the Java client's defaults (range
// assignor, fetch.min.bytes 1, 1 MB per partition, auto.offset.reset
// latest, 100 ms backoff) with timeouts scaled for the simulator's logical
// milliseconds.
func DefaultConsumerConfig() ConsumerConfig { return settings.DefaultConsumer() }
