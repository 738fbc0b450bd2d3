package wireformat

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// Parse parses the v2 batch at the start of raw and decodes its records
// through d, mapping record's errors onto Kafka's: bad framing or CRC
// wraps kafka.ErrCorruptMessage, a well-formed batch with invalid records
// kafka.ErrInvalidRecord, and d's own errors are Kafka's already.
func Parse(raw []byte, d *Decompressor) (record.Batch, error) {
	if len(raw) < record.HeaderLen {
		return record.Batch{}, fmt.Errorf("%w: %d bytes, want at least %d", kafka.ErrCorruptMessage, len(raw), record.HeaderLen)
	}
	pb, err := record.Parse(raw)
	if err == nil {
		err = pb.Decode(d.Decompress)
	}
	switch {
	case err == nil:
		return pb, nil
	case errors.Is(err, record.ErrInvalid):
		return pb, fmt.Errorf("%w: %v", kafka.ErrInvalidRecord, err)
	case errors.Is(err, record.ErrCorrupt), errors.Is(err, record.ErrTruncated):
		return pb, fmt.Errorf("%w: %v", kafka.ErrCorruptMessage, err)
	}
	return pb, err
}

// DecodeFetched decodes the record batches of a fetch response: v2 batches
// of any codec, with their offsets and leader epochs. Control batches are
// skipped, and a partial batch at the end (a broker may cut a response at
// its byte limit) is dropped, as consumers do.
func DecodeFetched(raw []byte) ([]record.Batch, error) {
	var out []record.Batch
	d := &Decompressor{}
	for len(raw) >= 12 {
		length := int64(int32(binary.BigEndian.Uint32(raw[8:])))
		if length < record.HeaderLen-12 {
			return out, fmt.Errorf("%w: batch length %d", kafka.ErrCorruptMessage, length)
		}
		if 12+length > int64(len(raw)) {
			break // partial
		}
		one := raw[:12+length]
		raw = raw[12+length:]
		if attrs := int16(binary.BigEndian.Uint16(one[21:])); attrs&record.AttrControl != 0 {
			continue
		}
		pb, err := Parse(one, d)
		if err != nil {
			return out, err
		}
		out = append(out, pb)
	}
	return out, nil
}
