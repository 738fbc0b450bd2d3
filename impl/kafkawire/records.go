package kafkawire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeaderLen is the fixed part of a v2 record batch, up to and including
// the record count; crcStart is where the CRC's coverage begins (attributes).
const (
	batchHeaderLen = 61
	crcStart       = 21
)

// Attribute bits of a v2 record batch besides the codec.
const (
	attrTransactional = 1 << 4
	attrControl       = 1 << 5
)

// decodeProduce decodes the record batches of one partition of a produce
// request. It accepts exactly one v2 batch: the broker appends one batch per
// ProduceRequest, and splitting a Kafka batch would break its sequence
// numbers. Bad framing or CRC wraps kafka.ErrCorruptMessage; a well-formed batch the
// broker cannot take wraps kafka.ErrInvalidRecord.
func decodeProduce(raw []byte, d *decompressor) (record.Batch, error) {
	var pb record.Batch
	if len(raw) < batchHeaderLen {
		return pb, fmt.Errorf("%w: %d bytes, want at least %d", kafka.ErrCorruptMessage, len(raw), batchHeaderLen)
	}
	length := int32(binary.BigEndian.Uint32(raw[8:]))
	magic := int8(raw[16])
	if magic != 2 {
		return pb, fmt.Errorf("%w: magic %d, only v2 batches are accepted", kafka.ErrInvalidRecord, magic)
	}
	if length < batchHeaderLen-12 || int64(length)+12 > int64(len(raw)) {
		return pb, fmt.Errorf("%w: batch length %d in %d bytes", kafka.ErrCorruptMessage, length, len(raw))
	}
	if int(length)+12 < len(raw) {
		return pb, fmt.Errorf("%w: more than one batch for a partition", kafka.ErrInvalidRecord)
	}
	if got, want := crc32.Checksum(raw[crcStart:], castagnoli), binary.BigEndian.Uint32(raw[17:]); got != want {
		return pb, fmt.Errorf("%w: crc %08x, batch says %08x", kafka.ErrCorruptMessage, got, want)
	}
	attrs := int16(binary.BigEndian.Uint16(raw[21:]))
	if attrs&(attrTransactional|attrControl) != 0 {
		return pb, fmt.Errorf("%w: transactional and control batches are not supported", kafka.ErrInvalidRecord)
	}
	lastOffsetDelta := int32(binary.BigEndian.Uint32(raw[23:]))
	firstTimestamp := int64(binary.BigEndian.Uint64(raw[27:]))
	pb.ProducerID = int64(binary.BigEndian.Uint64(raw[43:]))
	pb.ProducerEpoch = int16(binary.BigEndian.Uint16(raw[51:]))
	pb.BaseSequence = int32(binary.BigEndian.Uint32(raw[53:]))
	numRecords := int32(binary.BigEndian.Uint32(raw[57:]))
	if numRecords <= 0 || lastOffsetDelta != numRecords-1 {
		return pb, fmt.Errorf("%w: %d records, last offset delta %d", kafka.ErrInvalidRecord, numRecords, lastOffsetDelta)
	}
	if pb.ProducerID < 0 {
		pb.ProducerID, pb.ProducerEpoch, pb.BaseSequence = record.NoProducerID, 0, record.NoSequence
	}
	data, err := d.decompress(int(attrs&7), raw[batchHeaderLen:])
	if err != nil {
		return pb, err
	}
	// Every record takes at least 7 bytes, so a count beyond len(data) is
	// a lie that must not size an allocation.
	if int64(numRecords) > int64(len(data)) {
		return pb, fmt.Errorf("%w: %d records in %d bytes", kafka.ErrCorruptMessage, numRecords, len(data))
	}
	pb.Records = make([]record.Record, numRecords)
	for i := range pb.Records {
		n, size := binary.Varint(data)
		if size <= 0 || n < 0 || n > int64(len(data)-size) {
			return pb, fmt.Errorf("%w: record %d length", kafka.ErrCorruptMessage, i)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(data[:size+int(n)]); err != nil {
			return pb, fmt.Errorf("%w: record %d: %v", kafka.ErrCorruptMessage, i, err)
		}
		data = data[size+int(n):]
		if kr.OffsetDelta != int32(i) {
			return pb, fmt.Errorf("%w: record %d has offset delta %d", kafka.ErrInvalidRecord, i, kr.OffsetDelta)
		}
		r := record.Record{Key: kr.Key, Value: kr.Value, Timestamp: firstTimestamp + kr.TimestampDelta64}
		for _, h := range kr.Headers {
			r.Headers = append(r.Headers, record.Header{Key: h.Key, Value: h.Value})
		}
		pb.Records[i] = r
	}
	if len(data) != 0 {
		return pb, fmt.Errorf("%w: %d bytes after the last record", kafka.ErrCorruptMessage, len(data))
	}
	return pb, nil
}

// appendBatch encodes b as an uncompressed v2 record batch.
func appendBatch(dst []byte, b *record.Batch) []byte {
	if len(b.Records) == 0 {
		return dst // never stored (record.Batch invariant 1); nothing to say
	}
	start := len(dst)
	first := b.Records[0].Timestamp
	maxTS := first
	for i := range b.Records {
		maxTS = max(maxTS, b.Records[i].Timestamp)
	}
	epoch := b.ProducerEpoch
	if b.ProducerID == record.NoProducerID {
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
	dst = binary.BigEndian.AppendUint64(dst, uint64(maxTS))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(epoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Records)))
	var body []byte
	for i := range b.Records {
		r := &b.Records[i]
		body = body[:0]
		body = append(body, 0) // record attributes
		body = binary.AppendVarint(body, r.Timestamp-first)
		body = binary.AppendVarint(body, int64(i))
		body = appendVarintBytes(body, r.Key)
		body = appendVarintBytes(body, r.Value)
		body = binary.AppendVarint(body, int64(len(r.Headers)))
		for _, h := range r.Headers {
			body = binary.AppendVarint(body, int64(len(h.Key)))
			body = append(body, h.Key...)
			body = appendVarintBytes(body, h.Value)
		}
		dst = binary.AppendVarint(dst, int64(len(body)))
		dst = append(dst, body...)
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(dst)-start-12))
	binary.BigEndian.PutUint32(dst[start+17:], crc32.Checksum(dst[start+crcStart:], castagnoli))
	return dst
}

// appendVarintBytes appends a varint length and b; nil is length -1.
func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
