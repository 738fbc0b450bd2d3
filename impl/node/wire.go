package node

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"io"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
	"github.com/watermarkhq/watermark/impl/wireformat"
)

// Magic opens an internal (node-to-node) connection. A Kafka connection
// starts with a request size instead, and this one, read as a size, is far
// above any request limit, so one listener serves both. The digit is the
// framing's version (5: a handshake on the cluster secret opens the
// connection, auth.go; each gob message behind its bounded length, and
// batches raw after their frame, see writeFrame; errors as *kafka.Error), so that nodes of different
// builds refuse each other instead of misreading each other.
const Magic = "WMK5"

// hello is the first message on an internal connection: who dialled.
type hello struct {
	From        broker.NodeID
	Incarnation int64
}

// frame is one envelope on an internal connection. A message's Err is a
// *kafka.Error (checkErr), which gob carries as itself, so errors.Is works
// across processes as it does within one.
type frame struct {
	From, To broker.NodeID
	Msg      kafka.Message
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
// (ReplicaFetchMaxBytes, storage's frame limit).
const maxFrameBatches = 1 << 30

// maxGobBytes bounds the gob part of one internal message: its length
// comes first, and is checked before a byte is allocated for it (gob's own
// bound is 1 GiB, allocated as soon as declared).
const maxGobBytes = 16 << 20

// encoder writes gob messages one by one, each behind its length. One
// encoder serves one connection: gob sends a type once per stream.
type encoder struct {
	buf bytes.Buffer
	enc *gob.Encoder
}

func newEncoder() *encoder {
	e := &encoder{}
	e.enc = gob.NewEncoder(&e.buf)
	return e
}

// encode writes v's gob encoding to w behind its 4-byte length.
func (e *encoder) encode(w io.Writer, v any) error {
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	if e.buf.Len() > maxGobBytes {
		return fmt.Errorf("internal message of %d bytes: the limit is %d", e.buf.Len(), maxGobBytes)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(e.buf.Len()))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := w.Write(e.buf.Bytes())
	return err
}

// decoder reads what an encoder wrote: a length, bounded, then exactly
// that many bytes, which gob decodes and must use up.
type decoder struct {
	r   io.Reader
	cur bytes.Reader // one message; gob reads only from it
	dec *gob.Decoder
}

func newDecoder(r io.Reader) *decoder {
	d := &decoder{r: r}
	d.dec = gob.NewDecoder(&d.cur)
	return d
}

func (d *decoder) decode(v any) error {
	var size [4]byte
	if _, err := io.ReadFull(d.r, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxGobBytes {
		return fmt.Errorf("internal message of %d bytes declared: the limit is %d", n, maxGobBytes)
	}
	msg, err := wireformat.ReadBounded(d.r, int(n))
	if err != nil {
		return fmt.Errorf("internal message: %w", err)
	}
	d.cur.Reset(msg)
	if err := d.dec.Decode(v); err != nil {
		return fmt.Errorf("internal message: %w", err)
	}
	if d.cur.Len() > 0 {
		return fmt.Errorf("internal message: %d bytes after its value", d.cur.Len())
	}
	return nil
}

// writeFrame writes f to w: its gob encoding through enc, then its
// batches raw.
func writeFrame(enc *encoder, w io.Writer, f *frame) error {
	f.BatchesLen = len(f.batches)
	if err := enc.encode(w, f); err != nil {
		return err
	}
	if len(f.batches) == 0 {
		return nil
	}
	_, err := w.Write(f.batches)
	return err
}

// readFrame reads what writeFrame wrote, from dec's reader.
func readFrame(dec *decoder) (frame, error) {
	var f frame
	r := dec.r
	if err := dec.decode(&f); err != nil {
		return f, err
	}
	if f.BatchesLen < 0 || f.BatchesLen > maxFrameBatches {
		return f, fmt.Errorf("frame from %d: %d bytes of batches: want 0..%d", f.From, f.BatchesLen, maxFrameBatches)
	}
	if f.BatchesLen > 0 {
		var err error
		if f.batches, err = wireformat.ReadBounded(r, f.BatchesLen); err != nil {
			return f, fmt.Errorf("frame from %d: batches: %w", f.From, err)
		}
	}
	return f, nil
}

// The messages that cross between processes are the registry's Wire rows
// (kafka.Register): the control plane (broker <-> controller) and
// replication (broker <-> broker). Client requests never do: a
// connection's requests go to its own broker.
func init() {
	for _, r := range kafka.Rows() {
		if r.Wire {
			gob.Register(r.Proto)
		}
	}
	// A message's Err travels as itself: *kafka.Error encodes its code and
	// text, and decodes to the same sentinel (kafka.Error.GobDecode).
	gob.Register(&kafka.Error{})
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
	return f, checkErr(f.Msg)
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
	return env, nil
}

// checkErr refuses a message that may not cross: one the registry does
// not mark Wire, or an answer whose error is not a *kafka.Error, which gob
// could not carry and the receiver could not branch on. Nodes answer each
// other with impl/kafka's errors, with detail added by kafka.With.
func checkErr(msg kafka.Message) error {
	if r, ok := kafka.RowOf(msg.Kind()); !ok || !r.Wire {
		return fmt.Errorf("%T (%s) does not cross between nodes", msg, msg.Kind())
	}
	a, ok := msg.(kafka.Answer)
	if !ok {
		return nil
	}
	err := a.Failure()
	if _, ok := err.(*kafka.Error); err != nil && !ok {
		return fmt.Errorf("%T carries %T (%v): only a *kafka.Error crosses between nodes", msg, err, err)
	}
	return nil
}
