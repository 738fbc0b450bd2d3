package spec

import (
	"fmt"
	"strings"
)

// Log is the committed log of one partition: record values in offset order,
// the first at offset 0. It is the state of the sequential specification in
// observe.go.
//
// A Log is an immutable value: Append returns a new Log and leaves the old
// one as it was, and logs share their common prefix. That keeps the
// nondeterministic steps cheap: a checker holds many candidate logs that
// differ only in their last records, and copies and compares them often.
// The zero Log is the empty log.
type Log struct {
	tail *node // nil for the empty log
}

// node is one record and the log that ends with it.
//
// Invariants:
//  1. n = prev.n + 1 (0 for a nil prev): n is the log's length, so this
//     record's offset is n-1.
//  2. hash = chain(prev.hash, value) (chain(0, value) for a nil prev): equal
//     logs have equal hashes, whichever way they were built.
//  3. A node is never modified once linked: logs share nodes freely.
type node struct {
	value string
	prev  *node
	n     int64
	hash  uint64
}

// Len is the number of committed records, which is also the offset the next
// committed record gets.
func (l Log) Len() int64 {
	if l.tail == nil {
		return 0
	}
	return l.tail.n
}

// Hash is a hash of the log's values in order; equal logs hash alike.
func (l Log) Hash() uint64 {
	if l.tail == nil {
		return 0
	}
	return l.tail.hash
}

// Append returns the log with value committed at offset Len().
func (l Log) Append(value string) Log {
	return Log{&node{value: value, prev: l.tail, n: l.Len() + 1, hash: chain(l.Hash(), value)}}
}

// At returns the value at offset, if the log has one there.
func (l Log) At(offset int64) (string, bool) {
	if offset < 0 || offset >= l.Len() {
		return "", false
	}
	return l.from(offset + 1).value, true
}

// Values returns the log's values in offset order.
func (l Log) Values() []string {
	vs := make([]string, l.Len())
	for n := l.tail; n != nil; n = n.prev {
		vs[n.n-1] = n.value
	}
	return vs
}

// Equal reports whether two logs hold the same values at the same offsets.
func (l Log) Equal(o Log) bool {
	a, b := l.tail, o.tail
	if l.Len() != o.Len() || l.Hash() != o.Hash() {
		return false
	}
	// Logs built from a common prefix share its nodes: stop where they meet.
	for a != b {
		if a.value != b.value {
			return false
		}
		a, b = a.prev, b.prev
	}
	return true
}

// String renders the whole log as "[0:a 1:b]".
func (l Log) String() string { return l.Describe(int(l.Len())) }

// Describe renders the log's length and its last records at most, as
// "len 7 [… 5:a 6:b]": enough to read a linearization step by step without
// printing the whole log at every step.
func (l Log) Describe(last int) string {
	var recs []string
	n := l.tail
	for ; n != nil && len(recs) < last; n = n.prev {
		recs = append(recs, fmt.Sprintf("%d:%s", n.n-1, n.value))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "len %d [", l.Len())
	if n != nil {
		b.WriteString("…")
		if len(recs) > 0 {
			b.WriteByte(' ')
		}
	}
	for i := len(recs) - 1; i >= 0; i-- {
		b.WriteString(recs[i])
		if i > 0 {
			b.WriteByte(' ')
		}
	}
	b.WriteByte(']')
	return b.String()
}

// from returns the node of the prefix of length n (1 <= n <= Len()). It walks
// back from the tail: reads near the end of the log, the common case for
// consumers that keep up, are the cheap ones.
func (l Log) from(n int64) *node {
	p := l.tail
	for p.n > n {
		p = p.prev
	}
	return p
}

// chain extends a log's hash with one more value. The mix is not linear, so
// the same values in another order hash differently.
func chain(h uint64, value string) uint64 {
	// FNV-1a of the value, without hash/fnv's allocation: this runs on
	// every step of a linearizability search.
	v := uint64(14695981039346656037)
	for i := 0; i < len(value); i++ {
		v ^= uint64(value[i])
		v *= 1099511628211
	}
	h ^= v
	// splitmix64's finaliser.
	h += 0x9e3779b97f4a7c15
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
	h = (h ^ (h >> 27)) * 0x94d049bb133111eb
	return h ^ (h >> 31)
}
