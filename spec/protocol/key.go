package protocol

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// Key is a canonical encoding of a state: two states have equal keys if and
// only if they are equal (the message bag compared as a multiset). It is the
// whole state, not a hash of it, so the explorer can never merge two
// different states by a collision.
func (s *State) Key() string {
	var e encoder
	return string(e.state(s, nil))
}

// encoder appends a state's fields, each list with its length first, so the
// encoding parses back unambiguously. A number in -1..253 takes one byte
// (v+1); any other is 255 and a varint. Within the explorer's bounds every
// number is small, so a state costs a few dozen bytes.
type encoder struct {
	buf  []byte
	msgs []byte // the messages' encodings, one after another
	ends []int  // where each message's encoding ends in msgs
	idx  []int  // message order, sorted by encoding
	best []byte // the smallest key so far (symmetry)
}

func (e *encoder) int(v int32) {
	if v >= -1 && v < 254 {
		e.buf = append(e.buf, byte(v+1))
		return
	}
	e.buf = binary.AppendVarint(append(e.buf, 255), int64(v))
}

func (e *encoder) bool(b bool) {
	if b {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// id encodes a replica id through the permutation perm (nil: identity).
func (e *encoder) id(v int32, perm []int32) {
	if v >= 0 && perm != nil {
		v = perm[v]
	}
	e.int(v)
}

func (e *encoder) set(set uint32, perm []int32) {
	if perm != nil {
		var out uint32
		for i, p := range perm {
			if has(set, int32(i)) {
				out |= 1 << uint(p)
			}
		}
		set = out
	}
	e.int(int32(set))
}

func (e *encoder) entries(es []Entry) {
	e.int(int32(len(es)))
	for _, x := range es {
		e.int(x.Value)
		e.int(x.Epoch)
	}
}

// state encodes s with replica i renamed perm[i]; inv is perm's inverse.
func (e *encoder) state(s *State, perm []int32) []byte {
	e.buf = e.buf[:0]
	n := len(s.Replicas)
	for j := range n {
		i := int32(j)
		if perm != nil {
			i = inverse(perm, int32(j))
		}
		r := &s.Replicas[i]
		e.bool(r.Up)
		e.int(r.Inc)
		e.entries(r.Log)
		e.int(int32(len(r.Epochs)))
		for _, ep := range r.Epochs {
			e.int(ep.Epoch)
			e.int(ep.Start)
		}
		e.int(r.HW)
		e.int(r.Epoch)
		e.id(r.Leader, perm)
		e.int(int32(r.Await))
		e.int(r.Query)
		e.set(r.ISR, perm)
		for k := range n {
			src := int32(k)
			if perm != nil {
				src = inverse(perm, int32(k))
			}
			e.int(r.Known[src].LEO)
			e.int(r.Known[src].Inc)
		}
	}
	c := &s.Ctrl
	e.id(c.Leader, perm)
	e.int(c.Epoch)
	e.set(c.ISR, perm)
	e.set(c.Alive, perm)
	for j := range n {
		i := int32(j)
		if perm != nil {
			i = inverse(perm, int32(j))
		}
		e.int(c.Inc[i])
	}
	g := &s.Ghost
	e.int(g.Next)
	e.int(int32(len(g.Pending)))
	pend := slices.Clone(g.Pending)
	for i := range pend {
		if perm != nil {
			pend[i].R = perm[pend[i].R]
		}
	}
	slices.SortFunc(pend, func(a, b Pending) int {
		return cmpInts(a.Value, b.Value, a.R, b.R, a.Inc, b.Inc, a.Epoch, b.Epoch)
	})
	for _, p := range pend {
		e.int(p.Value)
		e.int(p.R)
		e.int(p.Inc)
		e.int(p.Epoch)
	}
	e.int(int32(len(g.Acked)))
	for _, v := range g.Acked {
		e.int(v)
	}
	e.entries(g.Committed)
	e.int(g.Crashes)
	e.int(g.PowerLosses)
	e.int(g.Pauses)
	e.int(g.Reelections)
	// The bag: each message encoded alone, then sorted, so the order in
	// which messages were sent does not matter.
	head := e.buf
	e.buf = e.msgs[:0]
	e.ends = e.ends[:0]
	for i := range s.Net {
		m := &s.Net[i]
		e.int(int32(m.Kind))
		e.id(m.From, perm)
		e.id(m.To, perm)
		e.int(m.Inc)
		e.int(m.Epoch)
		e.int(m.Offset)
		e.int(m.Query)
		e.int(m.Asked)
		e.int(m.End)
		e.int(m.HW)
		e.bool(m.OutOfRange)
		e.bool(m.Diverging)
		e.entries(m.Entries)
		e.ends = append(e.ends, len(e.buf))
	}
	e.msgs = e.buf
	msg := func(i int) []byte {
		from := 0
		if i > 0 {
			from = e.ends[i-1]
		}
		return e.msgs[from:e.ends[i]]
	}
	e.idx = e.idx[:0]
	for i := range s.Net {
		e.idx = append(e.idx, i)
	}
	slices.SortFunc(e.idx, func(a, b int) int { return bytes.Compare(msg(a), msg(b)) })
	e.buf = binary.AppendUvarint(head, uint64(len(s.Net)))
	for _, i := range e.idx {
		m := msg(i)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(m)))
		e.buf = append(e.buf, m...)
	}
	return e.buf
}

func inverse(perm []int32, j int32) int32 {
	for i, p := range perm {
		if p == j {
			return int32(i)
		}
	}
	return j
}

func cmpInts(pairs ...int32) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != pairs[i+1] {
			if pairs[i] < pairs[i+1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// permutations lists every permutation of 0..n-1.
func permutations(n int) [][]int32 {
	if n == 0 {
		return [][]int32{{}}
	}
	var out [][]int32
	for _, p := range permutations(n - 1) {
		for pos := 0; pos <= len(p); pos++ {
			q := make([]int32, 0, n)
			q = append(q, p[:pos]...)
			q = append(q, int32(n-1))
			q = append(q, p[pos:]...)
			out = append(out, q)
		}
	}
	return out
}

// symmetricKey is the smallest key over all renamings of the replicas. The
// protocol treats replica ids alike (elections pick any eligible replica,
// the ISR keeps no id-ordered member), and so do the invariants, so states
// that differ only by a renaming have renamed successors and the same
// verdicts: exploring one of them is enough.
func (s *State) symmetricKey(perms [][]int32, e *encoder) string {
	e.best = e.best[:0]
	for i, p := range perms {
		k := e.state(s, p)
		if i == 0 || bytes.Compare(k, e.best) < 0 {
			e.best = append(e.best[:0], k...)
		}
	}
	return string(e.best)
}
