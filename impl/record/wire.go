package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's v2 record batch (magic 2), the one form a batch takes on the
// wire and in a segment file. All integers are big-endian; the offsets
// below are where each field starts.
//
//	 0 baseOffset            int64
//	 8 batchLength           int32  bytes after this field
//	12 partitionLeaderEpoch  int32
//	16 magic                 int8   2
//	17 crc                   uint32 CRC-32C of every byte from attributes on
//	21 attributes            int16  codec (low 3 bits), transactional, control
//	23 lastOffsetDelta       int32
//	27 firstTimestamp        int64
//	35 maxTimestamp          int64
//	43 producerId            int64
//	51 producerEpoch         int16
//	53 baseSequence          int32
//	57 records count         int32
//	61 records, compressed with the codec
//
// The CRC leaves out the base offset and the leader epoch, the two fields
// a leader assigns, so a stored batch is the producer's bytes with those
// two fields written in.
const (
	// HeaderLen is the size of a v2 batch without its records.
	HeaderLen = 61
	// lengthEnd is where the bytes that batchLength counts begin.
	lengthEnd    = 12
	offEpoch     = 12
	offMagic     = 16
	offCRC       = 17
	offAttrs     = 21
	offLastDelta = 23
	offFirstTS   = 27
	offMaxTS     = 35
	offPID       = 43
	offPEpoch    = 51
	offSeq       = 53
	offCount     = 57
)

// Attribute bits of a v2 batch.
const (
	AttrCodecMask     = 7
	AttrTransactional = 1 << 4
	AttrControl       = 1 << 5
)

// CodecNone is the codec of an uncompressed batch.
const CodecNone = 0

// Errors of Parse and Decode. ErrTruncated means the bytes end before the
// batch does (more may come); ErrCorrupt, that the bytes are damaged
// (a length out of range, a CRC mismatch, records that do not parse);
// ErrInvalid, that they are intact but break the format's rules; and
// ErrCompressed, that Decode needs a decompressor it was not given.
var (
	ErrTruncated  = errors.New("record batch truncated")
	ErrCorrupt    = errors.New("corrupt record batch")
	ErrInvalid    = errors.New("invalid record batch")
	ErrCompressed = errors.New("compressed record batch and no decompressor")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Decompressor undoes a batch's compression: it returns the records of a
// batch compressed with codec.
type Decompressor func(codec int, src []byte) ([]byte, error)

// WireLen reads the size of the v2 batch at the start of buf from its
// length field.
func WireLen(buf []byte) (int, error) {
	if len(buf) < lengthEnd {
		return 0, ErrTruncated
	}
	length := int32(binary.BigEndian.Uint32(buf[8:]))
	if length < HeaderLen-lengthEnd {
		return 0, fmt.Errorf("%w: batch length %d", ErrCorrupt, length)
	}
	return lengthEnd + int(length), nil
}

// Parse checks the v2 batch at the start of buf (framing, magic, CRC, the
// header's counts) and returns it with its header fields and Wire set and
// its records not decoded. Wire aliases buf, capped at the batch's end.
// A batch without a producer id reads as NoProducerID, epoch 0,
// NoSequence, however the producer filled the other two fields.
func Parse(buf []byte) (Batch, error) {
	var b Batch
	n, err := WireLen(buf)
	if err != nil {
		return b, err
	}
	if n > len(buf) {
		return b, fmt.Errorf("%w: batch of %d bytes in %d", ErrTruncated, n, len(buf))
	}
	w := buf[:n:n]
	if magic := int8(w[offMagic]); magic != 2 {
		return b, fmt.Errorf("%w: magic %d, only v2 batches are accepted", ErrInvalid, magic)
	}
	if got, want := crc32.Checksum(w[offAttrs:], castagnoli), binary.BigEndian.Uint32(w[offCRC:]); got != want {
		return b, fmt.Errorf("%w: crc %08x, batch says %08x", ErrCorrupt, got, want)
	}
	count := int32(binary.BigEndian.Uint32(w[offCount:]))
	if delta := int32(binary.BigEndian.Uint32(w[offLastDelta:])); count <= 0 || delta != count-1 {
		return b, fmt.Errorf("%w: %d records, last offset delta %d", ErrInvalid, count, delta)
	}
	return header(w), nil
}

// header is the batch whose Wire is w, its header fields read from w.
func header(w []byte) Batch {
	b := Batch{
		BaseOffset:    int64(binary.BigEndian.Uint64(w)),
		LeaderEpoch:   int32(binary.BigEndian.Uint32(w[offEpoch:])),
		ProducerID:    int64(binary.BigEndian.Uint64(w[offPID:])),
		ProducerEpoch: int16(binary.BigEndian.Uint16(w[offPEpoch:])),
		BaseSequence:  int32(binary.BigEndian.Uint32(w[offSeq:])),
		Wire:          w,
	}
	if b.ProducerID < 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = NoProducerID, 0, NoSequence
	}
	return b
}

// Encoded is Parse for the bytes Encode just returned, which it does not
// check again: the batch with Wire w and its header fields.
func Encoded(w []byte) Batch { return header(w) }

// Attributes are the batch's attribute bits (0, uncompressed and not
// transactional, for a batch built in memory).
func (b *Batch) Attributes() int16 {
	if b.Wire == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b.Wire[offAttrs:]))
}

// FirstTimestamp is the timestamp of the batch's first record.
func (b *Batch) FirstTimestamp() int64 {
	if b.Wire != nil {
		return int64(binary.BigEndian.Uint64(b.Wire[offFirstTS:]))
	}
	return b.firstTimestamp()
}

// MaxTimestamp is the largest timestamp of the batch's records.
func (b *Batch) MaxTimestamp() int64 {
	if b.Wire != nil {
		return int64(binary.BigEndian.Uint64(b.Wire[offMaxTS:]))
	}
	ts := b.firstTimestamp()
	for i := range b.Records {
		ts = max(ts, b.Records[i].Timestamp)
	}
	return ts
}

func (b *Batch) firstTimestamp() int64 {
	if len(b.Records) == 0 {
		return 0
	}
	return b.Records[0].Timestamp
}

// Decode sets Records from Wire (nothing to do without Wire or with
// Records already set). d undoes compression; nil serves uncompressed
// batches only.
func (b *Batch) Decode(d Decompressor) error {
	recs, err := b.DecodeRecords(d)
	if err == nil {
		b.Records = recs
	}
	return err
}

// DecodeRecords returns the batch's records, decoding Wire when Records
// are not set, without keeping them. The records alias Wire (or the
// decompressed bytes).
func (b *Batch) DecodeRecords(d Decompressor) ([]Record, error) {
	if b.Records != nil || b.Wire == nil {
		return b.Records, nil
	}
	data := b.Wire[HeaderLen:]
	if codec := int(b.Attributes() & AttrCodecMask); codec != CodecNone {
		if d == nil {
			return nil, fmt.Errorf("%w (codec %d)", ErrCompressed, codec)
		}
		var err error
		if data, err = d(codec, data); err != nil {
			return nil, err
		}
	}
	count := b.Len()
	// Every record takes at least 7 bytes, so a count beyond that is a lie
	// that must not size an allocation.
	if count > len(data)/7 {
		return nil, fmt.Errorf("%w: %d records in %d bytes", ErrCorrupt, count, len(data))
	}
	first := b.FirstTimestamp()
	recs := make([]Record, count)
	for i := range recs {
		n, size := binary.Varint(data)
		if size <= 0 || n < 0 || n > int64(len(data)-size) {
			return nil, fmt.Errorf("%w: record %d length", ErrCorrupt, i)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(data[:size+int(n)]); err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", ErrCorrupt, i, err)
		}
		data = data[size+int(n):]
		if kr.OffsetDelta != int32(i) {
			return nil, fmt.Errorf("%w: record %d has offset delta %d", ErrInvalid, i, kr.OffsetDelta)
		}
		r := Record{Key: kr.Key, Value: kr.Value, Timestamp: first + kr.TimestampDelta64}
		if len(kr.Headers) > 0 {
			r.Headers = make([]Header, len(kr.Headers))
			for j, h := range kr.Headers {
				r.Headers[j] = Header{Key: h.Key, Value: h.Value}
			}
		}
		recs[i] = r
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(data))
	}
	return recs, nil
}

// Encode appends b to dst as a v2 batch: Wire with the batch's base offset
// and leader epoch written in, or, for a batch built in memory, its
// records encoded uncompressed.
func Encode(dst []byte, b *Batch) []byte {
	start := len(dst)
	if b.Wire != nil {
		dst = append(dst, b.Wire...)
	} else {
		if len(b.Records) == 0 {
			return dst // no batch has no records (invariant 1)
		}
		dst = appendRecords(dst, b)
	}
	binary.BigEndian.PutUint64(dst[start:], uint64(b.BaseOffset))
	binary.BigEndian.PutUint32(dst[start+offEpoch:], uint32(b.LeaderEpoch))
	return dst
}

func appendRecords(dst []byte, b *Batch) []byte {
	start := len(dst)
	if n := b.Size(); n <= math.MaxInt32 {
		dst = slices.Grow(dst, n)
	}
	first := b.firstTimestamp()
	epoch := b.ProducerEpoch
	if b.ProducerID == NoProducerID {
		epoch = -1
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, 0) // length, set below
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.LeaderEpoch))
	dst = append(dst, 2)                        // magic
	dst = binary.BigEndian.AppendUint32(dst, 0) // crc, set below
	dst = binary.BigEndian.AppendUint16(dst, 0) // attributes: uncompressed, create time
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Records)-1))
	dst = binary.BigEndian.AppendUint64(dst, uint64(first))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.MaxTimestamp()))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(epoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Records)))
	for i := range b.Records {
		r := &b.Records[i]
		dst = binary.AppendVarint(dst, int64(recordBodyLen(r, i, first)))
		dst = append(dst, 0) // record attributes
		dst = binary.AppendVarint(dst, r.Timestamp-first)
		dst = binary.AppendVarint(dst, int64(i))
		dst = appendVarintBytes(dst, r.Key)
		dst = appendVarintBytes(dst, r.Value)
		dst = binary.AppendVarint(dst, int64(len(r.Headers)))
		for _, h := range r.Headers {
			dst = binary.AppendVarint(dst, int64(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = appendVarintBytes(dst, h.Value)
		}
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(dst)-start-lengthEnd))
	binary.BigEndian.PutUint32(dst[start+offCRC:], crc32.Checksum(dst[start+offAttrs:], castagnoli))
	return dst
}

// recordBodyLen is the size of record i's encoding after its length.
func recordBodyLen(r *Record, i int, first int64) int {
	n := 1 + varintLen(r.Timestamp-first) + varintLen(int64(i)) +
		varBytesLen(r.Key) + varBytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintLen(int64(len(h.Key))) + len(h.Key) + varBytesLen(h.Value)
	}
	return n
}

func varintLen(v int64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], v)
}

// varBytesLen is the size of b as a varint length and its bytes; nil is
// length -1.
func varBytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
