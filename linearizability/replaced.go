package linearizability

// Answers of a replaced coordinator: an offset-fetch that a deposed but
// unaware coordinator answered from the state it had when it was replaced
// (SEMANTICS, "Answers from a replaced coordinator").

import (
	"cmp"
	"slices"
)

// staleAllowed maps each offset-fetch (an index into h) that a replaced
// coordinator may have answered to the offsets it may return besides the
// current one: none (-1) and every offset a commit of its group and
// partition that may have taken effect (ok or unknown) wrote, called
// before the fetch returned. Sorted.
type staleAllowed map[int][]int64

// replacedAnswers finds the ok offset-fetches of h that a replaced
// coordinator may have answered. An ok offset-fetch F of group G, answered
// by broker B, is one when the history shows all of:
//
//  1. B had been G's coordinator: B answered an ok join, assignment,
//     commit or offset-fetch of G that returned before F was called;
//  2. B had been replaced before F was answered: after the last of those
//     returned and before F returned, another broker answered an ok one;
//  3. B was not the coordinator after F: another broker answers an ok
//     group operation of G called at or after F returned, and B answers
//     no ok commit or assignment of G (the writes a coordinator must
//     replicate, which a replaced one cannot) called from F's return to
//     that operation's call.
//
// Kafka 4.1's coordinator answers OffsetFetch from its loaded state at its
// last committed offset (CoordinatorRuntime.scheduleReadOperation) until
// it learns of the new leader of its __consumer_offsets partition and
// unloads the group; a broker paused past its replacement answers in that
// window with the offsets of when it was replaced. Operations without a
// broker (Broker 0: histories that do not record it) are never any of B's
// or another's, so such histories get no allowance.
func replacedAnswers(h []Op) staleAllowed {
	byGroup := map[string][]int{} // ok group ops with a broker, by return
	for i := range h {
		op := &h[i]
		if op.Broker <= 0 || op.Return < 0 || op.Group == "" {
			continue
		}
		switch op.Kind {
		case KindJoin, KindAssignment, KindOffsetFetch, KindCommit:
			if op.Outcome == OutcomeOK {
				byGroup[op.Group] = append(byGroup[op.Group], i)
			}
		}
	}
	var out staleAllowed
	for _, ops := range byGroup {
		slices.SortFunc(ops, func(a, b int) int { return cmp.Or(cmp.Compare(h[a].Return, h[b].Return), cmp.Compare(a, b)) })
		for _, f := range ops {
			if h[f].Kind == KindOffsetFetch && replaced(h, ops, f) {
				if out == nil {
					out = staleAllowed{}
				}
				out[f] = earlierOffsets(h, f)
			}
		}
	}
	return out
}

// replaced reports whether rules 1 to 3 of replacedAnswers hold for the
// offset-fetch f; ops are its group's ok operations with a broker, by
// return.
func replaced(h []Op, ops []int, f int) bool {
	fetch := &h[f]
	b := fetch.Broker
	lastOwn, own := int64(0), false // rule 1: B's last answer before F
	for _, i := range ops {
		if op := &h[i]; op.Broker == b && op.Return < fetch.Call {
			lastOwn, own = op.Return, true
		}
	}
	if !own {
		return false
	}
	away := false // rule 2
	for _, i := range ops {
		if op := &h[i]; op.Broker != b && op.Return > lastOwn && op.Return < fetch.Return {
			away = true
			break
		}
	}
	if !away {
		return false
	}
	next := int64(-1) // rule 3: the first call of another's answer after F
	for _, i := range ops {
		if op := &h[i]; op.Broker != b && op.Call >= fetch.Return && (next < 0 || op.Call < next) {
			next = op.Call
		}
	}
	if next < 0 {
		return false
	}
	for _, i := range ops {
		op := &h[i]
		if op.Broker == b && (op.Kind == KindCommit || op.Kind == KindAssignment) && op.Call >= fetch.Return && op.Call <= next {
			return false
		}
	}
	return true
}

// earlierOffsets is what the replaced coordinator's answer f may return:
// none, or what a commit of its group and partition that may have taken
// effect wrote, called before f returned.
func earlierOffsets(h []Op, f int) []int64 {
	fetch := &h[f]
	out := []int64{-1}
	for i := range h {
		op := &h[i]
		if op.Kind == KindCommit && op.Group == fetch.Group && op.TP() == fetch.TP() &&
			op.Call <= fetch.Return && judgedOutcome(op) != OutcomeFail {
			out = append(out, op.Offset)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// allows reports whether the offset-fetch f (an index into h) may have
// returned offset as a replaced coordinator's answer.
func (s staleAllowed) allows(f int, offset int64) bool {
	_, ok := slices.BinarySearch(s[f], offset)
	return ok
}
