package node

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

func roundTrip(t *testing.T, env broker.Envelope) broker.Envelope {
	t.Helper()
	var buf bytes.Buffer
	f, err := toFrame(env)
	require.NoError(t, err)
	require.NoError(t, gob.NewEncoder(&buf).Encode(f))
	var g frame
	require.NoError(t, gob.NewDecoder(&buf).Decode(&g))
	got, err := fromFrame(g)
	require.NoError(t, err)
	return got
}

func TestFramesKeepErrorsComparable(t *testing.T) {
	tp := partition.TopicPartition{Topic: "t", Partition: 1}
	for _, err := range []error{
		nil,
		partition.ErrNotLeader,
		fmt.Errorf("fetch at 7: %w", partition.ErrOffsetOutOfRange),
		errors.New("disk on fire"),
	} {
		env := broker.Envelope{From: 2, To: 3, Msg: partition.FetchResponse{
			TopicPartition: tp, ID: 9, Err: err, HW: 4, LEO: 5,
			Batches: []record.Batch{{BaseOffset: 3, LeaderEpoch: 2, ProducerID: -1, BaseSequence: -1,
				Records: []record.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 11}, {Key: nil, Value: []byte{}}}}},
		}}
		got := roundTrip(t, env)
		resp := got.Msg.(partition.FetchResponse)
		require.Equal(t, broker.NodeID(2), got.From)
		if err == nil {
			require.NoError(t, resp.Err)
		} else {
			require.EqualError(t, resp.Err, err.Error())
			for _, s := range sentinels {
				require.Equal(t, errors.Is(err, s), errors.Is(resp.Err, s), "sentinel %v", s)
			}
		}
		want := env.Msg.(partition.FetchResponse)
		want.Err, resp.Err = nil, nil
		require.Equal(t, want, resp)
	}
}

func TestEveryWireMessageRoundTrips(t *testing.T) {
	for _, m := range wireMessages {
		got := roundTrip(t, broker.Envelope{From: 1, To: 0, Msg: m})
		require.IsType(t, m, got.Msg)
	}
}
