package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// This file judges consumer groups by their operations alone: who was
// assigned what, which generations members had learnt when a commit was
// accepted, and what offset-fetches returned (CheckAnomalies' group rules).

// opKey orders a client's operations: call, then ID.
type opKey struct {
	call int64
	id   int
}

func (a opKey) compare(b opKey) int {
	return cmp.Or(cmp.Compare(a.call, b.call), cmp.Compare(a.id, b.id))
}

// clientJoins returns, per client, its join operations in (call, ID)
// order: each is a rebalance that may have moved the client's position in
// every partition it reads. Nil when the history has no join.
func clientJoins(h []Op) map[int][]opKey {
	var joins map[int][]opKey
	for i := range h {
		if op := &h[i]; op.Kind == KindJoin {
			if joins == nil {
				joins = map[int][]opKey{}
			}
			joins[op.Client] = append(joins[op.Client], opKey{op.Call, op.ID})
		}
	}
	for _, js := range joins {
		if !slices.IsSortedFunc(js, opKey.compare) {
			slices.SortFunc(js, opKey.compare)
		}
	}
	return joins
}

// rejoined reports whether client joined its group after op prev was
// called and before op cur was.
func rejoined(joins map[int][]opKey, client int, prev, cur *Op) bool {
	js := joins[client]
	if len(js) == 0 {
		return false
	}
	after := opKey{prev.Call, prev.ID}
	k, _ := slices.BinarySearchFunc(js, after, opKey.compare)
	for k < len(js) && js[k].compare(after) <= 0 {
		k++
	}
	return k < len(js) && js[k].compare(opKey{cur.Call, cur.ID}) < 0
}

// groupCheck gathers a history's group operations, as indexes into h.
type groupCheck struct {
	h     []Op
	out   []Anomaly
	stale staleAllowed // replacedAnswers
}

// checkGroups applies the group rules (see CheckAnomalies) to h.
func checkGroups(h []Op) []Anomaly {
	c := groupCheck{h: h}
	var assignments, observed []int32
	commits := map[groupKey][]int32{} // ok and unknown commits
	fetches := map[groupKey][]int32{} // ok offset-fetches
	for i := range h {
		op := &h[i]
		switch op.Kind {
		case KindAssignment:
			// A SyncGroup answer comes once its generation is stored: it
			// is never lost. A JoinGroup answer's generation may be, by a
			// coordinator failover before the leader's SyncGroup (spec's
			// ObserveGeneration), so it fences nothing.
			if op.Outcome == OutcomeOK && op.Return >= 0 {
				assignments = append(assignments, int32(i))
				observed = append(observed, int32(i))
			}
		case KindCommit:
			if judgedOutcome(op) != OutcomeFail {
				k := groupKey{op.Group, op.TP()}
				commits[k] = append(commits[k], int32(i))
			}
		case KindOffsetFetch:
			if op.Outcome == OutcomeOK {
				k := groupKey{op.Group, op.TP()}
				fetches[k] = append(fetches[k], int32(i))
			}
		}
	}
	c.stale = replacedAnswers(h)
	c.doubleAssignments(assignments)
	c.staleCommits(observed, commits)
	for k, fs := range fetches {
		c.lostCommits(commits[k], fs)
	}
	return c.out
}

func (c *groupCheck) report(name string, at *Op, offset int64, ops []int32, format string, args ...any) {
	ids := make([]int, len(ops))
	for k, i := range ops {
		ids[k] = c.h[i].ID
	}
	c.out = append(c.out, Anomaly{
		Name: name, Group: at.Group, Topic: at.Topic, Partition: at.Partition,
		Offset: offset, Ops: ids, Detail: fmt.Sprintf(format, args...),
	})
}

// doubleAssignments finds partitions given to two members of one group in
// one generation.
func (c *groupCheck) doubleAssignments(assignments []int32) {
	type key struct {
		group string
		gen   int32
		tp    kafka.TopicPartition
	}
	// For each (group, generation, partition), the first assignment to each
	// member, in history order.
	members := map[key][]int32{}
	for _, i := range assignments {
		op := &c.h[i]
		k := key{op.Group, op.Generation, op.TP()}
		if !slices.ContainsFunc(members[k], func(j int32) bool { return c.h[j].Member == op.Member }) {
			members[k] = append(members[k], i)
		}
	}
	for k, ops := range members {
		if len(ops) < 2 {
			continue
		}
		slices.SortFunc(ops, func(a, b int32) int { return cmp.Compare(c.h[a].ID, c.h[b].ID) })
		to := make([]string, len(ops))
		for n, i := range ops {
			to[n] = fmt.Sprintf("%s (op %d)", c.h[i].Member, c.h[i].ID)
		}
		c.report(AnomalyDoubleAssignment, &c.h[ops[0]], -1, ops,
			"group %s gave %s to %s in generation %d", k.group, k.tp, joinAnd(to), k.gen)
	}
}

// staleCommits finds ok member commits of a generation older than one a
// member of the group had learnt stored (a SyncGroup answer) before the
// commit was called.
func (c *groupCheck) staleCommits(observed []int32, commits map[groupKey][]int32) {
	if len(observed) == 0 {
		return
	}
	byGroup := map[string][]int32{}
	for _, i := range observed {
		byGroup[c.h[i].Group] = append(byGroup[c.h[i].Group], i)
	}
	okCommits := map[string][]int32{}
	for _, cs := range commits {
		for _, i := range cs {
			if op := &c.h[i]; op.Outcome == OutcomeOK && op.Generation >= 0 && byGroup[op.Group] != nil {
				okCommits[op.Group] = append(okCommits[op.Group], i)
			}
		}
	}
	for group, cs := range okCommits {
		obs := byGroup[group]
		slices.SortFunc(obs, func(a, b int32) int {
			return cmp.Or(cmp.Compare(c.h[a].Return, c.h[b].Return), cmp.Compare(c.h[a].ID, c.h[b].ID))
		})
		slices.SortFunc(cs, func(a, b int32) int {
			return cmp.Or(cmp.Compare(c.h[a].Call, c.h[b].Call), cmp.Compare(c.h[a].ID, c.h[b].ID))
		})
		// Sweep: newest is the observation of the highest generation among
		// those that returned before the commit's call (the first to
		// return, of that generation).
		newest, next := int32(-1), 0
		for _, i := range cs {
			op := &c.h[i]
			for next < len(obs) && c.h[obs[next]].Return < op.Call {
				if newest < 0 || c.h[obs[next]].Generation > c.h[newest].Generation {
					newest = obs[next]
				}
				next++
			}
			if newest < 0 || c.h[newest].Generation <= op.Generation {
				continue
			}
			seen := &c.h[newest]
			c.report(AnomalyStaleGenerationCommit, op, op.Offset, []int32{newest, i},
				"group %s accepted op %d, %s's commit of offset %d in generation %d, called at %d, after %s learnt generation %d (op %d %s, returned at %d)",
				group, op.ID, op.Member, op.Offset, op.Generation, op.Call, seen.Member, seen.Generation, seen.ID, seen.Kind, seen.Return)
		}
	}
}

// lostCommits finds, in one group's partition, ok offset-fetches that
// returned less than the latest ok commit before them, where no commit of
// what they returned could have come after that commit.
func (c *groupCheck) lostCommits(commits, fetches []int32) {
	ret := func(i int32) int64 {
		if op := &c.h[i]; op.Outcome == OutcomeOK && op.Return >= 0 {
			return op.Return
		}
		return never // an unknown commit may take effect at any time
	}
	// ok commits by return; latest[k] is the one called latest among the
	// first k+1.
	var oks []int32
	// Per offset, the commits that wrote it, by call; lastRet[k] is the
	// latest return among the first k+1.
	type writers struct {
		ops     []int32
		lastRet []int64
	}
	byOffset := map[int64]*writers{}
	for _, i := range commits {
		if c.h[i].Outcome == OutcomeOK {
			oks = append(oks, i)
		}
		w := byOffset[c.h[i].Offset]
		if w == nil {
			w = &writers{}
			byOffset[c.h[i].Offset] = w
		}
		w.ops = append(w.ops, i)
	}
	if len(oks) == 0 {
		return
	}
	slices.SortFunc(oks, func(a, b int32) int { return cmp.Or(cmp.Compare(ret(a), ret(b)), cmp.Compare(c.h[a].ID, c.h[b].ID)) })
	latest := make([]int32, len(oks))
	for k, i := range oks {
		latest[k] = i
		if k > 0 && (opKey{c.h[latest[k-1]].Call, c.h[latest[k-1]].ID}).compare(opKey{c.h[i].Call, c.h[i].ID}) > 0 {
			latest[k] = latest[k-1]
		}
	}
	for _, w := range byOffset {
		slices.SortFunc(w.ops, func(a, b int32) int { return cmp.Compare(c.h[a].Call, c.h[b].Call) })
		w.lastRet = make([]int64, len(w.ops))
		for k, i := range w.ops {
			w.lastRet[k] = ret(i)
			if k > 0 {
				w.lastRet[k] = max(w.lastRet[k], w.lastRet[k-1])
			}
		}
	}
	for _, f := range fetches {
		fetch := &c.h[f]
		// The ok commits that returned before the fetch was called.
		n, _ := slices.BinarySearchFunc(oks, fetch.Call, func(i int32, t int64) int { return cmp.Compare(ret(i), t) })
		if n == 0 {
			continue
		}
		last := &c.h[latest[n-1]]
		if fetch.Offset >= last.Offset || c.stale.allows(int(f), fetch.Offset) {
			continue
		}
		// A commit of what the fetch returned, called before the fetch
		// returned, that may have taken effect after last.
		if w := byOffset[fetch.Offset]; w != nil {
			k, _ := slices.BinarySearchFunc(w.ops, fetch.Return, func(i int32, t int64) int {
				return cmp.Or(cmp.Compare(c.h[i].Call, t), -1) // first with Call > t
			})
			if k > 0 && w.lastRet[k-1] >= last.Call {
				continue
			}
		}
		got := fmt.Sprintf("offset %d", fetch.Offset)
		if fetch.Offset < 0 {
			got = "no committed offset"
		}
		c.report(AnomalyLostCommit, last, last.Offset, []int32{latest[n-1], f},
			"group %s: op %d committed offset %d (returned at %d), but op %d, called at %d, fetched %s, and no commit could have set it since",
			last.Group, last.ID, last.Offset, last.Return, fetch.ID, fetch.Call, got)
	}
}

// compareGroupAnomalies orders anomalies as CheckAnomalies returns them:
// by partition, then as compareAnomalies does, then by group.
func compareGroupAnomalies(a, b Anomaly) int {
	return cmp.Or(kafka.TopicPartition.Compare(a.TP(), b.TP()), compareAnomalies(a, b), strings.Compare(a.Group, b.Group))
}
