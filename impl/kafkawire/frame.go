package kafkawire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/wireformat"
)

// DefaultMaxRequestBytes bounds a request frame when Server.MaxRequestBytes
// is 0 (Kafka's socket.request.max.bytes is 100 MiB too).
const DefaultMaxRequestBytes = wireformat.DefaultMaxFrameBytes

// ErrMalformed marks a frame that cannot be parsed; the connection is closed.
var ErrMalformed = errors.New("malformed request")

// ErrFrameTooLarge marks a frame whose size prefix is negative or over the
// limit; the connection is closed without reading the body.
var ErrFrameTooLarge = wireformat.ErrFrameTooLarge

// UnsupportedError is a request whose header parsed but whose api key or
// version this server does not serve. The header is still known, so the
// server can answer an ApiVersions request (KIP-511) before deciding what to
// do with the connection.
type UnsupportedError struct {
	Key, Version  int16
	CorrelationID int32
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("unsupported api key %d (%s) version %d", e.Key, kmsg.NameForKey(e.Key), e.Version)
}

// Request is one parsed Kafka request.
type Request struct {
	Key, Version  int16
	CorrelationID int32
	ClientID      *string
	// Body has its version set; nil when ParseRequest returned an error.
	Body kmsg.Request
}

// ParseRequest decodes a frame (the bytes after the size prefix): the request
// header (v1, or v2 with tagged fields for flexible versions) and the body.
// An api key or version the server does not serve gives an
// *UnsupportedError together with a Request holding the header; anything
// else that does not parse wraps ErrMalformed.
func ParseRequest(frame []byte) (*Request, error) {
	if len(frame) < 8 {
		return nil, fmt.Errorf("%w: %d-byte header", ErrMalformed, len(frame))
	}
	req := &Request{
		Key:           int16(binary.BigEndian.Uint16(frame[0:])),
		Version:       int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	if !supported(req.Key, req.Version) {
		return req, &UnsupportedError{Key: req.Key, Version: req.Version, CorrelationID: req.CorrelationID}
	}
	body := kmsg.RequestForKey(req.Key)
	body.SetVersion(req.Version)
	rest := frame[8:]
	clientID, rest, err := readNullableString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: client id: %v", ErrMalformed, err)
	}
	req.ClientID = clientID
	if body.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return nil, fmt.Errorf("%w: header tags: %v", ErrMalformed, err)
		}
	}
	if err := body.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%w: %s v%d body: %v", ErrMalformed, kmsg.NameForKey(req.Key), req.Version, err)
	}
	req.Body = body
	return req, nil
}

var errShort = errors.New("not enough data")

// readNullableString reads an int16-length string; -1 is null.
func readNullableString(b []byte) (*string, []byte, error) {
	if len(b) < 2 {
		return nil, nil, errShort
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	switch {
	case n == -1:
		return nil, b, nil
	case n < 0:
		return nil, nil, fmt.Errorf("string length %d", n)
	case int(n) > len(b):
		return nil, nil, errShort
	}
	s := string(b[:n])
	return &s, b[n:], nil
}

// skipTags skips a tagged-field section: a count, then (tag, size, bytes).
func skipTags(b []byte) ([]byte, error) {
	count, b, err := readUvarint(b)
	if err != nil {
		return nil, err
	}
	for range count {
		if _, b, err = readUvarint(b); err != nil {
			return nil, err
		}
		var size uint64
		if size, b, err = readUvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, errShort
		}
		b = b[size:]
	}
	return b, nil
}

func readUvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > 1<<31 {
		return 0, nil, errors.New("bad uvarint")
	}
	return v, b[n:], nil
}

// appendResponse frames a response: size, correlation id, the response
// header's tagged fields for flexible versions (never for ApiVersions, whose
// response header stays v0 so any client can read it), then the body.
func appendResponse(dst []byte, key int16, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && key != apiVersionsKey {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
