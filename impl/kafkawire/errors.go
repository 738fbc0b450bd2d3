package kafkawire

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Errors the wire server raises itself.
var (
	// errCorruptBatch: a produced record batch failed its CRC or does not
	// decode (CORRUPT_MESSAGE).
	errCorruptBatch = errors.New("corrupt record batch")
	// errInvalidBatch: a well-formed batch the broker cannot take as one
	// ProduceRequest: several batches for one partition, an old magic, a
	// control or transactional batch (INVALID_RECORD).
	errInvalidBatch = errors.New("record batch not accepted")
	// errUnsupportedCodec: compression codec bits outside 0..4.
	errUnsupportedCodec = errors.New("unsupported compression codec")
	// errTimedOut: no answer from the broker within the request's wait.
	errTimedOut = errors.New("no answer from the broker in time")
)

// errorCodes maps the errors of the broker, its partitions and the
// controller to Kafka error codes. The first match wins, both ways: for an
// error that wraps several sentinels, and for Client's mapping of a code
// back to its sentinel (so the first entry of a code is its canonical
// error).
var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{partition.ErrNotLeader, kerr.NotLeaderForPartition},
	{partition.ErrLeaderChanged, kerr.NotLeaderForPartition}, // Kafka answers a parked produce whose leader moved this way
	{partition.ErrStaleBrokerEpoch, kerr.NotLeaderForPartition},
	{partition.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{partition.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{partition.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{partition.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{partition.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{partition.ErrInvalidRecord, kerr.InvalidRecord},
	{partition.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{partition.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{partition.ErrUnknownProducerID, kerr.UnknownProducerID},
	{broker.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{broker.ErrRequestTimedOut, kerr.RequestTimedOut},
	{broker.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{controller.ErrTopicExists, kerr.TopicAlreadyExists},
	{controller.ErrInvalidTopic, kerr.InvalidTopicException},
	{controller.ErrInvalidPartitions, kerr.InvalidPartitions},
	{controller.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{storage.ErrLogFailed, kerr.KafkaStorageError},
	{errCorruptBatch, kerr.CorruptMessage},
	{errInvalidBatch, kerr.InvalidRecord},
	{errUnsupportedCodec, kerr.UnsupportedCompressionType},
	{errTimedOut, kerr.RequestTimedOut},
}

// errorCode is the Kafka error code for err: 0 for nil, the table's code for
// an error that is (or wraps, or unwraps to) a known sentinel, and
// UNKNOWN_SERVER_ERROR otherwise (broker.ErrProducerIDsExhausted among them:
// Kafka has no code for it).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is err's text for the responses that carry one, nil for nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
