package kafkawire

import (
	"fmt"
	"hash/crc32"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/wireformat"
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
func decodeProduce(raw []byte, d *wireformat.Decompressor) (record.Batch, error) {
	pb, err := wireformat.Parse(raw, d)
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

// appendBatch appends b as a v2 record batch: its bytes as stored, or,
// for a batch built in memory, encoded uncompressed.
func appendBatch(dst []byte, b *record.Batch) []byte { return record.Encode(dst, b) }
