package kafka

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestErrorCodes pins the code each sentinel answers with on the wire,
// bare, wrapped with context, derived with With, and through kerr.
func TestErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int16
	}{
		{ErrNotLeader, 6},
		{ErrLeaderChanged, 6},
		{ErrStaleBrokerEpoch, 77},
		{ErrStaleIncarnation, 77},
		{ErrFencedLeaderEpoch, 74},
		{ErrUnknownLeaderEpoch, 75},
		{ErrOffsetOutOfRange, 1},
		{ErrNotEnoughReplicas, 19},
		{ErrNotEnoughReplicasAfterAppend, 20},
		{ErrInvalidRecord, 87},
		{ErrOutOfOrderSequence, 45},
		{ErrInvalidProducerEpoch, 47},
		{ErrUnknownProducerID, 59},
		{ErrUnknownTopicOrPartition, 3},
		{ErrRequestTimedOut, 7},
		{ErrCoordinatorNotAvailable, 15},
		{ErrNotCoordinator, 16},
		{ErrIllegalGeneration, 22},
		{ErrRebalanceInProgress, 27},
		{ErrMemberIDRequired, 79},
		{ErrProducerIDsExhausted, -1},
		{ErrTopicExists, 36},
		{ErrInvalidTopic, 17},
		{ErrInvalidPartitions, 37},
		{ErrInvalidReplicationFactor, 38},
		{ErrStorage, 56},
		{ErrCorruptMessage, 2},
		{ErrUnsupportedCompression, 76},
		{ErrIneligibleReplica, 107},
		{ErrInvalidConfig, 40},
		{errors.New("something else"), -1},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			require.Equal(t, tc.code, CodeOf(tc.err))
			require.Equal(t, tc.code, CodeOf(fmt.Errorf("produce to t-0: %w", tc.err)))
			require.Equal(t, tc.code, CodeOf(With(tc.err, "t-0")))
			if _, ok := tc.err.(*Error); ok {
				require.ErrorIs(t, tc.err, kerr.ErrorForCode(tc.code), "errors.Is matches kerr's value of the code")
			}
		})
	}
	require.Zero(t, CodeOf(nil))
	require.Equal(t, "NONE", Name(nil))
	require.Equal(t, "NOT_LEADER_OR_FOLLOWER", Name(ErrLeaderChanged))
	require.Equal(t, "ILLEGAL_GENERATION", Name(With(ErrIllegalGeneration, "gen 3")))
}

// TestSentinelsStayApart: two sentinels of one code are different errors
// in a process; each matches what derives from it and nothing else.
func TestSentinelsStayApart(t *testing.T) {
	require.NotErrorIs(t, ErrLeaderChanged, ErrNotLeader)
	require.NotErrorIs(t, ErrNotLeader, ErrLeaderChanged)
	d := With(ErrLeaderChanged, "t-0 at 5")
	require.ErrorIs(t, d, ErrLeaderChanged)
	require.NotErrorIs(t, d, ErrNotLeader)
	require.Equal(t, "leader changed before the request completed: t-0 at 5", d.Error())
	require.NotErrorIs(t, ErrNotLeader, errors.New("not leader or follower"), "text alone matches nothing")
}

// TestForCode: a code off the wire comes back as its canonical sentinel;
// a code outside the table keeps its code and Kafka's name.
func TestForCode(t *testing.T) {
	require.NoError(t, ForCode(0))
	require.Same(t, ErrNotLeader, ForCode(6), "the first sentinel of a code is its canonical one")
	require.Same(t, ErrStaleBrokerEpoch, ForCode(77))
	for _, s := range Sentinels() {
		require.ErrorIs(t, ForCode(CodeOf(s)), ForCode(CodeOf(s)))
		require.Equal(t, CodeOf(s), CodeOf(ForCode(CodeOf(s))))
	}
	e := ForCode(kerr.DuplicateResource.Code)
	require.Equal(t, kerr.DuplicateResource.Code, CodeOf(e))
	require.Equal(t, "DUPLICATE_RESOURCE", Name(e))
	require.Equal(t, int16(9999), CodeOf(ForCode(9999)))
}

// TestGobKeepsIdentity: an error decoded off the internal transport is
// the sentinel it was sent as, or one derived from it, even when another
// sentinel shares its code.
func TestGobKeepsIdentity(t *testing.T) {
	type msg struct{ Err error }
	gob.Register(&Error{})
	for _, want := range append(Sentinels(), With(ErrLeaderChanged, "t-0"), With(ErrFencedLeaderEpoch, "epoch 3 < 4")) {
		var buf bytes.Buffer
		require.NoError(t, gob.NewEncoder(&buf).Encode(msg{Err: want}))
		var got msg
		require.NoError(t, gob.NewDecoder(&buf).Decode(&got))
		require.EqualError(t, got.Err, want.Error())
		for _, s := range Sentinels() {
			require.Equal(t, errors.Is(want, s), errors.Is(got.Err, s), "%v against %v", want, s)
		}
		require.Equal(t, CodeOf(want), CodeOf(got.Err))
	}
	// A sentinel of a newer build becomes its code's canonical one.
	var buf bytes.Buffer
	require.NoError(t, gob.NewEncoder(&buf).Encode(wireError{Code: 6, BaseText: "not leader, newer words", Text: "not leader, newer words"}))
	data := buf.Bytes()
	var e Error
	require.NoError(t, e.GobDecode(data))
	require.ErrorIs(t, &e, ErrNotLeader)
}

// TestCommitOutcomeUnknown: the answers to a sent OffsetCommit after which
// its offsets may have been stored are unknown, read back from the wire
// (ForCode) or wrapped with context too; a refusal or a client's own error
// is not. Reference: Kafka 4.x CoordinatorOperationExceptionHelper,
// Kafka 3.x GroupMetadataManager.storeOffsets.
func TestCommitOutcomeUnknown(t *testing.T) {
	for _, err := range []error{ErrNotCoordinator, ErrCoordinatorNotAvailable, ErrRequestTimedOut, ErrNotEnoughReplicasAfterAppend} {
		require.True(t, CommitOutcomeUnknown(err), "%v", err)
		require.True(t, CommitOutcomeUnknown(ForCode(CodeOf(err))), "%v off the wire", err)
		require.True(t, CommitOutcomeUnknown(fmt.Errorf("commit to g: %w", With(err, "detail"))), "%v wrapped", err)
	}
	for _, err := range []error{nil, ErrIllegalGeneration, ErrUnknownMemberID, ErrRebalanceInProgress,
		ErrCoordinatorLoadInProgress, ErrNotEnoughReplicas, ErrInvalidGroupID, errors.New("client timeout")} {
		require.False(t, CommitOutcomeUnknown(err), "%v", err)
	}
}
