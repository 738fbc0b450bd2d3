package node

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

func roundTrip(t *testing.T, env broker.Envelope) broker.Envelope {
	t.Helper()
	var buf bytes.Buffer
	f, err := toFrame(env, nil)
	require.NoError(t, err)
	// Two frames back to back: the first must not read into the second.
	enc := newEncoder()
	require.NoError(t, writeFrame(enc, &buf, &f))
	require.NoError(t, writeFrame(enc, &buf, &f))
	r := bufio.NewReader(&buf)
	dec := newDecoder(r)
	g, err := readFrame(dec)
	require.NoError(t, err)
	again, err := readFrame(dec)
	require.NoError(t, err)
	require.Equal(t, g, again)
	require.Zero(t, buf.Len()+r.Buffered(), "bytes left after the frames")
	got, err := fromFrame(g)
	require.NoError(t, err)
	return got
}

// TestFramesKeepErrorsComparable: an error crosses between nodes as
// itself, even one that shares its Kafka code with another (ErrLeaderChanged
// and ErrNotLeader), and one with detail added.
func TestFramesKeepErrorsComparable(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t", Partition: 1}
	for _, err := range []error{
		nil,
		kafka.ErrNotLeader,
		kafka.ErrLeaderChanged,
		kafka.With(kafka.ErrOffsetOutOfRange, "fetch at 7"),
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
			for _, s := range kafka.Sentinels() {
				require.Equal(t, errors.Is(err, s), errors.Is(resp.Err, s), "sentinel %v", s)
			}
		}
		want := env.Msg.(partition.FetchResponse)
		want.Err, resp.Err = nil, nil
		// A batch crosses as its v2 bytes, which decode to its records.
		for i := range resp.Batches {
			require.NoError(t, resp.Batches[i].Decode(nil))
			resp.Batches[i].Wire = nil
		}
		require.Equal(t, want, resp)
	}
}

// TestFramesRefuseForeignErrors: an error that is no *kafka.Error would
// reach the other node as text its code cannot be read from; toFrame says
// so instead of sending it.
func TestFramesRefuseForeignErrors(t *testing.T) {
	for _, err := range []error{
		errors.New("disk on fire"),
		fmt.Errorf("fetch at 7: %w", kafka.ErrOffsetOutOfRange),
	} {
		_, ferr := toFrame(broker.Envelope{From: 2, To: 3, Msg: partition.FetchResponse{Err: err}}, nil)
		require.ErrorContains(t, ferr, "only a *kafka.Error crosses", "%v", err)
	}
}

func TestEveryWireMessageRoundTrips(t *testing.T) {
	n := 0
	for _, m := range wireMessages() {
		got := roundTrip(t, broker.Envelope{From: 1, To: 0, Msg: m})
		require.IsType(t, m, got.Msg)
		require.Equal(t, m.Kind(), got.Msg.Kind())
		n++
	}
	require.GreaterOrEqual(t, n, 16, "the registry's Wire rows: the control plane and replication")
}

// A client request is not a wire message: a frame refuses it, by name.
func TestAClientRequestDoesNotCross(t *testing.T) {
	_, err := toFrame(broker.Envelope{From: 1, To: 2, Msg: broker.ProduceRequest{}}, nil)
	require.ErrorContains(t, err, "does not cross between nodes")
}

// wireMessages is a value of every message kind the registry marks Wire.
func wireMessages() []kafka.Message {
	var out []kafka.Message
	for _, r := range kafka.Rows() {
		if r.Wire {
			out = append(out, r.Proto)
		}
	}
	return out
}

func TestReadFrameRejectsBadBatchLengths(t *testing.T) {
	for _, n := range []int{-1, maxFrameBatches + 1} {
		var buf bytes.Buffer
		require.NoError(t, newEncoder().encode(&buf, frame{From: 2, Msg: broker.Heartbeat{}, BatchesLen: n}))
		_, err := readFrame(newDecoder(bufio.NewReader(&buf)))
		require.ErrorContains(t, err, "bytes of batches", "length %d", n)
	}
	// A frame cut inside its batches is an error, not a short message.
	var buf bytes.Buffer
	require.NoError(t, newEncoder().encode(&buf, frame{From: 2, Msg: broker.Heartbeat{}, BatchesLen: 10}))
	buf.WriteString("short")
	_, err := readFrame(newDecoder(bufio.NewReader(&buf)))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// A gob message is bounded by its declared length before a byte is
// allocated for it, and must use up exactly that length.
func TestReadFrameBoundsItsGobMessage(t *testing.T) {
	var buf bytes.Buffer
	_ = binary.Write(&buf, binary.BigEndian, uint32(maxGobBytes+1))
	_, err := readFrame(newDecoder(&buf))
	require.ErrorContains(t, err, "limit")

	buf.Reset()
	_ = binary.Write(&buf, binary.BigEndian, uint32(1<<20)) // declared, not sent
	_, err = readFrame(newDecoder(&buf))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	var msg bytes.Buffer
	require.NoError(t, gob.NewEncoder(&msg).Encode(frame{From: 2, Msg: broker.Heartbeat{}}))
	msg.WriteString("extra")
	buf.Reset()
	_ = binary.Write(&buf, binary.BigEndian, uint32(msg.Len()))
	buf.Write(msg.Bytes())
	_, err = readFrame(newDecoder(&buf))
	require.ErrorContains(t, err, "after its value")
}

// FuzzReadFrame: whatever a peer sends after the handshake, the decoder
// returns a frame or an error; it never panics, and never allocates more
// than the message bound for bytes that did not come.
func FuzzReadFrame(f *testing.F) {
	for _, m := range wireMessages() {
		fr, err := toFrame(broker.Envelope{From: 1, To: 0, Msg: m}, nil)
		require.NoError(f, err)
		var buf bytes.Buffer
		require.NoError(f, writeFrame(newEncoder(), &buf, &fr))
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0, 0, 0, 4, 1, 2, 3, 4})
	f.Add([]byte{0x40, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := newDecoder(bytes.NewReader(data))
		for range 4 {
			fr, err := readFrame(dec)
			if err != nil {
				return
			}
			_, _ = fromFrame(fr)
		}
	})
}

// Truncation on fetch crosses the wire: a fetch's LastFetchedEpoch, and a
// diverging answer's epoch and end offset (Fetch v12+'s fields, KIP-595).
// Epoch 0 and offset 0 are gob's zero values, left out of the frame: they
// must still come back as sent.
func TestDivergenceFieldsRoundTrip(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	for _, last := range []int32{-1, 0, 3} {
		req := partition.FetchRequest{TopicPartition: tp, ID: 4, ReplicaID: 2, FetchOffset: 7, CurrentLeaderEpoch: 5, LastFetchedEpoch: last}
		require.Equal(t, req, roundTrip(t, broker.Envelope{From: 2, To: 1, Msg: req}).Msg)
	}
	for _, resp := range []partition.FetchResponse{
		{TopicPartition: tp, ID: 4, HW: 3, LEO: 9, Diverging: true, DivergingEpoch: 2, DivergingEndOffset: 6},
		{TopicPartition: tp, ID: 4, HW: 0, LEO: 9, Diverging: true, DivergingEpoch: 0, DivergingEndOffset: 0},
		{TopicPartition: tp, ID: 4, HW: 3, LEO: 9, DivergingEpoch: -1, DivergingEndOffset: -1},
	} {
		require.Equal(t, resp, roundTrip(t, broker.Envelope{From: 1, To: 2, Msg: resp}).Msg)
	}
}
