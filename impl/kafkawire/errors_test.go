package kafkawire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// transportError stands for an error decoded off a transport: a different
// value whose Unwrap returns the sentinel.
type transportError struct{ cause error }

func (e *transportError) Error() string { return "remote: " + e.cause.Error() }
func (e *transportError) Unwrap() error { return e.cause }

// TestErrorCodes checks every sentinel a client can meet maps to its Kafka
// code, bare, wrapped with context, and unwrapped from a transport error.
func TestErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int16
	}{
		{partition.ErrNotLeader, 6},
		{partition.ErrLeaderChanged, 6},
		{partition.ErrStaleBrokerEpoch, 6},
		{partition.ErrFencedLeaderEpoch, 74},
		{partition.ErrUnknownLeaderEpoch, 75},
		{partition.ErrOffsetOutOfRange, 1},
		{partition.ErrNotEnoughReplicas, 19},
		{partition.ErrNotEnoughReplicasAfterAppend, 20},
		{partition.ErrInvalidRecord, 87},
		{partition.ErrOutOfOrderSequence, 45},
		{partition.ErrInvalidProducerEpoch, 47},
		{partition.ErrUnknownProducerID, 59},
		{broker.ErrUnknownTopicOrPartition, 3},
		{broker.ErrRequestTimedOut, 7},
		{broker.ErrCoordinatorNotAvailable, 15},
		{broker.ErrProducerIDsExhausted, -1},
		{controller.ErrTopicExists, 36},
		{controller.ErrInvalidTopic, 17},
		{controller.ErrInvalidPartitions, 37},
		{controller.ErrInvalidReplicationFactor, 38},
		{storage.ErrLogFailed, 56},
		{errCorruptBatch, 2},
		{errInvalidBatch, 87},
		{errUnsupportedCodec, 76},
		{errTimedOut, 7},
		{errors.New("something else"), -1},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			require.Equal(t, tc.code, errorCode(tc.err))
			require.Equal(t, tc.code, errorCode(fmt.Errorf("produce to t-0: %w", tc.err)))
			require.Equal(t, tc.code, errorCode(&transportError{tc.err}))
			if tc.code >= 0 {
				require.NotNil(t, kerr.ErrorForCode(tc.code), "code %d is a Kafka error", tc.code)
			}
		})
	}
	require.Zero(t, errorCode(nil))
	require.Nil(t, errorMessage(nil))
}
