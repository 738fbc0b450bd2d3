package linearizability

// The porcupine model of consumer groups' committed offsets: spec/'s
// GroupOffset per (group, topic-partition), as a set of candidate states.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/spec"
)

// groupModel is the porcupine model of consumer groups' committed offsets:
// spec.GroupOffset of each of nparts (group, topic-partition) pairs,
// numbered as toGroupOperations numbers them from 0. A partition's state is
// the set of candidate states it may be in (groupStates), from no
// generation and no committed offset on.
func groupModel(nparts int) porcupine.Model {
	return porcupine.Model{
		Partition: byPartition(nparts, func(c *groupCall) int { return c.part }),
		Init:      func() any { return newGroupStates(spec.NewGroupOffset()) },
		Step: func(state, input, output any) (bool, any) {
			next, legal := state.(*groupStates).step(input.(*groupCall), output.(*groupReturn))
			return legal, next
		},
		Equal:                     func(a, b any) bool { return a.(*groupStates).equal(b.(*groupStates)) },
		Hash:                      func(s any) uint64 { return s.(*groupStates).hash },
		DescribeOperation:         func(in, out any) string { return describeGroupOperation(in.(*groupCall), out.(*groupReturn)) },
		DescribeState:             func(s any) string { return s.(*groupStates).describe() },
		DescribeOperationMetadata: describeMetadata,
	}
}

// groupCall is a group operation's input, as porcupine's Operation.Input.
type groupCall struct {
	part  int    // index into the group model's partitions (toGroupOperations)
	label string // "group g t-0: " in descriptions
	kind  Kind
	// generation and member: what a join or assignment learnt.
	generation int32
	member     string
	commit     spec.Commit // commit
	// pending: a commit of unknown outcome, kept as a pending commit
	// (toGroupOperations, 1).
	pending bool
	// pendingBefore counts the pending commits of the partition called
	// before this operation (toGroupOperations, 1).
	pendingBefore int
	// stale: an offset-fetch a replaced coordinator may have answered, the
	// earlier offsets it may return besides the current one
	// (toGroupOperations, 6).
	stale []int64
}

// groupReturn is a group operation's output, as porcupine's Operation.Output.
type groupReturn struct {
	outcome Outcome
	offset  int64 // offset-fetch: the committed offset returned
}

// groupKey names one group's committed offset of one partition.
type groupKey struct {
	group string
	tp    kafka.TopicPartition
}

// toGroupOperations turns the group operations of a history into porcupine
// operations, one porcupine partition per (group, topic-partition) that a
// commit, an offset-fetch or an assignment names, numbered from first on,
// sorted by group, topic and partition; it returns the partitions.
//
// What each becomes:
//
//  1. A commit is spec.CommitOffset. A failed one is kept, a no-op, so
//     that it shows in the picture. One whose outcome the client could not
//     learn (unknown, still open, or failed with a code that leaves it
//     unknown: judgedOutcome) may take effect at any time after its
//     call, or never (spec.CommitOffset's rule 4); it is a pending commit,
//     as unread writes are pending in the log model (toOperations, 4 and
//     5): its Return is set past every other operation's, linearizing it
//     only adds it to the state's pending commits, and the model refuses
//     an operation while fewer pending commits are counted than were
//     called before it. Before each other operation, one pending commit
//     may take effect (as an acknowledged one would). That is exact:
//     taking effect just before the next operation is as good as any
//     earlier instant after the last one; of two taking effect before one
//     operation the first changes nothing the second does not overwrite,
//     except that it is used up and may have moved the generation
//     forward, both of which only allow less; and a pending commit of a
//     generation older than the stored one can never take effect, so it
//     is dropped. Porcupine then meets the same (operations linearized,
//     state) pair whichever order it tried, instead of every subset of
//     the unknown commits at every step.
//
//  2. An ok offset-fetch is spec.FetchOffset; others observed nothing.
//
//  3. An ok join or assignment is spec.ObserveGeneration (an assignment, a
//     SyncGroup answer, showing the generation stored). The generation is
//     the group's, not one partition's, so the operation is given to every
//     partition of its group: each partition's search sees the generations
//     members learnt. A join or assignment that did not end ok observed
//     nothing.
//
//  5. A commit of unknown outcome whose offset no ok offset-fetch of its
//     (group, partition) returned is left out (dropUnobservedPending).
//
//  4. Of the ops of 3 that observed one generation G of a group, only two
//     are kept: the one that returned first and the one called last. That
//     is exact: every operation that needs G current somewhere, or needs a
//     newer or older generation, is judged the same. Operations before all
//     of them (an older generation's) must take effect before the earliest
//     of their instants, which can be as late as the first return; those
//     after (a newer generation's) after the latest, which can be as early
//     as the last call; and the others can take effect anywhere between.
//     Without it a group of m members and p partitions puts m+p operations
//     per generation into each of its p partitions.
//
//  6. An ok offset-fetch that a replaced coordinator may have answered
//     (replacedAnswers) may also return what the committed offset was
//     earlier: none, or what a commit that may have taken effect, called
//     before it returned, wrote.
//
// The generation an ok commit shows current is judged in its own
// partition only; other partitions learn generations from 3.
func toGroupOperations(h []Op, first int) (ops []porcupine.Operation, parts []partInfo) {
	return groupOperations(h, first, true)
}

// groupOperations is toGroupOperations, with its rule 4 when reduce is set.
func groupOperations(h []Op, first int, reduce bool) (ops []porcupine.Operation, parts []partInfo) {
	end := int64(0)
	byKey := map[groupKey][]int{} // history indexes of commits and offset-fetches
	var generations []int         // ok joins and assignments
	for i := range h {
		op := &h[i]
		end = max(end, op.Call, op.Return)
		switch op.Kind {
		case KindCommit:
			byKey[groupKey{op.Group, op.TP()}] = append(byKey[groupKey{op.Group, op.TP()}], i)
		case KindOffsetFetch:
			if op.Outcome == OutcomeOK {
				byKey[groupKey{op.Group, op.TP()}] = append(byKey[groupKey{op.Group, op.TP()}], i)
			}
		case KindAssignment, KindJoin:
			if op.Outcome == OutcomeOK && op.Return >= 0 {
				generations = append(generations, i)
				if op.Kind == KindAssignment {
					k := groupKey{op.Group, op.TP()}
					if _, ok := byKey[k]; !ok {
						byKey[k] = nil
					}
				}
			}
		}
	}
	if len(byKey) == 0 {
		return nil, nil
	}
	end++
	keys := make([]groupKey, 0, len(byKey))
	perGroup := map[string][]groupKey{}
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b groupKey) int {
		return cmp.Or(strings.Compare(a.group, b.group), kafka.TopicPartition.Compare(a.tp, b.tp))
	})
	part := map[groupKey]int{}
	for i, k := range keys {
		part[k] = first + i
		perGroup[k.group] = append(perGroup[k.group], k)
	}
	if reduce {
		generations = keptObservations(h, generations)
	}
	for _, i := range generations {
		for _, k := range perGroup[h[i].Group] {
			byKey[k] = append(byKey[k], i)
		}
	}
	rows := clientRows(h)
	stale := replacedAnswers(h)
	parts = make([]partInfo, len(keys))
	for n, k := range keys {
		idx := byKey[k]
		slices.Sort(idx)
		if reduce {
			idx = dropUnobservedPending(h, idx)
		}
		label := fmt.Sprintf("group %s %s: ", k.group, k.tp)
		for _, i := range idx {
			op := &h[i]
			call := &groupCall{part: part[k], label: label, kind: op.Kind, generation: op.Generation, member: op.Member, stale: stale[i]}
			returned, outcome := op.Return, judgedOutcome(op)
			if op.Kind == KindCommit {
				call.commit = spec.Commit{Generation: op.Generation, Member: op.Member, Offset: op.Offset, Outcome: specOutcome(outcome)}
				if outcome == OutcomeUnknown || op.Return < 0 {
					returned = end
					call.pending = true
				}
			}
			ops = append(ops, porcupine.Operation{
				ClientId: rows[op.Client],
				Input:    call,
				Call:     op.Call,
				Output:   &groupReturn{outcome: outcome, offset: op.Offset},
				Return:   returned,
				Metadata: opMeta{id: op.ID, client: op.Client, tp: k.tp, group: k.group},
			})
		}
		var pendingCalls []int64
		for _, o := range ops[len(ops)-len(idx):] {
			if o.Input.(*groupCall).pending {
				pendingCalls = append(pendingCalls, o.Call)
			}
		}
		slices.Sort(pendingCalls)
		for _, o := range ops[len(ops)-len(idx):] {
			// Calls are closed intervals: an operation called at the same
			// instant as a pending commit is concurrent with it.
			o.Input.(*groupCall).pendingBefore, _ = slices.BinarySearch(pendingCalls, o.Call)
		}
		parts[n] = partInfo{group: k.group, tp: k.tp, ops: len(idx)}
	}
	return ops, parts
}

// dropUnobservedPending is rule 5 of toGroupOperations: a commit whose
// outcome is unknown, and whose offset no ok offset-fetch of its (group,
// partition) returned, is left out. That is exact: it may not have taken
// effect, and had it, its one observable effect, the committed offset,
// went unseen (a fetch after it would have returned its offset until a
// later commit overwrote it); the generation it could have moved forward
// only allows less. Coordinator failovers leave dozens of timed-out
// commits, and each pending one multiplies the search.
func dropUnobservedPending(h []Op, idx []int) []int {
	seen := map[int64]bool{}
	for _, i := range idx {
		if op := &h[i]; op.Kind == KindOffsetFetch && op.Outcome == OutcomeOK {
			seen[op.Offset] = true
		}
	}
	return slices.DeleteFunc(idx, func(i int) bool {
		op := &h[i]
		return op.Kind == KindCommit && (judgedOutcome(op) == OutcomeUnknown || op.Return < 0) && !seen[op.Offset]
	})
}

// keptObservations returns, of the generation observations obs (indexes
// into h), the ones toGroupOperations keeps (its rule 4).
func keptObservations(h []Op, obs []int) []int {
	type groupGen struct {
		group  string
		gen    int32
		stored bool // an assignment: the generation stored, not only decided
	}
	type bounds struct{ first, last int }
	at := map[groupGen]*bounds{}
	var order []groupGen
	for _, i := range obs {
		op := &h[i]
		k := groupGen{op.Group, op.Generation, op.Kind == KindAssignment}
		b := at[k]
		if b == nil {
			at[k] = &bounds{i, i}
			order = append(order, k)
			continue
		}
		if f := &h[b.first]; op.Return < f.Return || op.Return == f.Return && op.ID < f.ID {
			b.first = i
		}
		if l := &h[b.last]; op.Call > l.Call || op.Call == l.Call && op.ID > l.ID {
			b.last = i
		}
	}
	kept := make([]int, 0, 2*len(order))
	for _, k := range order {
		b := at[k]
		kept = append(kept, b.first)
		if b.last != b.first {
			kept = append(kept, b.last)
		}
	}
	return kept
}

// groupState is one candidate state of a group's partition: the spec's
// state, the pending commits that may still take effect, and how many
// pending commits were counted in all (toGroupOperations, 1).
//
// Invariants:
//  1. pending is sorted (compareCommits), and holds no member commit of a
//     generation older than off.Generation.
//  2. A groupState's pending slice is never modified once the state is in
//     a set: steps copy it.
type groupState struct {
	off     spec.GroupOffset
	pending []spec.Commit
	counted int
}

func compareCommits(a, b spec.Commit) int {
	return cmp.Or(cmp.Compare(a.Generation, b.Generation), cmp.Compare(a.Offset, b.Offset), strings.Compare(a.Member, b.Member))
}

func (s groupState) equal(o groupState) bool {
	return s.off == o.off && s.counted == o.counted &&
		slices.EqualFunc(s.pending, o.pending, func(a, b spec.Commit) bool { return compareCommits(a, b) == 0 })
}

func (s groupState) hash() uint64 {
	x := uint64(s.off.Offset)*0x9e3779b97f4a7c15 ^ uint64(uint32(s.off.Generation))*0xbf58476d1ce4e5b9 ^
		uint64(s.counted)*0x94d049bb133111eb
	for _, c := range s.pending {
		x = (x ^ uint64(c.Offset)) * 0x100000001b3
		x = (x ^ uint64(uint32(c.Generation))) * 0x100000001b3
	}
	x ^= x >> 31
	return x * 0x94d049bb133111eb
}

// settle drops the pending commits that can no longer take effect: member
// commits of a generation older than the stored one (invariant 1).
// Pending commits sort by generation, simple ones (NoGeneration) first.
func (s groupState) settle() groupState {
	n := 0
	for n < len(s.pending) && s.pending[n].Simple() {
		n++
	}
	k := n
	for k < len(s.pending) && s.pending[k].Generation < s.off.Generation {
		k++
	}
	if k > n {
		s.pending = slices.Concat(s.pending[:n:n], s.pending[k:])
	}
	return s
}

// groupStates is the set of states one group's committed offset of one
// partition may be in once the operations linearized so far have taken
// effect: the power-set construction over spec.CommitOffset's
// nondeterminism (unknown commits).
//
// Invariants:
//  1. states holds no two equal states.
//  2. hash is the XOR of the states' hashes, independent of their order.
//  3. A groupStates value is never modified once a step has returned it.
type groupStates struct {
	states []groupState
	hash   uint64
}

func newGroupStates(off spec.GroupOffset) *groupStates {
	s := groupState{off: off}
	return &groupStates{states: []groupState{s}, hash: s.hash()}
}

func (g *groupStates) add(s groupState) {
	s = s.settle()
	if slices.ContainsFunc(g.states, s.equal) {
		return
	}
	g.states = append(g.states, s)
	g.hash ^= s.hash()
}

// step applies one operation to every candidate; false when none has a
// successor.
func (g *groupStates) step(call *groupCall, ret *groupReturn) (*groupStates, bool) {
	next := &groupStates{}
	for _, s := range g.states {
		if s.counted < call.pendingBefore {
			continue // count the pending commits called before first
		}
		if call.pending {
			s.pending = slices.Insert(slices.Clone(s.pending), sortedAt(s.pending, call.commit), call.commit)
			s.counted++
			next.add(s)
			continue
		}
		stepGroup(s, call, ret, next.add)
		// Or one pending commit takes effect first.
		for k, c := range s.pending {
			if k > 0 && compareCommits(c, s.pending[k-1]) == 0 {
				continue // the same commit twice: one try is enough
			}
			c.Outcome = spec.Acknowledged
			for _, off := range spec.CommitOffset(s.off, c) {
				t := groupState{off: off, pending: slices.Delete(slices.Clone(s.pending), k, k+1), counted: s.counted}
				stepGroup(t, call, ret, next.add)
			}
		}
	}
	if len(next.states) == 0 {
		return nil, false
	}
	return next, true
}

func sortedAt(pending []spec.Commit, c spec.Commit) int {
	k, _ := slices.BinarySearchFunc(pending, c, compareCommits)
	return k
}

// stepGroup adds every state that may follow s once the operation (not a
// pending commit) has taken effect.
func stepGroup(s groupState, call *groupCall, ret *groupReturn, add func(groupState)) {
	switch call.kind {
	case KindJoin, KindAssignment:
		if off, ok := spec.ObserveGeneration(s.off, call.generation, call.kind == KindAssignment); ok {
			s.off = off
			add(s)
		}
	case KindCommit:
		for _, off := range spec.CommitOffset(s.off, call.commit) {
			t := s
			t.off = off
			add(t)
		}
	case KindOffsetFetch:
		if spec.FetchOffset(s.off, ret.offset) {
			add(s)
		} else if _, ok := slices.BinarySearch(call.stale, ret.offset); ok {
			add(s) // a replaced coordinator's earlier state (rule 6)
		}
	}
}

func (g *groupStates) equal(o *groupStates) bool {
	if g == o {
		return true
	}
	if len(g.states) != len(o.states) || g.hash != o.hash {
		return false
	}
	for _, s := range g.states {
		if !slices.ContainsFunc(o.states, s.equal) {
			return false
		}
	}
	return true
}

// describe renders the set for the picture: "generation 3, committed 10",
// or "one of {…}"; "+N pending" counts unknown commits that may still take
// effect.
func (g *groupStates) describe() string {
	one := func(s groupState) string {
		gen, off := fmt.Sprint(s.off.Generation), fmt.Sprint(s.off.Offset)
		if s.off.Generation == spec.NoGeneration {
			gen = "none"
		}
		if s.off.Offset == spec.NoOffset {
			off = "none"
		}
		d := "generation " + gen + ", committed " + off
		if len(s.pending) > 0 {
			d += fmt.Sprintf(" +%d pending", len(s.pending))
		}
		return d
	}
	if len(g.states) == 1 {
		return one(g.states[0])
	}
	var parts []string
	for _, s := range g.states[:min(len(g.states), describeShown)] {
		parts = append(parts, one(s))
	}
	if more := len(g.states) - describeShown; more > 0 {
		parts = append(parts, fmt.Sprintf("%d more", more))
	}
	return "one of {" + strings.Join(parts, " | ") + "}"
}

// describeGroupOperation renders a group operation for the picture, e.g.
// "group g t-0: commit 10 gen 3 m1 → ok" or "group g t-0: offset-fetch → 10".
func describeGroupOperation(call *groupCall, ret *groupReturn) string {
	var b strings.Builder
	b.WriteString(call.label)
	switch call.kind {
	case KindJoin:
		fmt.Fprintf(&b, "join gen %d as %s", call.generation, call.member)
	case KindAssignment:
		fmt.Fprintf(&b, "assignment gen %d to %s", call.generation, call.member)
	case KindCommit:
		if call.commit.Simple() {
			fmt.Fprintf(&b, "commit %d (simple) → %s", call.commit.Offset, ret.outcome)
		} else {
			fmt.Fprintf(&b, "commit %d gen %d %s → %s", call.commit.Offset, call.commit.Generation, call.commit.Member, ret.outcome)
		}
	case KindOffsetFetch:
		fmt.Fprintf(&b, "offset-fetch → %d", ret.offset)
		if call.stale != nil {
			b.WriteString(" (a replaced coordinator's answer may be earlier)")
		}
	}
	return b.String()
}
