package linearizability

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/spec"
)

// This file checks a history for linearizability against spec's partition
// log, one topic-partition at a time, with porcupine: is there one order of
// the operations, each placed between its call and its return, in which the
// committed log of spec/ allows every observation? The groups' committed
// offsets are checked alongside, with a model of their own
// (porcupine_groups.go).

// Verdict is the outcome of a linearizability check.
type Verdict string

// Verdicts.
const (
	// VerdictOK: a linearization was found for every partition.
	VerdictOK Verdict = "ok"
	// VerdictIllegal: some partition has no linearization; the history
	// breaks the spec.
	VerdictIllegal Verdict = "illegal"
	// VerdictUnknown: the time ran out before the search finished. This is
	// not a pass.
	VerdictUnknown Verdict = "unknown"
)

// PartitionVerdict is the verdict on one topic-partition.
type PartitionVerdict struct {
	// Group is the consumer group whose committed offsets of TP were
	// checked, "" for TP's log.
	Group string
	TP    kafka.TopicPartition
	// Ops counts the operations checked: assigns and failed reads are left
	// out; a group's partition counts the joins and assignments it was
	// given (toGroupOperations, 3 and 4).
	Ops     int
	Verdict Verdict
}

// LinearizabilityResult is the verdict on a history, with what
// WriteVisualization needs to draw it.
type LinearizabilityResult struct {
	Verdict Verdict
	// Partitions holds one verdict per topic-partition, sorted by topic then
	// partition, then one per (group, topic-partition) whose committed
	// offsets were checked, sorted by group, topic and partition. The first
	// are the order of porcupine's partitions in LogInfo, the others in
	// GroupInfo.
	Partitions []PartitionVerdict
	Elapsed    time.Duration
	// LogInfo and GroupInfo are porcupine's records of its two searches, of
	// the partition logs (logModel) and of the groups' committed offsets
	// (groupModel): the (partial) linearizations found, per partition.
	LogInfo, GroupInfo porcupine.LinearizationInfo

	logModel, groupModel porcupine.Model
}

// CheckLinearizability checks each topic-partition of h against the spec's
// partition log, and each (group, topic-partition) against the spec's
// committed offsets (spec.CommitOffset; see toGroupOperations). A timeout
// of 0 means no limit; when the timeout runs out before every partition is
// decided the verdict is VerdictUnknown (or VerdictIllegal if a violation
// was already found), never VerdictOK.
//
// h should satisfy Validate: above all, produced values must be unique.
// What is checked: produces (a definite failure as a no-op, so that it shows
// in the picture), fetches and list-offsets that succeeded; commits (a
// definite failure as a no-op), and joins, assignments and offset-fetches
// that succeeded. Assigns, and reads that failed or timed out, observed
// nothing and are left out.
//
// The logs and the groups share no state, so each has a porcupine model of
// its own, and porcupine runs once per model, on that model's operations;
// the two searches run at the same time, each with the whole timeout. The
// verdict is VerdictIllegal if either search found a violation, else
// VerdictUnknown if either ran out of time, else VerdictOK.
func CheckLinearizability(h []Op, timeout time.Duration) LinearizabilityResult {
	ops, parts, unread := toOperations(h)
	gops, gparts := toGroupOperations(h, 0)
	lm, gm := logModel(len(parts), unread), groupModel(len(gparts))
	start := time.Now()
	var groupRes porcupine.CheckResult
	var groupInfo porcupine.LinearizationInfo
	var wg sync.WaitGroup
	wg.Go(func() { groupRes, groupInfo = porcupine.CheckOperationsVerbose(gm, gops, timeout) })
	logRes, logInfo := porcupine.CheckOperationsVerbose(lm, ops, timeout)
	wg.Wait()
	out := LinearizabilityResult{
		Verdict:    mergeVerdicts(logRes, groupRes),
		Elapsed:    time.Since(start),
		LogInfo:    logInfo,
		GroupInfo:  groupInfo,
		logModel:   lm,
		groupModel: gm,
	}

	// porcupine gives one verdict per search; a partition is decided ok
	// when its longest linearization holds all its operations. If the
	// search may have been cut short, an undecided partition is unknown,
	// unless it is the only one left to blame for an illegal verdict.
	timedOut := timeout > 0 && out.Elapsed >= timeout
	partials := slices.Concat(out.LogInfo.PartialLinearizations(), out.GroupInfo.PartialLinearizations())
	var undecided []int
	for i, p := range slices.Concat(parts, gparts) {
		pv := PartitionVerdict{Group: p.group, TP: p.tp, Ops: p.ops, Verdict: VerdictOK}
		if out.Verdict != VerdictOK && !completeLinearization(partials, i, p.ops) {
			pv.Verdict = VerdictUnknown
			if out.Verdict == VerdictIllegal && !timedOut {
				pv.Verdict = VerdictIllegal
			}
			undecided = append(undecided, i)
		}
		out.Partitions = append(out.Partitions, pv)
	}
	if out.Verdict == VerdictIllegal && len(undecided) == 1 {
		out.Partitions[undecided[0]].Verdict = VerdictIllegal
	}
	return out
}

// mergeVerdicts is the verdict on a history from porcupine's results of
// its searches: illegal if any is, else unknown if any search ran out of
// time, else ok.
func mergeVerdicts(results ...porcupine.CheckResult) Verdict {
	v := VerdictOK
	for _, r := range results {
		switch r {
		case porcupine.Ok:
		case porcupine.Illegal:
			return VerdictIllegal
		default:
			v = VerdictUnknown
		}
	}
	return v
}

func completeLinearization(partials [][][]int, part, ops int) bool {
	if part >= len(partials) {
		return false
	}
	for _, lin := range partials[part] {
		if len(lin) == ops {
			return true
		}
	}
	return false
}

// logCall is an operation's input, as porcupine's Operation.Input.
type logCall struct {
	part  int    // index into the sorted partitions
	tp    string // "topic-partition: " in descriptions when there are several
	kind  Kind
	write spec.Write // produce, as the model sees it (see toOperations)
	value string     // produce: the value written, for descriptions
	read  bool       // produce: some fetch of the partition returned the value
	// pending: a produce the model keeps as a pending write (toOperations, 4).
	pending bool
	// pendingBefore counts the pending writes of the partition called
	// before this operation (toOperations, 5).
	pendingBefore int
	from          int64 // fetch: the offset asked for
}

// logReturn is an operation's output, as porcupine's Operation.Output.
type logReturn struct {
	outcome  Outcome
	offset   int64 // produce: where it landed; list-offsets: the answer
	records  []spec.Record
	hw       int64
	logStart int64 // fetch: the log start offset the answer reported
}

// opMeta ties a porcupine operation back to the history.
type opMeta struct {
	id, client int
	tp         kafka.TopicPartition
	group      string // "" for a log operation
}

type partInfo struct {
	group string // "" for a log partition
	tp    kafka.TopicPartition
	ops   int
}

// unreadValue stands for the value of any produce no fetch of its
// partition returned (see toOperations); toOperations makes it unlike every
// value a fetch returned.
const unreadValue = "?"

// toOperations turns a history into porcupine operations, grouped by
// topic-partition in sorted order, and returns the partitions.
//
// The checker judges with spec/'s rules, but decides when a write takes
// effect in ways that keep the search exact and tractable:
//
//  1. Operations whose outcome the client could not learn (unknown, open, and
//     acks=0 sends, which get no answer) may take effect at any time after
//     their call: their Return is set past every other operation's, the
//     standard way to tell porcupine so. spec.Produce lets them take effect
//     or not.
//  2. A produce whose value some fetch of its partition returned did take
//     effect, at the offset it was read at: values are unique, so no other
//     operation can put it there. Its "did not take effect" branch is
//     dropped; its offset, when the client did not learn one, is the first
//     one it was read at; and it returns, at the latest, when the first read
//     that returned it did. An unknown write that was read can then take
//     effect only when the log reaches that offset, before that read, not
//     anywhere after its call.
//  3. A produce whose value no fetch returned is written to the model as
//     unreadValue, the same for all of them. No fetch can match that value
//     (it is chosen unlike every returned value), just as none could match
//     the real one, and spec.Produce looks at offsets, never at values, so
//     every step is judged as before; but candidate logs that differ only in
//     which unread write stands where now compare equal.
//  4. An unread produce with no offset that may or may not have taken effect
//     (unknown outcome, acks=0) is a pending write. Linearizing it only
//     counts it in the state (logState.pending); later steps let pending
//     writes take effect, as unread records at the log's end, when they need
//     the log longer than it is: a write at a known offset past the end, an
//     HW past the end. That is exact: by 3 the only thing such a write
//     changes that any step looks at is the log's length, and these are the
//     steps that need it longer; taking effect just when needed is as good as
//     any earlier instant, and never taking effect is allowed. And it is what
//     makes the search tractable: counting a pending write commutes with
//     every other step, so porcupine's cache meets the same (operations
//     linearized, state) pair whichever order it tried, where k such writes
//     placed one by one make up to k! orders. Lost writes are the common
//     case after faults: forty of them concurrent took porcupine past a 10s
//     timeout without 3 and 4.
//  5. A pending write is counted before any operation called after it: the
//     model refuses an operation while fewer pending writes are counted than
//     were called before it. Counting a pending write earlier only allows
//     more, and the earliest instant it may be counted is its call, so every
//     history that has a linearization has one that obeys this. Without it
//     porcupine, to prove a history illegal, tries every subset of the
//     pending writes called so far at every step: an illegal
//     10,000-operation history with 25 unknown produces was not decided in
//     a minute.
//  6. In a partition whose log the history observed whole (every offset
//     below the largest offset, HW or list-offsets answer anyone saw holds
//     a value some read returned or an acks=all produce was acknowledged
//     at), an unread write that may not have taken effect (a pending one,
//     or one acknowledged with acks=1 at some offset) is left out. It cannot
//     have taken effect inside the observed log (each offset there holds an
//     observed record, and its value was never read), so it either never
//     took effect or did past the end, where no step looks: both are the
//     same as leaving it out. Runs that end with a read of
//     every partition (FORMAT.md's final reads) are observed whole, and
//     their lost writes then cost the search nothing.
func toOperations(h []Op) (ops []porcupine.Operation, parts []partInfo, unread string) {
	end := int64(0)
	type tpValue struct {
		tp    kafka.TopicPartition
		value string
	}
	readAt := map[tpValue]int64{} // first offset a value was read at
	readBy := map[tpValue]int64{} // first return of a fetch that read it
	fetched := map[string]bool{}
	for i := range h {
		op := &h[i]
		end = max(end, op.Call, op.Return)
		if op.Kind == KindFetch && op.Outcome == OutcomeOK {
			for _, r := range op.Records {
				k := tpValue{op.TP(), r.Value}
				if at, ok := readAt[k]; !ok || r.Offset < at {
					readAt[k] = r.Offset
				}
				if by, ok := readBy[k]; !ok || op.Return < by {
					readBy[k] = op.Return
				}
				fetched[r.Value] = true
			}
		}
	}
	end++
	whole := observedWhole(h)
	unread = unreadValue
	for fetched[unread] {
		unread += "?"
	}
	rows := clientRows(h)

	byTP := map[kafka.TopicPartition][]porcupine.Operation{}
	for i := range h {
		op := &h[i]
		call := &logCall{kind: op.Kind}
		ret := &logReturn{outcome: op.Outcome, offset: op.Offset}
		returned := op.Return
		switch op.Kind {
		case KindProduce:
			if op.Resend {
				// A second send of a value by the application (FORMAT.md):
				// spec/'s log takes each record once, so the resend is left
				// out; the original's unknown window covers it, and a copy
				// it added shows as the anomaly checker's duplicate.
				continue
			}
			w := spec.Write{Value: op.Value, Acks: op.Acks, Outcome: specOutcome(op.Outcome), Offset: op.Offset, Idempotent: op.ProducerID > 0}
			at, read := readAt[tpValue{op.TP(), op.Value}]
			switch {
			case read && w.Offset < 0:
				w.Offset = at
			case !read:
				w.Value = unread
				call.pending = w.Offset < 0 && w.Outcome != spec.Failed &&
					(w.Outcome != spec.Acknowledged || w.Acks != spec.AcksAll)
			}
			if !read && whole[op.TP()] && w.Outcome != spec.Failed &&
				(w.Outcome != spec.Acknowledged || w.Acks != spec.AcksAll) {
				continue // toOperations, 6
			}
			call.value, call.read, call.write = op.Value, read, w
			if op.Outcome == OutcomeUnknown || op.Return < 0 || (op.Acks == spec.AcksNone && op.Outcome == OutcomeOK) {
				returned = end
			}
			if read && w.Outcome != spec.Failed {
				// It took effect before a read saw it (toOperations, 2); a
				// read that returned before the write was called is left
				// for the model to reject.
				returned = max(op.Call, min(returned, readBy[tpValue{op.TP(), op.Value}]))
			}
		case KindFetch:
			if op.Outcome != OutcomeOK {
				continue
			}
			call.from = op.Offset
			ret.hw, ret.logStart = op.HW, op.LogStart
			ret.records = make([]spec.Record, len(op.Records))
			for j, r := range op.Records {
				ret.records[j] = spec.Record{Offset: r.Offset, Value: r.Value}
			}
		case KindListOffsets:
			if op.Outcome != OutcomeOK {
				continue
			}
		default:
			continue
		}
		tp := op.TP()
		byTP[tp] = append(byTP[tp], porcupine.Operation{
			ClientId: rows[op.Client],
			Input:    call,
			Call:     op.Call,
			Output:   ret,
			Return:   returned,
			Metadata: opMeta{id: op.ID, client: op.Client, tp: tp},
		})
	}

	tps := make([]kafka.TopicPartition, 0, len(byTP))
	for tp := range byTP {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b kafka.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	parts = make([]partInfo, len(tps))
	for i, tp := range tps {
		var pendingCalls []int64
		for _, o := range byTP[tp] {
			if o.Input.(*logCall).pending {
				pendingCalls = append(pendingCalls, o.Call)
			}
		}
		slices.Sort(pendingCalls)
		for _, o := range byTP[tp] {
			// Calls are closed intervals: an operation called at the same
			// instant as a pending write is concurrent with it.
			o.Input.(*logCall).pendingBefore, _ = slices.BinarySearch(pendingCalls, o.Call)
			o.Input.(*logCall).part = i
			if len(tps) > 1 {
				o.Input.(*logCall).tp = tp.String() + ": "
			}
			ops = append(ops, o)
		}
		parts[i] = partInfo{tp: tp, ops: len(byTP[tp])}
	}
	return ops, parts, unread
}

func specOutcome(o Outcome) spec.Outcome {
	switch o {
	case OutcomeOK:
		return spec.Acknowledged
	case OutcomeFail:
		return spec.Failed
	default:
		return spec.Unknown
	}
}

// clientRows maps client ids to porcupine's zero-based client rows: a client
// keeps its own id, so the picture's rows read as the history's clients;
// negative ids, which the format does not forbid, get rows after the others.
func clientRows(h []Op) map[int]int {
	rows := map[int]int{}
	top := -1
	var negative []int
	for i := range h {
		c := h[i].Client
		if c >= 0 {
			rows[c] = c
			top = max(top, c)
		} else if _, ok := rows[c]; !ok {
			rows[c] = 0
			negative = append(negative, c)
		}
	}
	slices.Sort(negative)
	for i, c := range slices.Backward(negative) {
		rows[c] = top + len(negative) - i
	}
	return rows
}

// observedWhole reports, per partition, whether every offset below the
// largest the history shows (a record read or acknowledged with acks=all, a
// reported HW, a list-offsets answer) holds an observed record.
func observedWhole(h []Op) map[kafka.TopicPartition]bool {
	seen := map[kafka.TopicPartition]map[int64]bool{}
	need := map[kafka.TopicPartition]int64{}
	mark := func(tp kafka.TopicPartition, off int64) {
		if seen[tp] == nil {
			seen[tp] = map[int64]bool{}
		}
		seen[tp][off] = true
		need[tp] = max(need[tp], off+1)
	}
	for i := range h {
		op := &h[i]
		tp := op.TP()
		if op.Outcome != OutcomeOK {
			continue
		}
		switch op.Kind {
		case KindProduce:
			if op.Acks == spec.AcksAll && op.Offset >= 0 {
				mark(tp, op.Offset)
			}
		case KindFetch:
			for _, r := range op.Records {
				mark(tp, r.Offset)
			}
			need[tp] = max(need[tp], op.HW)
		case KindListOffsets:
			need[tp] = max(need[tp], op.Offset)
		}
	}
	whole := map[kafka.TopicPartition]bool{}
	for tp, n := range need {
		whole[tp] = int64(len(seen[tp])) >= n && allBelow(seen[tp], n)
	}
	return whole
}

func allBelow(set map[int64]bool, n int64) bool {
	for off := int64(0); off < n; off++ {
		if !set[off] {
			return false
		}
	}
	return true
}
