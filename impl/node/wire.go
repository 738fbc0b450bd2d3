package node

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Magic opens an internal (node-to-node) connection. A Kafka connection
// starts with a request size instead, and this one, read as a size, is far
// above any request limit, so one listener serves both. The digit is the
// framing's version (2: batches travel raw after their frame, see
// writeFrame), so that nodes of different builds refuse each other instead
// of misreading each other.
const Magic = "WMK2"

// hello is the first message on an internal connection: who dialled.
type hello struct {
	From        broker.NodeID
	Incarnation int64
}

// frame is one envelope on an internal connection. Go errors do not travel
// through gob, so a message's Err field goes as text next to it, with the
// sentinel it wraps (see sentinels), and is rebuilt on arrival so that
// errors.Is works across processes.
type frame struct {
	From, To broker.NodeID
	Msg      any
	Err      string
	Sentinel int // 1 + index in sentinels; 0 when the error wraps none
	// BatchesLen is len(batches): the raw bytes that follow the frame's
	// gob encoding on the connection.
	BatchesLen int
	// batches holds a FetchResponse's batches in the log's framing (gob
	// would turn empty values into nil ones). They travel outside gob, by
	// writeFrame, because gob copies a byte slice twice on each side, and
	// replication traffic is almost all batches.
	batches []byte
}

// maxFrameBatches bounds BatchesLen, so that a corrupt length cannot make
// a node allocate without limit. Replica fetches are bounded far below it
// (FetchMaxBytes, storage's frame limit).
const maxFrameBatches = 1 << 30

// writeFrame writes f to w: its gob encoding through enc (which writes to
// w), then its batches raw.
func writeFrame(enc *gob.Encoder, w io.Writer, f *frame) error {
	f.BatchesLen = len(f.batches)
	if err := enc.Encode(f); err != nil {
		return err
	}
	if len(f.batches) == 0 {
		return nil
	}
	_, err := w.Write(f.batches)
	return err
}

// readFrame reads what writeFrame wrote. dec must read from r without
// buffering ahead of it: a gob.Decoder on a reader that is an
// io.ByteReader (a *bufio.Reader) reads exactly one message per Decode.
func readFrame(dec *gob.Decoder, r io.Reader) (frame, error) {
	var f frame
	if err := dec.Decode(&f); err != nil {
		return f, err
	}
	if f.BatchesLen < 0 || f.BatchesLen > maxFrameBatches {
		return f, fmt.Errorf("frame from %d: %d bytes of batches: want 0..%d", f.From, f.BatchesLen, maxFrameBatches)
	}
	if f.BatchesLen > 0 {
		f.batches = make([]byte, f.BatchesLen)
		if _, err := io.ReadFull(r, f.batches); err != nil {
			return f, fmt.Errorf("frame from %d: batches: %w", f.From, err)
		}
	}
	return f, nil
}

// sentinels are the errors a message can carry that the receiver branches
// on. Append only: the index travels.
var sentinels = []error{
	partition.ErrNotLeader, partition.ErrFencedLeaderEpoch, partition.ErrUnknownLeaderEpoch,
	partition.ErrOffsetOutOfRange, partition.ErrNotEnoughReplicas, partition.ErrNotEnoughReplicasAfterAppend,
	partition.ErrInvalidRecord, partition.ErrStaleBrokerEpoch, partition.ErrLeaderChanged,
	partition.ErrOutOfOrderSequence, partition.ErrInvalidProducerEpoch, partition.ErrUnknownProducerID,
	broker.ErrUnknownTopicOrPartition, broker.ErrRequestTimedOut, broker.ErrProducerIDsExhausted,
	controller.ErrInvalidConfig, controller.ErrInvalidBrokerID, controller.ErrUnknownBroker,
	controller.ErrStaleIncarnation, controller.ErrInvalidTopic, controller.ErrTopicExists,
	controller.ErrInvalidPartitions, controller.ErrInvalidReplicationFactor,
}

// wireMessages are the messages that cross between processes: the control
// plane (broker <-> controller) and replication (broker <-> broker). Client
// requests never do: a connection's requests go to its own broker.
var wireMessages = []any{
	broker.RegisterBroker{}, broker.Heartbeat{}, broker.StateUpdate{},
	broker.AlterISR{}, broker.AlterISRAnswer{},
	broker.CreateTopic{}, broker.CreateTopicResponse{},
	broker.MetadataRequest{}, broker.MetadataResponse{},
	partition.FetchRequest{}, partition.FetchResponse{},
	partition.EpochEndRequest{}, partition.EpochEndResponse{},
}

func init() {
	for _, m := range wireMessages {
		gob.Register(m)
	}
}

// remoteError is an error that crossed the wire: its text as the sender
// had it, wrapping the sentinel it matched.
type remoteError struct {
	text     string
	sentinel error
}

func (e *remoteError) Error() string { return e.text }
func (e *remoteError) Unwrap() error { return e.sentinel }

var errorType = reflect.TypeFor[error]()

// errField returns the addressable Err field of a message struct, if it has one.
func errField(v reflect.Value) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.FieldByName("Err")
	if !f.IsValid() || f.Type() != errorType {
		return reflect.Value{}, false
	}
	return f, true
}

// toFrame prepares env for gob: the message is copied with its error taken
// out. A FetchResponse's batches are encoded into buf[:0], which the frame
// then owns.
func toFrame(env broker.Envelope, buf []byte) (frame, error) {
	f := frame{From: env.From, To: env.To, Msg: env.Msg}
	if fr, ok := env.Msg.(partition.FetchResponse); ok && len(fr.Batches) > 0 {
		f.batches = buf[:0]
		for i := range fr.Batches {
			var err error
			if f.batches, err = storage.EncodeBatch(f.batches, &fr.Batches[i]); err != nil {
				return f, fmt.Errorf("encode fetch response for %s: %w", fr.TopicPartition, err)
			}
		}
		fr.Batches = nil
		f.Msg = fr
	}
	v := reflect.ValueOf(f.Msg)
	if v.Kind() != reflect.Struct {
		return f, nil
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	ef, ok := errField(c)
	if !ok || ef.IsNil() {
		return f, nil
	}
	err := ef.Interface().(error)
	f.Err = err.Error()
	for i, s := range sentinels {
		if errors.Is(err, s) {
			f.Sentinel = i + 1
			break
		}
	}
	ef.Set(reflect.Zero(errorType))
	f.Msg = c.Interface()
	return f, nil
}

// fromFrame rebuilds the envelope a frame carries.
func fromFrame(f frame) (broker.Envelope, error) {
	env := broker.Envelope{From: f.From, To: f.To, Msg: f.Msg}
	if f.Msg == nil {
		return env, fmt.Errorf("frame from %d without a message", f.From)
	}
	if len(f.batches) > 0 {
		fr, ok := f.Msg.(partition.FetchResponse)
		if !ok {
			return env, fmt.Errorf("frame from %d: batches on a %T", f.From, f.Msg)
		}
		for buf := f.batches; len(buf) > 0; {
			b, n, err := storage.DecodeBatch(buf)
			if err != nil {
				return env, fmt.Errorf("frame from %d: %w", f.From, err)
			}
			fr.Batches = append(fr.Batches, b)
			buf = buf[n:]
		}
		f.Msg = fr
		env.Msg = fr
	}
	if f.Err == "" {
		return env, nil
	}
	v := reflect.ValueOf(f.Msg)
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	ef, ok := errField(c)
	if !ok {
		return env, fmt.Errorf("frame from %d: %T carries an error but has no Err field", f.From, f.Msg)
	}
	var err error
	switch {
	case f.Sentinel > 0 && f.Sentinel <= len(sentinels) && sentinels[f.Sentinel-1].Error() == f.Err:
		err = sentinels[f.Sentinel-1]
	case f.Sentinel > 0 && f.Sentinel <= len(sentinels):
		err = &remoteError{text: f.Err, sentinel: sentinels[f.Sentinel-1]}
	default:
		err = errors.New(f.Err)
	}
	ef.Set(reflect.ValueOf(&err).Elem())
	env.Msg = c.Interface()
	return env, nil
}
