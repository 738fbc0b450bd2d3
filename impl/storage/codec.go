package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/watermarkhq/watermark/impl/record"
)

// On-disk frame of one batch, all integers big-endian:
//
//	length  uint32  payload length in bytes
//	crc     uint32  CRC-32C (Castagnoli) of the payload
//	payload:
//	  version        uint8  (batchVersion)
//	  BaseOffset     int64
//	  LeaderEpoch    int32
//	  ProducerID     int64
//	  ProducerEpoch  int16
//	  BaseSequence   int32
//	  record count   uint32
//	  per record:
//	    Timestamp    int64
//	    Key, Value   nullable bytes (int32 length, -1 for nil, then the bytes)
//	    header count int32 (-1 for nil Headers)
//	    per header:  Key as uint32 length + bytes, Value as nullable bytes
//
// Nil and empty are kept apart so that a batch reads back exactly as it was
// appended. The decoder accepts only this canonical form (no trailing bytes,
// no unknown version), so decoding then encoding gives the same bytes.
const (
	frameHeaderSize = 8
	batchVersion    = 1
	// maxFrameSize bounds a frame's payload. A corrupt length field could
	// otherwise make recovery allocate gigabytes.
	maxFrameSize    = 64 << 20
	batchHeaderSize = 1 + 8 + 4 + 8 + 2 + 4 + 4
	minRecordSize   = 8 + 4 + 4 + 4
	minHeaderSize   = 4 + 4
	minPayloadSize  = batchHeaderSize + minRecordSize
)

// nullLength is the length stored for a nil byte slice or nil Headers.
const nullLength int32 = -1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame decoding failures. Recovery tells them apart only to report why it
// stopped; all of them end the valid prefix of the log.
var (
	errTornFrame  = errors.New("torn frame: runs past the end of the file")
	errBadLength  = errors.New("frame length out of range")
	errBadCRC     = errors.New("CRC-32C mismatch")
	errBadPayload = errors.New("malformed batch payload")
)

// ErrInvalidBatch is returned by Log.Append for a batch that breaks
// record.Batch's invariants or is too large to store.
var ErrInvalidBatch = errors.New("invalid batch")

// validateBatch checks the invariants of record.Batch that storage relies on,
// on the way in (Append) and on the way out (recovery).
func validateBatch(b *record.Batch) error {
	switch {
	case len(b.Records) == 0:
		return fmt.Errorf("%w: no records", ErrInvalidBatch)
	case b.BaseOffset < 0:
		return fmt.Errorf("%w: negative base offset %d", ErrInvalidBatch, b.BaseOffset)
	case b.BaseOffset > math.MaxInt64-int64(len(b.Records)):
		return fmt.Errorf("%w: offsets overflow", ErrInvalidBatch)
	case (b.ProducerID == record.NoProducerID) != (b.BaseSequence == record.NoSequence):
		return fmt.Errorf("%w: producer id %d with base sequence %d", ErrInvalidBatch, b.ProducerID, b.BaseSequence)
	}
	return nil
}

// frameSize is the encoded size of b's frame, header included.
func frameSize(b *record.Batch) int {
	n := frameHeaderSize + batchHeaderSize
	for i := range b.Records {
		r := &b.Records[i]
		n += 8 + 4 + len(r.Key) + 4 + len(r.Value) + 4
		for _, h := range r.Headers {
			n += 4 + len(h.Key) + 4 + len(h.Value)
		}
	}
	return n
}

// BatchFits reports whether b fits in one frame of the log, and if not how
// big it would be: the log holds batches decompressed, so a batch a
// producer compressed well can be far bigger here than on the wire.
func BatchFits(b *record.Batch) error {
	if n := frameSize(b) - frameHeaderSize; n > maxFrameSize {
		return fmt.Errorf("%d records take %d bytes uncompressed, and the log keeps a batch in at most %d", len(b.Records), n, maxFrameSize)
	}
	return nil
}

// appendFrame appends the frame of b to dst.
func appendFrame(dst []byte, b *record.Batch) ([]byte, error) {
	start := len(dst)
	// Grow once: appending record by record to a large batch would
	// reallocate and copy the frame again at every doubling. A batch over
	// the frame limit is not sized up front; it fails as it is encoded.
	if n := frameSize(b); n-frameHeaderSize <= maxFrameSize {
		dst = slices.Grow(dst, n)
	}
	dst = append(dst, make([]byte, frameHeaderSize)...)
	dst = append(dst, batchVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.LeaderEpoch))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(b.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Records)))
	for i := range b.Records {
		r := &b.Records[i]
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.Timestamp))
		dst = appendNullable(dst, r.Key)
		dst = appendNullable(dst, r.Value)
		if r.Headers == nil {
			dst = appendInt32(dst, nullLength)
		} else {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Headers)))
		}
		for _, h := range r.Headers {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = appendNullable(dst, h.Value)
		}
		// Checking as we go stops a huge batch early instead of after
		// encoding all of it.
		if len(dst)-start-frameHeaderSize > maxFrameSize {
			return dst[:start], fmt.Errorf("%w: encoded size exceeds %d bytes", ErrInvalidBatch, maxFrameSize)
		}
	}
	payload := dst[start+frameHeaderSize:]
	binary.BigEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst, nil
}

// appendInt32 exists because a negative constant cannot be converted to uint32.
func appendInt32(dst []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(v))
}

func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return appendInt32(dst, nullLength)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// decodeFrame decodes the frame at the start of buf. n is the frame's length
// when its length field could be followed (the frame is complete, even if its
// contents are bad) and 0 when it could not (torn, or a length out of range).
//
// The returned batch's byte slices alias buf, capped so that appending to one
// cannot overwrite another.
func decodeFrame(buf []byte) (b record.Batch, n int, err error) {
	if len(buf) < frameHeaderSize {
		return b, 0, errTornFrame
	}
	length := binary.BigEndian.Uint32(buf)
	if length < minPayloadSize || length > maxFrameSize {
		return b, 0, fmt.Errorf("%w: %d", errBadLength, length)
	}
	n = frameHeaderSize + int(length)
	if n > len(buf) {
		return b, 0, errTornFrame
	}
	payload := buf[frameHeaderSize:n]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(buf[4:]) {
		return b, n, errBadCRC
	}
	b, err = decodePayload(payload)
	if err == nil {
		err = validateBatch(&b)
	}
	return b, n, err
}

func decodePayload(p []byte) (record.Batch, error) {
	d := decoder{buf: p}
	var b record.Batch
	if v := d.take(1); d.err == nil && v[0] != batchVersion {
		return b, fmt.Errorf("%w: unknown version %d", errBadPayload, v[0])
	}
	b.BaseOffset = int64(d.u64())
	b.LeaderEpoch = int32(d.u32())
	b.ProducerID = int64(d.u64())
	b.ProducerEpoch = int16(d.u16())
	b.BaseSequence = int32(d.u32())
	count := d.u32()
	// Every record takes at least minRecordSize bytes, so a count that the
	// remaining bytes cannot hold is corrupt; checking first bounds the
	// allocation by the frame's size.
	if d.err == nil && uint64(count)*minRecordSize > uint64(len(d.buf)) {
		return b, fmt.Errorf("%w: %d records cannot fit in %d bytes", errBadPayload, count, len(d.buf))
	}
	if d.err == nil {
		b.Records = make([]record.Record, count)
	}
	for i := range b.Records {
		r := &b.Records[i]
		r.Timestamp = int64(d.u64())
		r.Key = d.nullable()
		r.Value = d.nullable()
		hc := int32(d.u32())
		switch {
		case d.err != nil:
		case hc < nullLength:
			d.err = fmt.Errorf("%w: header count %d", errBadPayload, hc)
		case hc >= 0 && int64(hc)*minHeaderSize > int64(len(d.buf)):
			d.err = fmt.Errorf("%w: %d headers cannot fit in %d bytes", errBadPayload, hc, len(d.buf))
		case hc >= 0:
			r.Headers = make([]record.Header, hc)
		}
		for j := range r.Headers {
			h := &r.Headers[j]
			h.Key = string(d.take(int(d.u32())))
			h.Value = d.nullable()
		}
		if d.err != nil {
			break
		}
	}
	if d.err == nil && len(d.buf) > 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", errBadPayload, len(d.buf))
	}
	return b, d.err
}

// decoder reads big-endian fields from a buffer and remembers the first
// error, so that decodePayload can check once instead of after every field.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf) {
		d.err = fmt.Errorf("%w: field of %d bytes with %d left", errBadPayload, n, len(d.buf))
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) u16() uint16 {
	if b := d.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// nullable reads bytes written by appendNullable. Empty but non-nil is
// returned as a non-nil empty slice.
func (d *decoder) nullable() []byte {
	n := int32(d.u32())
	if d.err != nil || n == nullLength {
		return nil
	}
	if n < 0 {
		d.err = fmt.Errorf("%w: length %d", errBadPayload, n)
		return nil
	}
	b := d.take(int(n))
	if b == nil && d.err == nil {
		b = []byte{}
	}
	return b
}

// EncodeBatch appends b to dst in the log's own framing (with its CRC), the
// exact bytes a replica stores; DecodeBatch reads one back. The real
// cluster's replication ships batches this way, so that a follower stores
// what the leader stored, nil and empty values included.
func EncodeBatch(dst []byte, b *record.Batch) ([]byte, error) { return appendFrame(dst, b) }

// DecodeBatch decodes the batch at the start of buf and returns how many
// bytes it took.
func DecodeBatch(buf []byte) (record.Batch, int, error) { return decodeFrame(buf) }
