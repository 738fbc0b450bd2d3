package linearizability

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// never stands for the time of something that did not happen: the return of
// an operation still open when the history ended.
const never = math.MaxInt64

// pair is one (offset, value) that some operation observed.
//
// Invariants:
//  1. ack, firstRead, lastRead and missedBy are indexes into the history,
//     or -1.
//  2. At least one of ack and firstRead is set.
//  3. lastRead and missedBy are ok fetches; firstRead is any fetch.
type pair struct {
	offset int64
	value  int32 // index into partitionCheck.vals
	// sameValue links the pairs of one value while the history is read
	// (index into partitionCheck.pairs, -1 at the end); sorting the pairs
	// afterwards breaks the links.
	sameValue int32
	// ack is the produce acknowledged at this offset.
	ack int32
	// firstRead is the fetch that returned it earliest (by return, then ID).
	firstRead int32
	// lastRead is the ok fetch that returned it and was called latest (by
	// call, then ID): the best witness against another value at the offset.
	lastRead int32
	// missedBy is the ok fetch called latest that covered the offset without
	// this value there.
	missedBy int32
}

// valueFacts is what a partition's history says about one value.
type valueFacts struct {
	value string
	// produce is the produce that wrote it, -1 if only reads saw it.
	produce int32
	// pairs heads its list of pairs (linked by pair.sameValue), offsets
	// counts them: the offsets it was observed at.
	pairs   int32
	offsets int32
	// firstRead is the fetch that returned it earliest, at any offset, and
	// firstOff where.
	firstRead int32
	firstOff  int64
	// resent says an application sent the value again (Op.Resend): a
	// second copy is then its doing, not a broker's failure to dedup.
	resent bool
}

// gap is a range an ok fetch covered without returning a record in it.
type gap struct {
	lo, hi int64
	fetch  int32
}

// partitionCheck applies the rules to one partition's operations at a time;
// its buffers are reused from one partition to the next.
type partitionCheck struct {
	h   []Op
	tp  kafka.TopicPartition
	ops []int32 // this partition's operations, indexes into h

	values map[string]int32 // value -> index into vals
	vals   []valueFacts
	pairs  []pair
	gaps   []gap
	// final is the ok Final fetch that read furthest, finalEnd its last
	// offset; final is -1 when the partition has no final read.
	final    int32
	finalEnd int64
	// finalCall is when the partition's first Final fetch was called: only
	// writes acknowledged before it must show in the final reads.
	finalCall int64
	// starts are the log start offsets fetch answers reported (when > 0),
	// with when each returned: retention deleted everything below one.
	starts []startSeen

	committed []int32
	clients   map[int]*clientState
	// joins holds each client's join ops (clientJoins), shared read-only.
	joins     map[int][]opKey
	clientOps []clientOp
	out       []Anomaly
}

func newPartitionCheck(h []Op, joins map[int][]opKey) *partitionCheck {
	return &partitionCheck{h: h, values: map[string]int32{}, clients: map[int]*clientState{}, joins: joins}
}

// run judges one partition and returns its anomalies in order.
func (c *partitionCheck) run(tp kafka.TopicPartition, ops []int32) []Anomaly {
	c.tp, c.ops = tp, ops
	clear(c.values)
	c.vals, c.pairs, c.gaps, c.out = c.vals[:0], c.pairs[:0], c.gaps[:0], nil
	c.final = -1
	c.finalCall = never
	c.starts = c.starts[:0]
	for _, i := range ops {
		switch c.h[i].Kind {
		case KindProduce:
			c.addProduce(i)
		case KindFetch:
			c.addFetch(i)
		}
	}
	c.checkOffsets()
	c.checkValues()
	c.checkClients()
	slices.SortFunc(c.out, compareAnomalies)
	return c.out
}

func (c *partitionCheck) ret(i int32) int64 {
	if c.h[i].Return < 0 {
		return never
	}
	return c.h[i].Return
}

// calledLater reports whether op a was called after op b (ties: lower ID
// first), treating -1 as no op.
func (c *partitionCheck) calledLater(a, b int32) bool {
	if b < 0 {
		return a >= 0
	}
	if a < 0 {
		return false
	}
	x, y := &c.h[a], &c.h[b]
	return x.Call > y.Call || x.Call == y.Call && x.ID < y.ID
}

// returnedEarlier reports whether op a returned before op b (ties: lower ID
// first), treating -1 as no op.
func (c *partitionCheck) returnedEarlier(a, b int32) bool {
	if b < 0 {
		return a >= 0
	}
	if a < 0 {
		return false
	}
	ra, rb := c.ret(a), c.ret(b)
	return ra < rb || ra == rb && c.h[a].ID < c.h[b].ID
}

func (c *partitionCheck) value(v string) int32 {
	vi, ok := c.values[v]
	if !ok {
		vi = int32(len(c.vals))
		c.values[v] = vi
		c.vals = append(c.vals, valueFacts{value: v, produce: -1, pairs: -1, firstRead: -1})
	}
	return vi
}

// observe returns the pair (offset, value vi), adding it if it is new. A
// value is nearly always seen at one offset, so its short list is searched.
func (c *partitionCheck) observe(offset int64, vi int32) *pair {
	v := &c.vals[vi]
	for pi := v.pairs; pi >= 0; pi = c.pairs[pi].sameValue {
		if c.pairs[pi].offset == offset {
			return &c.pairs[pi]
		}
	}
	c.pairs = append(c.pairs, pair{offset: offset, value: vi, sameValue: v.pairs,
		ack: -1, firstRead: -1, lastRead: -1, missedBy: -1})
	v.pairs = int32(len(c.pairs) - 1)
	v.offsets++
	return &c.pairs[v.pairs]
}

func (c *partitionCheck) addProduce(i int32) {
	op := &c.h[i]
	vi := c.value(op.Value)
	v := &c.vals[vi]
	if op.Resend {
		v.resent = true
	}
	// With a resend the value has two produces: judge by the one the
	// client saw acknowledged, if any.
	if v.produce < 0 || (c.h[v.produce].Outcome != OutcomeOK && op.Outcome == OutcomeOK) {
		v.produce = i
	}
	// Only an acks=all acknowledgement speaks of the committed log. With
	// acks=1 the leader answers before replicating, and spec/SEMANTICS.md lets
	// it lose the record and reuse the offset: that acknowledgement is not
	// an observation of the log clients read, only of a leader's.
	if op.Outcome == OutcomeOK && op.Offset >= 0 && op.Acks == -1 {
		if p := c.observe(op.Offset, vi); p.ack < 0 {
			p.ack = i
		}
	}
}

func (c *partitionCheck) addFetch(i int32) {
	op := &c.h[i]
	ok := op.Outcome == OutcomeOK
	if op.LogStart > 0 {
		c.starts = append(c.starts, startSeen{op.LogStart, c.ret(i)})
	}
	// The reference's OFFSET_OUT_OF_RANGE answer names the log start and
	// the HW too; an answer without an HW (-1) is not judged.
	if (ok || op.Code == codeOutOfRange) && op.HW >= 0 && op.LogStart > op.HW {
		c.report(AnomalyDeletedUncommitted, op.LogStart, "", []int32{i},
			"op %d was answered with log start offset %d past its HW %d: retention deleted records that were not committed", op.ID, op.LogStart, op.HW)
	}
	for _, r := range op.Records {
		vi := c.value(r.Value)
		p := c.observe(r.Offset, vi)
		if c.returnedEarlier(i, p.firstRead) {
			p.firstRead = i
		}
		if ok && c.calledLater(i, p.lastRead) {
			p.lastRead = i
		}
		if v := &c.vals[vi]; c.returnedEarlier(i, v.firstRead) {
			v.firstRead, v.firstOff = i, r.Offset
		}
	}
	if !ok {
		return
	}
	end := op.Offset - 1
	if n := len(op.Records); n > 0 {
		end = op.Records[n-1].Offset
		next := op.Offset
		if next < 0 || next > op.Records[0].Offset {
			next = op.Records[0].Offset
		}
		for _, r := range op.Records {
			if r.Offset > next {
				c.gaps = append(c.gaps, gap{next, r.Offset - 1, i})
			}
			next = max(next, r.Offset+1)
		}
	}
	if op.Final {
		c.finalCall = min(c.finalCall, op.Call)
	}
	if op.Final && (c.final < 0 || end > c.finalEnd || end == c.finalEnd && op.ID < c.h[c.final].ID) {
		c.final, c.finalEnd = i, end
	}
}

// committedAt is when (p.offset, p.value) was first known committed: the
// return of an acks=all produce acknowledged there or of the first read
// there; never if neither.
func (c *partitionCheck) committedAt(p *pair) int64 {
	t := int64(never)
	if p.ack >= 0 && c.h[p.ack].Acks == -1 {
		t = c.ret(p.ack)
	}
	if p.firstRead >= 0 {
		t = min(t, c.ret(p.firstRead))
	}
	return t
}

// observer is the operation cited for having seen p: its acknowledgement if
// there is one, else its first read.
func (c *partitionCheck) observer(p *pair) int32 {
	if p.ack >= 0 {
		return p.ack
	}
	return p.firstRead
}

func (c *partitionCheck) report(name string, offset int64, value string, ops []int32, format string, args ...any) {
	ids := make([]int, 0, len(ops))
	for _, i := range ops {
		if id := c.h[i].ID; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	c.out = append(c.out, Anomaly{
		Name: name, Topic: c.tp.Topic, Partition: c.tp.Partition,
		Offset: offset, Value: value, Ops: ids, Detail: fmt.Sprintf(format, args...),
	})
}

// checkOffsets finds inconsistent-offsets, lost-write and read-uncommitted.
func (c *partitionCheck) checkOffsets() {
	// Histories are mostly written in offset order, so this sort is cheap;
	// ties (two values at one offset) are ordered by observer below.
	slices.SortFunc(c.pairs, func(a, b pair) int { return cmp.Compare(a.offset, b.offset) })
	c.committed = c.committed[:0]
	for lo := 0; lo < len(c.pairs); {
		hi := lo + 1
		for hi < len(c.pairs) && c.pairs[hi].offset == c.pairs[lo].offset {
			hi++
		}
		group := c.pairs[lo:hi]
		if len(group) > 1 {
			slices.SortFunc(group, func(a, b pair) int {
				return cmp.Compare(c.h[c.observer(&a)].ID, c.h[c.observer(&b)].ID)
			})
			c.reportInconsistent(group)
		}
		// Another value's latest reader is a witness against each pair; keep
		// the two latest so each pair finds the best one that is not its own.
		best, second := int32(-1), int32(-1)
		for k := range group {
			if r := group[k].lastRead; c.calledLater(r, best) {
				best, second = r, best
			} else if c.calledLater(r, second) {
				second = r
			}
		}
		for k := range group {
			p := &group[k]
			if c.committedAt(p) == never {
				continue
			}
			p.missedBy = best
			if best >= 0 && best == p.lastRead {
				p.missedBy = second
			}
			c.committed = append(c.committed, int32(lo+k))
		}
		lo = hi
	}
	c.sweepGaps()
	for _, pi := range c.committed {
		p := &c.pairs[pi]
		w := p.missedBy
		if w < 0 || c.h[w].Call <= c.committedAt(p) {
			continue
		}
		c.reportLost(p, w)
		if p.firstRead >= 0 && c.h[w].Call > c.ret(p.firstRead) {
			c.reportUncommitted(p, w)
		}
	}
}

// sweepGaps raises each committed pair's missedBy to the latest-called fetch
// whose gaps cover its offset. c.committed is in offset order.
func (c *partitionCheck) sweepGaps() {
	if len(c.gaps) == 0 || len(c.committed) == 0 {
		return
	}
	slices.SortFunc(c.gaps, func(a, b gap) int { return cmp.Compare(a.lo, b.lo) })
	open := gapHeap{c: c}
	next := 0
	for _, pi := range c.committed {
		p := &c.pairs[pi]
		for next < len(c.gaps) && c.gaps[next].lo <= p.offset {
			heap.Push(&open, c.gaps[next])
			next++
		}
		// Gaps that end before this offset end before every later one too.
		for open.Len() > 0 && open.gaps[0].hi < p.offset {
			heap.Pop(&open)
		}
		if open.Len() > 0 && c.calledLater(open.gaps[0].fetch, p.missedBy) {
			p.missedBy = open.gaps[0].fetch
		}
	}
}

// gapHeap keeps the open gaps with the latest-called fetch on top.
type gapHeap struct {
	c    *partitionCheck
	gaps []gap
}

func (g *gapHeap) Len() int           { return len(g.gaps) }
func (g *gapHeap) Less(i, j int) bool { return g.c.calledLater(g.gaps[i].fetch, g.gaps[j].fetch) }
func (g *gapHeap) Swap(i, j int)      { g.gaps[i], g.gaps[j] = g.gaps[j], g.gaps[i] }
func (g *gapHeap) Push(x any)         { g.gaps = append(g.gaps, x.(gap)) }
func (g *gapHeap) Pop() any {
	x := g.gaps[len(g.gaps)-1]
	g.gaps = g.gaps[:len(g.gaps)-1]
	return x
}

func (c *partitionCheck) reportInconsistent(group []pair) {
	ops := make([]int32, len(group))
	seen := make([]string, len(group))
	for k := range group {
		p := &group[k]
		ops[k] = c.observer(p)
		seen[k] = fmt.Sprintf("%q (op %d)", c.vals[p.value].value, c.h[ops[k]].ID)
	}
	off := group[0].offset
	c.report(AnomalyInconsistentOffsets, off, "", ops, "offset %d held %s", off, joinAnd(seen))
}

// what says what fetch w had at offset: another value, or nothing.
func (c *partitionCheck) what(w int32, offset int64) string {
	recs := c.h[w].Records
	k, found := slices.BinarySearchFunc(recs, offset, func(r Record, o int64) int { return cmp.Compare(r.Offset, o) })
	if found {
		return fmt.Sprintf("read %q there", recs[k].Value)
	}
	return fmt.Sprintf("read past it (to offset %d) with nothing there", recs[len(recs)-1].Offset)
}

func (c *partitionCheck) reportLost(p *pair, w int32) {
	v := c.vals[p.value].value
	ev, how := p.firstRead, "read by"
	if p.ack >= 0 && c.h[p.ack].Acks == -1 && !c.returnedEarlier(p.firstRead, p.ack) {
		ev, how = p.ack, "acknowledged with acks=all by"
	}
	c.report(AnomalyLostWrite, p.offset, v, []int32{ev, w},
		"%q was committed at offset %d (%s op %d, returned at %d), but op %d, called at %d, %s",
		v, p.offset, how, c.h[ev].ID, c.h[ev].Return, c.h[w].ID, c.h[w].Call, c.what(w, p.offset))
}

func (c *partitionCheck) reportUncommitted(p *pair, w int32) {
	v := c.vals[p.value].value
	r := p.firstRead
	c.report(AnomalyReadUncommitted, p.offset, v, []int32{r, w},
		"op %d read %q at offset %d (returned at %d), but op %d, called at %d, %s",
		c.h[r].ID, v, p.offset, c.h[r].Return, c.h[w].ID, c.h[w].Call, c.what(w, p.offset))
}

// checkValues finds duplicate, read-of-failed-write and unseen.
func (c *partitionCheck) checkValues() {
	var dups map[int32][]int32
	for pi := range c.pairs {
		if vi := c.pairs[pi].value; c.vals[vi].offsets > 1 && c.vals[vi].produce >= 0 {
			if dups == nil {
				dups = map[int32][]int32{}
			}
			dups[vi] = append(dups[vi], int32(pi)) // in offset order
		}
	}
	for vi, group := range dups {
		ops := make([]int32, len(group))
		at := make([]string, len(group))
		for k, pi := range group {
			p := &c.pairs[pi]
			ops[k] = c.observer(p)
			at[k] = fmt.Sprintf("%d (op %d)", p.offset, c.h[ops[k]].ID)
		}
		v := c.vals[vi].value
		c.report(AnomalyDuplicate, c.pairs[group[0]].offset, v, ops, "%q stood at offsets %s", v, joinAnd(at))
		if p := c.vals[vi].produce; p >= 0 && c.h[p].ProducerID > 0 && !c.vals[vi].resent {
			// The write was idempotent: its retries carried one (PID,
			// epoch, sequence), and the broker appended it twice anyway.
			prod := &c.h[p]
			c.report(AnomalyDedupFailure, c.pairs[group[0]].offset, v, append([]int32{p}, ops...),
				"%q (producer %d, epoch %d, sequence %d; op %d) was appended at offsets %s",
				v, prod.ProducerID, prod.ProducerEpoch, prod.Sequence, prod.ID, joinAnd(at))
		}
	}
	for k := range c.vals {
		v := &c.vals[k]
		if v.produce < 0 {
			if v.firstRead >= 0 {
				c.report(AnomalyForeignRecord, v.firstOff, v.value, []int32{v.firstRead},
					"op %d read %q at offset %d, which no producer of this run sent: another topic's or another run's record, served as this partition's",
					c.h[v.firstRead].ID, v.value, v.firstOff)
			}
			continue
		}
		prod := &c.h[v.produce]
		if prod.Outcome == OutcomeFail && v.firstRead >= 0 {
			c.report(AnomalyReadOfFailedWrite, v.firstOff, v.value, []int32{v.produce, v.firstRead},
				"op %d read %q at offset %d, but its produce (op %d) failed: %s",
				c.h[v.firstRead].ID, v.value, v.firstOff, prod.ID, cmp.Or(prod.Error, "no error given"))
		}
		// Retention may delete a record before anyone reads it: below a
		// log start offset reported after the write was sent, unread is
		// not unseen.
		if c.final >= 0 && prod.Outcome == OutcomeOK && prod.Acks != 0 && prod.Offset >= 0 && !c.deleted(prod) && v.firstRead < 0 &&
			prod.Return >= 0 && prod.Return < c.finalCall {
			where := fmt.Sprintf("the final reads ended below it (op %d reached offset %d)", c.h[c.final].ID, c.finalEnd)
			if prod.Offset <= c.finalEnd {
				where = fmt.Sprintf("the final read op %d passed over it to offset %d", c.h[c.final].ID, c.finalEnd)
			}
			c.report(AnomalyUnseen, prod.Offset, v.value, []int32{v.produce, c.final},
				"%q was acknowledged at offset %d (op %d, acks=%d) but no read returned it; %s",
				v.value, prod.Offset, prod.ID, prod.Acks, where)
		}
	}
}

// codeOutOfRange is OFFSET_OUT_OF_RANGE's Kafka error code.
var codeOutOfRange = kafka.CodeOf(kafka.ErrOffsetOutOfRange)

// startSeen is a log start offset a fetch answer reported, and when the
// fetch returned.
type startSeen struct{ start, ret int64 }

// deleted reports whether retention may have deleted the record produce
// prod wrote: a fetch that returned after prod was called reported a log
// start offset past its offset, and none that returned before it was
// called did. A record is appended at the log's end, never below its
// start (a new leader's log reaches every committed record, so past any
// log start a leader reported), so a start already past it when it was
// sent excuses nothing.
func (c *partitionCheck) deleted(prod *Op) bool {
	after := false
	for _, s := range c.starts {
		if s.start > prod.Offset {
			if s.ret <= prod.Call {
				return false
			}
			after = true
		}
	}
	return after
}
