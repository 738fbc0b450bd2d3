// Package wireformat is what the broker's wire server (impl/kafkawire)
// and the harness's Kafka client (impl/kafkaclient) share of Kafka's wire
// format, so that neither compiles the other: size-prefixed frames read
// within a bound, and v2 record batches decompressed within a bound (no
// batch expands into an unbounded allocation) and parsed with Kafka's
// error codes for what is wrong with them.
package wireformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// Compression codecs: the low three bits of a record batch's attributes.
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLz4    = 3
	CodecZstd   = 4
)

// Decompressor undoes a batch's compression, never producing more
// than Limit bytes, so that a small batch cannot expand into an unbounded
// allocation (a "zip bomb"). One serves a whole broker, and at most
// DecompressSlots batches are decompressed at once, the others waiting:
// the memory all connections together can make it take is bounded too.
type Decompressor struct {
	Limit    int // 0 means DefaultLimit
	zstdOnce sync.Once
	zstd     *zstd.Decoder // safe for concurrent DecodeAll
	zstdErr  error
	slotOnce sync.Once
	slots    chan struct{}
}

// DefaultLimit is a Decompressor's bound when it sets none: 128 MiB, the
// broker's default (kafkawire.DefaultMaxBatchBytes).
const DefaultLimit = 128 << 20

// DecompressSlots bounds the batches one broker decompresses at once: with
// DefaultLimit each, 512 MiB at most, whatever the connections.
const DecompressSlots = 4

func (d *Decompressor) acquire() func() {
	d.slotOnce.Do(func() { d.slots = make(chan struct{}, DecompressSlots) })
	d.slots <- struct{}{}
	return func() { <-d.slots }
}

// errTooBig: a batch decompressed past the bound.
var errTooBig = errors.New("decompressed batch over the bound")

// bound is the most a batch may decompress to.
func (d *Decompressor) bound() int {
	if d.Limit <= 0 {
		return DefaultLimit
	}
	return d.Limit
}

// Decompress undoes codec's compression of src (a batch's records),
// within d's bound and its slots.
func (d *Decompressor) Decompress(codec int, src []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	if codec == CodecNone {
		return src, nil
	}
	defer d.acquire()()
	switch codec {
	case CodecGzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(src)); err == nil {
			out, err = d.readAll(zr)
		}
	case CodecSnappy:
		out, err = d.snappy(src)
	case CodecLz4:
		out, err = d.readAll(lz4.NewReader(bytes.NewReader(src)))
	case CodecZstd:
		d.zstdOnce.Do(func() {
			d.zstd, d.zstdErr = zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(uint64(d.bound())))
		})
		if err = d.zstdErr; err == nil {
			out, err = d.zstd.DecodeAll(src, nil)
		}
	default:
		return nil, fmt.Errorf("%w: codec %d", kafka.ErrUnsupportedCompression, codec)
	}
	switch {
	case errors.Is(err, errTooBig) || errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return nil, kafka.With(kafka.ErrMessageTooLarge, "the batch decompresses to more than %d bytes", d.bound())
	case err != nil:
		return nil, fmt.Errorf("%w: decompress (codec %d): %v", kafka.ErrCorruptMessage, codec, err)
	}
	return out, nil
}

// readAll reads r to its end, failing past the limit.
func (d *Decompressor) readAll(r io.Reader) ([]byte, error) {
	limit := d.bound()
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, errTooBig
	}
	return out, nil
}

// XerialMagic opens snappy data in the xerial (snappy-java) framing that
// the Java client writes: the magic, two int32 versions, then blocks each
// prefixed with an int32 length. Other clients write one raw snappy block.
var XerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func (d *Decompressor) snappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, XerialMagic) {
		return d.snappyBlock(nil, src)
	}
	if len(src) < 16 {
		return nil, fmt.Errorf("xerial snappy header: %d bytes", len(src))
	}
	src = src[16:]
	var out []byte
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, fmt.Errorf("xerial snappy chunk header: %d bytes", len(src))
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return nil, fmt.Errorf("xerial snappy chunk of %d bytes, %d left", n, len(src))
		}
		var err error
		if out, err = d.snappyBlock(out, src[:n]); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return out, nil
}

// snappyBlock appends one raw snappy block's contents to out.
func (d *Decompressor) snappyBlock(out, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > d.bound()-len(out) {
		return nil, errTooBig
	}
	dec, err := snappy.Decode(make([]byte, n), block)
	if err != nil {
		return nil, err
	}
	return append(out, dec...), nil
}
