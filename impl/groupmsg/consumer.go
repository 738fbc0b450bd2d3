package groupmsg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The coordinator treats protocol metadata and assignments as opaque bytes,
// as Kafka does. For protocol type "consumer", clients encode them in
// Kafka's ConsumerProtocol schemas; the functions below read and write the
// fields every version shares, for tests, the reference client and
// impl/group's CheckInvariants' double-assignment check.
//
//	Subscription: Version int16, Topics [string], UserData nullable bytes,
//	              then (v1+) fields ignored here.
//	Assignment:   Version int16, [Topic string, Partitions [int32]],
//	              UserData nullable bytes.
//
// Strings are int16-length-prefixed, arrays and bytes int32-length-prefixed
// (-1 for null), all big-endian.

// errShort is returned for truncated or malformed input.
var errShort = errors.New("consumer protocol: malformed")

// EncodeConsumerSubscription returns a version-0 ConsumerProtocol
// subscription to topics.
func EncodeConsumerSubscription(topics []string) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = appendString(b, t)
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff) // null user data
}

// DecodeConsumerSubscription returns the topics of a ConsumerProtocol
// subscription of any version.
func DecodeConsumerSubscription(data []byte) ([]string, error) {
	r := reader{b: data}
	r.int16()
	n := r.arrayLen()
	topics := make([]string, 0, min(n, len(data)))
	for range n {
		topics = append(topics, r.string())
	}
	r.bytes()
	if r.err != nil {
		return nil, r.err
	}
	return topics, nil
}

// EncodeConsumerAssignment returns a version-0 ConsumerProtocol assignment,
// topics in sorted order.
func EncodeConsumerAssignment(a map[string][]int32) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(a)))
	for _, t := range slices.Sorted(maps.Keys(a)) {
		b = appendString(b, t)
		b = binary.BigEndian.AppendUint32(b, uint32(len(a[t])))
		for _, p := range a[t] {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

// DecodeConsumerAssignment reads a ConsumerProtocol assignment of any
// version; trailing bytes are refused.
func DecodeConsumerAssignment(data []byte) (map[string][]int32, error) {
	r := reader{b: data}
	r.int16()
	n := r.arrayLen()
	out := make(map[string][]int32)
	for range n {
		t := r.string()
		np := r.arrayLen()
		for range np {
			out[t] = append(out[t], r.int32())
		}
	}
	r.bytes()
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errShort, len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// reader consumes big-endian fields; after the first error every read
// returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = errShort
		}
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

// arrayLen reads an array length, refusing one longer than the bytes left
// could hold, so that garbage cannot make a loop run for long.
func (r *reader) arrayLen() int {
	n := int(r.int32())
	if n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = errShort
		}
		return 0
	}
	return n
}

func (r *reader) string() string {
	n := int(r.int16())
	if n < 0 {
		if r.err == nil {
			r.err = errShort
		}
		return ""
	}
	return string(r.take(n))
}

func (r *reader) bytes() []byte {
	n := int(r.int32())
	if n == -1 {
		return nil
	}
	return r.take(n)
}

// DescribeAssignment renders a ConsumerProtocol assignment decoded, and
// any other one as quoted bytes.
func DescribeAssignment(b []byte) string {
	if a, err := DecodeConsumerAssignment(b); err == nil {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%q", b)
}
