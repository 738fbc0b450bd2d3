package linearizability

// The porcupine model of consumer groups' committed offsets: spec/'s
// GroupOffset per (group, topic-partition), as a set of candidate states.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/watermarkhq/watermark/spec"
)

// groupCall is a group operation's input, as porcupine's Operation.Input.
type groupCall struct {
	part  int    // index into all partitions, log partitions first
	label string // "group g t-0: " in descriptions
	kind  Kind
	// generation and member: what a join or assignment learnt.
	generation int32
	member     string
	commit     spec.Commit // commit
}

func (c *groupCall) partition() int { return c.part }

// groupReturn is a group operation's output, as porcupine's Operation.Output.
type groupReturn struct {
	outcome Outcome
	offset  int64 // offset-fetch: the committed offset returned
}

// groupKey names one group's committed offset of one partition.
type groupKey struct {
	group string
	tp    TopicPartition
}

// toGroupOperations turns the group operations of a history into porcupine
// operations, one porcupine partition per (group, topic-partition) that a
// commit, an offset-fetch or an assignment names, numbered from first on,
// sorted by group, topic and partition; it returns the partitions.
//
// What each becomes:
//
//  1. A commit is spec.CommitOffset. One whose outcome the client could not
//     learn (unknown, or still open) may take effect at any time after its
//     call: its Return is set past every other operation's, as produces'
//     are (toOperations, 1). A failed one is kept, a no-op, so that it shows
//     in the picture.
//  2. An ok offset-fetch is spec.FetchOffset; others observed nothing.
//  3. An ok join or assignment is spec.ObserveGeneration. The generation is
//     the group's, not one partition's, so the operation is given to every
//     partition of its group: each partition's search sees every generation
//     any member learnt. A join or assignment that did not end ok observed
//     nothing.
func toGroupOperations(h []Op, first int) (ops []porcupine.Operation, parts []partInfo) {
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
		return cmp.Or(strings.Compare(a.group, b.group), compareTP(a.tp, b.tp))
	})
	part := map[groupKey]int{}
	for i, k := range keys {
		part[k] = first + i
		perGroup[k.group] = append(perGroup[k.group], k)
	}
	for _, i := range generations {
		for _, k := range perGroup[h[i].Group] {
			byKey[k] = append(byKey[k], i)
		}
	}
	rows := clientRows(h)
	parts = make([]partInfo, len(keys))
	for n, k := range keys {
		idx := byKey[k]
		slices.Sort(idx)
		label := fmt.Sprintf("group %s %s: ", k.group, k.tp)
		for _, i := range idx {
			op := &h[i]
			call := &groupCall{part: part[k], label: label, kind: op.Kind, generation: op.Generation, member: op.Member}
			returned := op.Return
			if op.Kind == KindCommit {
				call.commit = spec.Commit{Generation: op.Generation, Member: op.Member, Offset: op.Offset, Outcome: specOutcome(op.Outcome)}
				if op.Outcome == OutcomeUnknown || op.Return < 0 {
					returned = end
				}
			}
			ops = append(ops, porcupine.Operation{
				ClientId: rows[op.Client],
				Input:    call,
				Call:     op.Call,
				Output:   &groupReturn{outcome: op.Outcome, offset: op.Offset},
				Return:   returned,
				Metadata: logMeta{id: op.ID, client: op.Client, tp: k.tp, group: k.group},
			})
		}
		parts[n] = partInfo{group: k.group, tp: k.tp, ops: len(idx)}
	}
	return ops, parts
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
	states []spec.GroupOffset
	hash   uint64
}

func hashGroupOffset(s spec.GroupOffset) uint64 {
	x := uint64(s.Offset)*0x9e3779b97f4a7c15 ^ uint64(uint32(s.Generation))*0xbf58476d1ce4e5b9
	x ^= x >> 31
	return x * 0x94d049bb133111eb
}

func newGroupStates(s spec.GroupOffset) *groupStates {
	return &groupStates{states: []spec.GroupOffset{s}, hash: hashGroupOffset(s)}
}

func (g *groupStates) add(s spec.GroupOffset) {
	if slices.Contains(g.states, s) {
		return
	}
	g.states = append(g.states, s)
	g.hash ^= hashGroupOffset(s)
}

// step applies one operation to every candidate; false when none has a
// successor.
func (g *groupStates) step(call *groupCall, ret *groupReturn) (*groupStates, bool) {
	next := &groupStates{}
	for _, s := range g.states {
		switch call.kind {
		case KindJoin, KindAssignment:
			if n, ok := spec.ObserveGeneration(s, call.generation); ok {
				next.add(n)
			}
		case KindCommit:
			for _, n := range spec.CommitOffset(s, call.commit) {
				next.add(n)
			}
		case KindOffsetFetch:
			if spec.FetchOffset(s, ret.offset) {
				next.add(s)
			}
		}
	}
	if len(next.states) == 0 {
		return nil, false
	}
	return next, true
}

func (g *groupStates) equal(o *groupStates) bool {
	if g == o {
		return true
	}
	if len(g.states) != len(o.states) || g.hash != o.hash {
		return false
	}
	for _, s := range g.states {
		if !slices.Contains(o.states, s) {
			return false
		}
	}
	return true
}

// describe renders the set for the picture: "generation 3, committed 10",
// or "one of {…}".
func (g *groupStates) describe() string {
	one := func(s spec.GroupOffset) string {
		gen, off := fmt.Sprint(s.Generation), fmt.Sprint(s.Offset)
		if s.Generation == spec.NoGeneration {
			gen = "none"
		}
		if s.Offset == spec.NoOffset {
			off = "none"
		}
		return "generation " + gen + ", committed " + off
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
	}
	return b.String()
}
