package kafkawire

import (
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeaderLen is the fixed part of a v2 record batch, up to and including
// the record count; crcStart is where the CRC's coverage begins (attributes).
const (
	batchHeaderLen = record.HeaderLen
	crcStart       = 21
)

// Attribute bits of a v2 record batch besides the codec.
const (
	attrTransactional = record.AttrTransactional
	attrControl       = record.AttrControl
)

// decodeProduce checks the record batches of one partition of a produce
// request and returns the batch with its bytes (record.Batch.Wire), which
// is what the broker stores and serves. It accepts exactly one v2 batch:
// the broker appends one batch per ProduceRequest, and splitting a Kafka
// batch would break its sequence numbers. The records are decompressed
// and decoded once, here, to validate them (offset deltas, framing), as
// Kafka's broker does, and are not kept. Bad framing or CRC wraps
// kafka.ErrCorruptMessage; a well-formed batch the broker cannot take
// wraps kafka.ErrInvalidRecord.
func decodeProduce(raw []byte, d *decompressor) (record.Batch, error) {
	pb, err := parseBatch(raw, d)
	if err != nil {
		return pb, err
	}
	if n := len(pb.Wire); n < len(raw) {
		return pb, fmt.Errorf("%w: more than one batch for a partition", kafka.ErrInvalidRecord)
	}
	if pb.Attributes()&(attrTransactional|attrControl) != 0 {
		return pb, fmt.Errorf("%w: transactional and control batches are not supported", kafka.ErrInvalidRecord)
	}
	pb.Records = nil
	return pb, nil
}

// parseBatch parses the v2 batch at the start of raw and decodes its
// records, mapping record's errors onto Kafka's.
func parseBatch(raw []byte, d *decompressor) (record.Batch, error) {
	if len(raw) < batchHeaderLen {
		return record.Batch{}, fmt.Errorf("%w: %d bytes, want at least %d", kafka.ErrCorruptMessage, len(raw), batchHeaderLen)
	}
	pb, err := record.Parse(raw)
	if err == nil {
		err = pb.Decode(d.decompress)
	}
	switch {
	case err == nil:
		return pb, nil
	case errors.Is(err, record.ErrInvalid):
		return pb, fmt.Errorf("%w: %v", kafka.ErrInvalidRecord, err)
	case errors.Is(err, record.ErrCorrupt), errors.Is(err, record.ErrTruncated):
		return pb, fmt.Errorf("%w: %v", kafka.ErrCorruptMessage, err)
	}
	return pb, err // the decompressor's, already a Kafka error
}

// appendBatch appends b as a v2 record batch: its bytes as stored, or,
// for a batch built in memory, encoded uncompressed.
func appendBatch(dst []byte, b *record.Batch) []byte { return record.Encode(dst, b) }
