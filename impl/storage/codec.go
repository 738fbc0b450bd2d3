package storage

import (
	"errors"
	"fmt"
	"math"

	"github.com/watermarkhq/watermark/impl/record"
)

// A segment file is a run of Kafka v2 record batches (record.Parse), one
// after another, as Kafka's log keeps them: each batch is the bytes its
// producer sent, with the base offset and leader epoch its leader assigned
// written in, so a broker stores, replicates and serves a batch without
// decoding or re-encoding it. The batch's own length field frames it and
// its CRC-32C guards everything but those two fields; recovery checks both.
const (
	// maxFrameSize bounds a stored batch. A corrupt length field could
	// otherwise make recovery allocate gigabytes.
	maxFrameSize = 64 << 20
	// minFrameSize is the smallest batch that holds a record.
	minFrameSize = record.HeaderLen + 7
)

// Frame decoding failures. Recovery tells them apart only to report why it
// stopped; all of them end the valid prefix of the log.
var (
	errTornFrame  = errors.New("torn frame: runs past the end of the file")
	errBadLength  = errors.New("frame length out of range")
	errBadCRC     = errors.New("CRC-32C mismatch")
	errBadPayload = errors.New("malformed batch")
)

// ErrInvalidBatch is returned by Log.Append for a batch that breaks
// record.Batch's invariants or is too large to store.
var ErrInvalidBatch = errors.New("invalid batch")

// validateBatch checks the invariants of record.Batch that storage relies on,
// on the way in (Append) and on the way out (recovery).
func validateBatch(b *record.Batch) error {
	switch {
	case b.Len() <= 0:
		return fmt.Errorf("%w: no records", ErrInvalidBatch)
	case b.BaseOffset < 0:
		return fmt.Errorf("%w: negative base offset %d", ErrInvalidBatch, b.BaseOffset)
	case b.BaseOffset > math.MaxInt64-int64(b.Len()):
		return fmt.Errorf("%w: offsets overflow", ErrInvalidBatch)
	case (b.ProducerID == record.NoProducerID) != (b.BaseSequence == record.NoSequence):
		return fmt.Errorf("%w: producer id %d with base sequence %d", ErrInvalidBatch, b.ProducerID, b.BaseSequence)
	}
	return nil
}

// frameSize is the stored size of b.
func frameSize(b *record.Batch) int { return b.Size() }

// BatchFits reports whether b fits in one frame of the log, and if not how
// big it is.
func BatchFits(b *record.Batch) error {
	if n := frameSize(b); n > maxFrameSize {
		return fmt.Errorf("a batch of %d records takes %d bytes, and the log keeps a batch in at most %d", b.Len(), n, maxFrameSize)
	}
	return nil
}

// appendFrame appends the frame of b to dst.
func appendFrame(dst []byte, b *record.Batch) ([]byte, error) {
	if err := BatchFits(b); err != nil {
		return dst, fmt.Errorf("%w: %v", ErrInvalidBatch, err)
	}
	return record.Encode(dst, b), nil
}

// decodeFrame decodes the frame at the start of buf, its records left
// undecoded. n is the frame's length when its length field could be
// followed (the frame is complete, even if its contents are bad) and 0
// when it could not (torn, or a length out of range). The batch's Wire
// aliases buf.
func decodeFrame(buf []byte) (b record.Batch, n int, err error) {
	n, err = record.WireLen(buf)
	switch {
	case errors.Is(err, record.ErrTruncated):
		return b, 0, errTornFrame
	case err != nil || n < minFrameSize || n > maxFrameSize:
		return b, 0, fmt.Errorf("%w: %d", errBadLength, n)
	case n > len(buf):
		return b, 0, errTornFrame
	}
	b, err = record.Parse(buf[:n])
	switch {
	case errors.Is(err, record.ErrCorrupt):
		return b, n, fmt.Errorf("%w: %v", errBadCRC, err)
	case err != nil:
		return b, n, fmt.Errorf("%w: %v", errBadPayload, err)
	}
	if err = validateBatch(&b); err != nil {
		return b, n, fmt.Errorf("%w: %v", errBadPayload, err)
	}
	return b, n, nil
}

// decodeRecords decodes the records of a batch read from the log where a
// reader wants them (ReadAll, the mirror). A compressed batch keeps only
// Wire: the log holds it as produced, and decompression is the wire
// layer's (record.Decompressor).
func decodeRecords(b *record.Batch) error {
	if err := b.Decode(nil); err != nil && !errors.Is(err, record.ErrCompressed) {
		return fmt.Errorf("%w: %v", errBadPayload, err)
	}
	return nil
}

// EncodeBatch appends b to dst as the log stores it (a v2 batch); the
// real cluster's replication ships batches this way, so that a follower
// stores what the leader stored, byte for byte. DecodeBatch reads one back
// and returns how many bytes it took.
func EncodeBatch(dst []byte, b *record.Batch) ([]byte, error) { return appendFrame(dst, b) }

// DecodeBatch decodes the batch at the start of buf and returns how many
// bytes it took. Its records are not decoded (record.Batch.Decode).
func DecodeBatch(buf []byte) (record.Batch, int, error) { return decodeFrame(buf) }
