package linearizability

// The porcupine model of the partition log: the spec's partition log as a
// set of candidate states, stepped by spec/'s rules. The groups' committed
// offsets have a model of their own (groupModel).

import (
	"context"
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/watermarkhq/watermark/spec"
)

// logModel is the porcupine model of the partition log: the spec's
// partition log of each of nparts topic-partitions, numbered as
// toOperations numbers them. A partition's state is the set of candidate
// states it may be in (candidates), from the empty log on; unread is the
// value toOperations gave the writes no read returned.
func logModel(nparts int, unread string) porcupine.Model {
	return porcupine.Model{
		Partition: byPartition(nparts, func(c *logCall) int { return c.part }),
		Init:      func() any { return newCandidates(logState{}) },
		StepContext: func(ctx context.Context, state, input, output any) (bool, any) {
			call, ret := input.(*logCall), output.(*logReturn)
			next, legal := state.(*candidates).step(ctx, func(s logState, add func(logState)) {
				stepLog(s, call, ret, unread, add)
			})
			return legal, next
		},
		Equal:                     func(a, b any) bool { return a.(*candidates).equal(b.(*candidates)) },
		Hash:                      func(s any) uint64 { return s.(*candidates).hash },
		DescribeOperation:         func(in, out any) string { return describeOperation(in.(*logCall), out.(*logReturn)) },
		DescribeState:             func(s any) string { return s.(*candidates).describe() },
		DescribeOperationMetadata: describeMetadata,
	}
}

// byPartition is a model's Partition function: it sorts operations into
// nparts partitions by the number part reads off their input, which is of
// the model's type C.
func byPartition[C any](nparts int, part func(C) int) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(ops []porcupine.Operation) [][]porcupine.Operation {
		out := make([][]porcupine.Operation, nparts)
		for _, o := range ops {
			p := part(o.Input.(C))
			out[p] = append(out[p], o)
		}
		return out
	}
}

// describeMetadata renders an operation's opMeta for the picture, e.g.
// "op 3, client 1, t-0" or "op 7, client 2, group g, t-0".
func describeMetadata(m any) string {
	meta, ok := m.(opMeta)
	if !ok {
		return ""
	}
	if meta.group != "" {
		return fmt.Sprintf("op %d, client %d, group %s, %s", meta.id, meta.client, meta.group, meta.tp)
	}
	return fmt.Sprintf("op %d, client %d, %s", meta.id, meta.client, meta.tp)
}

// logState is one candidate state of a partition: the committed log, how
// many pending writes may still take effect (toOperations, 4), and how many
// were counted in all.
type logState struct {
	log     spec.Log
	pending int
	counted int
}

func (s logState) hash() uint64 {
	return s.log.Hash() ^ uint64(s.pending)*0x9e3779b97f4a7c15 ^ uint64(s.counted)*0xbf58476d1ce4e5b9
}

// grow lets pending writes take effect, as unread records, until the log
// reaches length n; it reports false when too few are pending.
func (s logState) grow(n int64, unread string) (logState, bool) {
	gap := n - s.log.Len()
	if gap <= 0 {
		return s, true
	}
	if gap > int64(s.pending) {
		return s, false
	}
	for range gap {
		s.log = s.log.Append(unread)
	}
	s.pending -= int(gap)
	return s, true
}

// stepLog is the spec's nondeterministic step: it adds every state that may
// follow s once the operation has taken effect.
func stepLog(s logState, call *logCall, ret *logReturn, unread string, add func(logState)) {
	if s.counted < call.pendingBefore {
		return // count the pending writes called before first (toOperations, 5)
	}
	switch call.kind {
	case KindProduce:
		if call.pending {
			add(logState{s.log, s.pending + 1, s.counted + 1})
			return
		}
		// A write that was read took effect (toOperations, 2); a failed one
		// that was read is left for the read to reject.
		mustTakeEffect := call.read && call.write.Outcome != spec.Failed
		for _, n := range spec.Produce(s.log, call.write) {
			if !mustTakeEffect || n.Len() > s.log.Len() {
				add(logState{n, s.pending, s.counted})
			}
		}
		// The write may stand past the end, where pending writes took
		// effect before it.
		if call.write.Offset > s.log.Len() {
			if g, ok := s.grow(call.write.Offset, unread); ok {
				for _, n := range spec.Produce(g.log, call.write) {
					if n.Len() > g.log.Len() {
						add(logState{n, g.pending, g.counted})
					}
				}
			}
		}
	case KindFetch:
		// The HW a fetch reports is what a list-offsets would have answered
		// at the same instant.
		if g, ok := s.grow(max(ret.hw, ret.logStart), unread); ok && spec.Fetch(g.log, call.from, ret.records) && spec.ListOffsets(g.log, ret.hw) &&
			spec.LogStart(g.log, ret.logStart) {
			add(g)
		}
	case KindListOffsets:
		if g, ok := s.grow(ret.offset, unread); ok && spec.ListOffsets(g.log, ret.offset) {
			add(g)
		}
	}
}

// describeOperation renders an operation for the picture, e.g.
// "produce c0-1 acks=all → ok @3" or "fetch @3 → [3:c0-1] hw 4".
func describeOperation(call *logCall, ret *logReturn) string {
	var b strings.Builder
	b.WriteString(call.tp)
	switch call.kind {
	case KindProduce:
		acks := fmt.Sprint(call.write.Acks)
		if call.write.Acks == spec.AcksAll {
			acks = "all"
		}
		fmt.Fprintf(&b, "produce %s acks=%s → %s", call.value, acks, ret.outcome)
		if ret.offset >= 0 {
			fmt.Fprintf(&b, " @%d", ret.offset)
		}
		if !call.read {
			b.WriteString(" (never read)")
		}
	case KindFetch:
		fmt.Fprintf(&b, "fetch @%d → [", call.from)
		for i, r := range ret.records {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%d:%s", r.Offset, r.Value)
		}
		fmt.Fprintf(&b, "] hw %d", ret.hw)
	case KindListOffsets:
		fmt.Fprintf(&b, "list-offsets → %d", ret.offset)
	}
	return b.String()
}

// candidates is the set of states a partition may be in once the operations
// linearized so far have taken effect: the model's state, the power-set
// construction over spec's nondeterministic steps. porcupine's own
// construction (NondeterministicModel.ToModel) merges a step's states
// pairwise and does not look at the timeout while it does, so a large set
// can overrun the timeout by minutes; this one merges by hash and checks the
// timeout between candidates.
//
// Invariants:
//  1. No two states hold equal logs: of two, the one with more pending
//     writes is kept, since it allows everything the other does.
//  2. hash is the XOR of the states' hashes, which does not depend on
//     order, as a set's hash must not.
//  3. A candidates value is never modified once a step has returned it.
type candidates struct {
	states []logState
	hash   uint64
}

func newCandidates(s logState) *candidates {
	return &candidates{states: []logState{s}, hash: s.hash()}
}

// indexAbove is the set size past which lookups go through a hash index.
const indexAbove = 16

// candidateBuilder collects a set of states (candidates' invariants).
type candidateBuilder struct {
	c     candidates
	index map[uint64][]int // log hash → positions in c.states, once large
}

func (b *candidateBuilder) add(s logState) {
	if i := b.find(s.log); i >= 0 {
		if old := b.c.states[i]; s.pending > old.pending {
			b.c.hash ^= old.hash() ^ s.hash()
			b.c.states[i] = s
		}
		return
	}
	b.c.states = append(b.c.states, s)
	b.c.hash ^= s.hash()
	switch {
	case b.index != nil:
		h := s.log.Hash()
		b.index[h] = append(b.index[h], len(b.c.states)-1)
	case len(b.c.states) > indexAbove:
		b.index = make(map[uint64][]int, 2*len(b.c.states))
		for i, m := range b.c.states {
			b.index[m.log.Hash()] = append(b.index[m.log.Hash()], i)
		}
	}
}

// find returns the position of the state holding log l, or -1.
func (b *candidateBuilder) find(l spec.Log) int {
	if b.index == nil {
		for i, m := range b.c.states {
			if m.log.Equal(l) { // Equal rejects on the hash first
				return i
			}
		}
		return -1
	}
	for _, i := range b.index[l.Hash()] {
		if b.c.states[i].log.Equal(l) {
			return i
		}
	}
	return -1
}

// step applies f, which adds every successor of one state, to every
// candidate. It reports false when no candidate has a successor, or when ctx
// is done.
func (c *candidates) step(ctx context.Context, f func(s logState, add func(logState))) (*candidates, bool) {
	var b candidateBuilder
	for i, s := range c.states {
		if i&63 == 63 && ctx.Err() != nil {
			return nil, false
		}
		f(s, b.add)
	}
	if len(b.c.states) == 0 {
		return nil, false
	}
	return &b.c, true
}

func (c *candidates) equal(o *candidates) bool {
	if c == o {
		return true
	}
	if len(c.states) != len(o.states) || c.hash != o.hash {
		return false
	}
	b := candidateBuilder{c: *o}
	if len(o.states) > indexAbove {
		b.index = make(map[uint64][]int, 2*len(o.states))
		for i, m := range o.states {
			b.index[m.log.Hash()] = append(b.index[m.log.Hash()], i)
		}
	}
	for _, s := range c.states {
		if i := b.find(s.log); i < 0 || o.states[i].pending != s.pending {
			return false
		}
	}
	return true
}

// stateTail is how many of a log's last records a state description shows.
const stateTail = 4

// describeShown is how many candidates a state description lists.
const describeShown = 4

// describe renders the set for the picture: the state when it is known, else
// "one of {…}" with the first few candidates. "?" is a record no read
// returned; "+N pending" counts unread writes that may still take effect.
func (c *candidates) describe() string {
	one := func(s logState) string {
		d := s.log.Describe(stateTail)
		if s.pending > 0 {
			d += fmt.Sprintf(" +%d pending", s.pending)
		}
		return d
	}
	if len(c.states) == 1 {
		return one(c.states[0])
	}
	var parts []string
	for _, s := range c.states[:min(len(c.states), describeShown)] {
		parts = append(parts, one(s))
	}
	if more := len(c.states) - describeShown; more > 0 {
		parts = append(parts, fmt.Sprintf("%d more", more))
	}
	return "one of {" + strings.Join(parts, " | ") + "}"
}
