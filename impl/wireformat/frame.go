package wireformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// DefaultMaxFrameBytes bounds a frame when the reader sets no bound
// (Kafka's socket.request.max.bytes is 100 MiB too).
const DefaultMaxFrameBytes int32 = 100 << 20

// ErrFrameTooLarge marks a frame whose size prefix is negative or over the
// limit; the connection is closed without reading the body.
var ErrFrameTooLarge = errors.New("request frame size out of range")

// ReadFrame reads one size-prefixed frame from r and returns what follows the
// 4-byte size, in a fresh buffer (records produced to the broker alias it).
// maxBytes <= 0 means DefaultMaxFrameBytes.
func ReadFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	n, err := ReadFrameSize(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return ReadFrameBody(r, n)
}

// ReadFrameSize reads a frame's size prefix and checks it against
// maxBytes (<= 0: DefaultMaxFrameBytes).
func ReadFrameSize(r io.Reader, maxBytes int32) (int, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFrameBytes
	}
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxBytes {
		return 0, fmt.Errorf("%w: %d bytes (limit %d)", ErrFrameTooLarge, n, maxBytes)
	}
	return int(n), nil
}

// ReadFrameBody reads the n bytes of a frame whose size was read.
func ReadFrameBody(r io.Reader, n int) ([]byte, error) {
	frame, err := ReadBounded(r, n)
	if err != nil {
		return nil, fmt.Errorf("read %d-byte frame: %w", n, err)
	}
	return frame, nil
}

// FirstChunk is what ReadBounded allocates before any of the bytes came:
// enough that most requests take one allocation, small enough that a
// thousand declared and unsent frames cost a quarter of a GiB.
const FirstChunk = 256 << 10

// ReadBounded reads exactly n bytes from r into a fresh buffer that grows
// with the bytes that arrive, at most doubling: a length a peer declared
// but never sent costs what it sent, not what it declared.
func ReadBounded(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, FirstChunk))
	for len(buf) < n {
		chunk := min(n-len(buf), max(len(buf), FirstChunk))
		buf = slices.Grow(buf, chunk)
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+got]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}
