package sim

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

// batchID identifies a batch across replicas: one leader epoch writes each
// offset at most once, so (epoch, base offset) names a batch; the length
// and first value guard against a broken implementation reusing one.
type batchID struct {
	base  int64
	epoch int32
	n     int
	first []byte
}

func idOf(b *record.Batch) batchID {
	return batchID{base: b.BaseOffset, epoch: b.LeaderEpoch, n: b.Len(), first: firstValue(b)}
}

// firstValue is the value of b's first record, decoding b when it holds
// only its bytes (a batch read from a segment file); nil if it has none or
// does not decode (a simulated client never compresses).
func firstValue(b *record.Batch) []byte {
	recs, err := b.DecodeRecords(nil)
	if err != nil || len(recs) == 0 {
		return nil
	}
	return recs[0].Value
}

func (a batchID) same(b batchID) bool {
	return a.base == b.base && a.epoch == b.epoch && a.n == b.n && bytes.Equal(a.first, b.first)
}

// committedLog is what the cluster has committed for one partition: every
// batch that some acting leader exposed below its HW. It only grows.
type committedLog struct {
	// batches are in offset order; retention can leave a gap where a
	// leader deleted committed batches before they were recorded.
	batches []batchID
	hw      int64 // the true HW: the largest HW any acting leader reached
}

// end is the offset after the last recorded batch.
func (c *committedLog) end() int64 {
	if len(c.batches) == 0 {
		return 0
	}
	b := c.batches[len(c.batches)-1]
	return b.base + int64(b.n)
}

// from is the index of the first recorded batch that ends past offset.
func (c *committedLog) from(offset int64) int {
	return sort.Search(len(c.batches), func(i int) bool { return c.batches[i].base+int64(c.batches[i].n) > offset })
}

// verified caches how far two replicas' logs were compared, so each check
// is incremental; truncation counts and incarnations invalidate it.
type pairKey struct {
	tp         kafka.TopicPartition
	a, b       broker.NodeID
	incA, incB int64
	trA, trB   uint64
}

type invariants struct {
	s         *Sim
	committed map[kafka.TopicPartition]*committedLog
	// lookups and followerFetches are requests in flight
	// (coverage_states.go).
	lookups         lookups
	followerFetches followerFetches
	leaderEp        map[kafka.TopicPartition]int32
	verified        map[pairKey]int64
	violations      []*run.Violation // the first failure of each invariant, in order
	failed          bool             // something failed in this step's check

	produces    map[reqKey]sentProduce  // produces in flight
	fetchEpochs map[reqKey]int32        // fetches in flight: the leader epoch each named
	leaderHW    map[leaderKey]int64     // the HW each leadership was last seen at
	epochs      map[replicaKey][2]int32 // the leader and partition epochs each replica process acts in
	synced      map[broker.NodeID]map[string]int64
	left        map[broker.NodeID]map[string]int64
	cov         coverage
}

func newInvariants(s *Sim) *invariants {
	return &invariants{
		s:               s,
		committed:       map[kafka.TopicPartition]*committedLog{},
		lookups:         lookups{},
		followerFetches: followerFetches{},
		leaderEp:        map[kafka.TopicPartition]int32{},
		verified:        map[pairKey]int64{},
		produces:        map[reqKey]sentProduce{},
		fetchEpochs:     map[reqKey]int32{},
		leaderHW:        map[leaderKey]int64{},
		epochs:          map[replicaKey][2]int32{},
		synced:          map[broker.NodeID]map[string]int64{},
		left:            map[broker.NodeID]map[string]int64{},
		cov:             newCoverage(s, s.controller().Metadata()),
	}
}

func (inv *invariants) fail(name, detail string) {
	for _, v := range inv.violations {
		if v.Invariant == name {
			return
		}
	}
	inv.failed = true
	inv.violations = append(inv.violations, &run.Violation{Invariant: name, Detail: detail, AtMs: inv.s.Now, Step: inv.s.steps, Trace: inv.s.trace.tail()})
	inv.s.Notef(run.NoteInvariant, 0, "invariant %s violated: %s", name, detail)
}

// replicaView is one live replica as the checks see it.
type replicaView struct {
	id  broker.NodeID
	inc int64
	r   *partition.Replica
}

// check runs every invariant on the global state after a step.
func (inv *invariants) check() {
	s := inv.s
	ctrl := s.controller()
	inv.failed = false
	if err := ctrl.CheckInvariants(); err != nil {
		inv.fail(run.InvController, err.Error())
	}
	for _, p := range ctrl.Metadata() {
		if inv.failed {
			return
		}
		tp := p.TopicPartition
		inv.checkController(tp, p)
		var live []replicaView
		for _, id := range p.Replicas {
			n := s.nodes[id]
			if n.b == nil {
				continue
			}
			if r, ok := n.b.Replica(tp); ok {
				live = append(live, replicaView{id: n.id, inc: n.b.Incarnation(), r: r})
			}
		}
		for _, v := range live {
			inv.checkHW(v)
			inv.checkReplicaEpochs(tp, v)
			inv.cov.truncation(inv.s, tp, v)
		}
		leader := inv.actingLeader(ctrl, p, live)
		if leader != nil {
			inv.checkLeader(tp, p, ctrl, *leader, live)
		}
		inv.checkLogMatching(tp, p, live)
	}
}

func (inv *invariants) checkController(tp kafka.TopicPartition, p kafka.PartitionState) {
	if p.Leader >= 0 && !slices.Contains(p.ISR, p.Leader) {
		inv.fail(run.InvLeaderInISR, fmt.Sprintf("%s: leader %d not in ISR %v", tp, p.Leader, p.ISR))
	}
	if why := deadInISR(p.ISR, inv.s.controller().IsAlive); why != "" {
		inv.fail(run.InvISRAlive, fmt.Sprintf("%s: %s", tp, why))
	}
	if last, ok := inv.leaderEp[tp]; ok && p.LeaderEpoch < last {
		inv.fail(run.InvEpochsIncrease, fmt.Sprintf("%s: leader epoch went from %d to %d", tp, last, p.LeaderEpoch))
	}
	inv.leaderEp[tp] = p.LeaderEpoch
}

// actingLeader is the replica that leads in the controller's current epoch
// and knows it, in the process the controller knows: the one clients can
// read from and whose HW commits records.
func (inv *invariants) actingLeader(ctrl *controller.Controller, p kafka.PartitionState, live []replicaView) *replicaView {
	if p.Leader < 0 {
		return nil
	}
	inc, _ := ctrl.Incarnation(p.Leader)
	for i := range live {
		v := &live[i]
		if int32(v.id) == p.Leader && v.inc == inc && v.r.Role() == partition.RoleLeader && v.r.LeaderEpoch() == p.LeaderEpoch {
			return v
		}
	}
	return nil
}

func (inv *invariants) checkLeader(tp kafka.TopicPartition, p kafka.PartitionState, ctrl *controller.Controller, l replicaView, live []replicaView) {
	c := inv.committed[tp]
	if c == nil {
		c = &committedLog{}
		inv.committed[tp] = c
	}
	log := l.r.Log()
	// TrueHWNeverDecreases: the leader still reaches every committed offset.
	if l.r.LEO() < c.hw {
		inv.fail(run.InvTrueHWMonotonic, fmt.Sprintf("%s: committed up to %d, but leader %d (epoch %d) ends at %d",
			tp, c.hw, l.id, p.LeaderEpoch, l.r.LEO()))
		return
	}
	// LeaderCompleteness: and holds the very same batches there.
	if i, ok := inv.matchCommitted(tp, l, c); !ok {
		b := c.batches[i]
		inv.fail(run.InvLeaderCompleteness, fmt.Sprintf("%s: committed batch at offset %d (epoch %d, %q) is not in leader %d's log (epoch %d)",
			tp, b.base, b.epoch, b.first, l.id, p.LeaderEpoch))
		return
	}
	inv.checkHWOnMinISR(tp, l)
	if hw := l.r.HW(); hw > c.hw {
		for i := batchIndex(log, c.end()); i < len(log) && log[i].NextOffset() <= hw; i++ {
			c.batches = append(c.batches, idOf(&log[i]))
		}
		c.hw = hw
	} else if hw < c.hw {
		inv.s.Reached(run.SitNewLeaderHWBehind)
	}
	// StrongIsr: every ISR member the controller could elect holds the
	// leader's log below the committed HW: a new leader's own HW may lag
	// it, and a follower that joins the ISR in that gap without what was
	// committed could be elected and lose it.
	for _, m := range live {
		if m.id == l.id || !slices.Contains(p.ISR, int32(m.id)) {
			continue
		}
		if inc, _ := ctrl.Incarnation(int32(m.id)); inc != m.inc || !ctrl.IsAlive(int32(m.id)) {
			continue // a restarted process the controller has not heard from: it cannot lead
		}
		if why := behindCommitted(c.hw, m.r); why != "" {
			inv.fail(run.InvStrongISR, fmt.Sprintf("%s: ISR member %d %s (leader %d's HW is %d)", tp, m.id, why, l.id, l.r.HW()))
			return
		}
		if off, ok := inv.agree(tp, l, m, c.hw); !ok {
			inv.fail(run.InvStrongISR, fmt.Sprintf("%s: ISR member %d differs from leader %d at offset %d, below the committed HW %d",
				tp, m.id, l.id, off, c.hw))
			return
		}
	}
}

// deadInISR says why isr breaks IsrMembersAlive: a broker the controller
// holds dead is in an ISR of more than one member ("" when none is).
func deadInISR(isr []int32, alive func(int32) bool) string {
	if len(isr) < 2 {
		return ""
	}
	for _, id := range isr {
		if !alive(id) {
			return fmt.Sprintf("broker %d, dead to the controller, is in the ISR %v", id, isr)
		}
	}
	return ""
}

// checkReplicaEpochs: a replica process never goes back to an older
// partition state (a lower leader epoch, or a lower partition epoch in
// the same leader epoch): states can be delayed, duplicated and
// reordered, and a stale one is ignored.
func (inv *invariants) checkReplicaEpochs(tp kafka.TopicPartition, v replicaView) {
	k := replicaKey{v.id, v.inc, tp}
	now := [2]int32{v.r.LeaderEpoch(), v.r.PartitionEpoch()}
	if was, ok := inv.epochs[k]; ok {
		if why := epochsBack(was, now); why != "" {
			inv.fail(run.InvEpochsIncrease, fmt.Sprintf("%s: replica on broker %d %s", tp, v.id, why))
		}
	}
	inv.epochs[k] = now
}

// epochsBack says why going from (leader epoch, partition epoch) was to
// now is going back; "" when it is not.
func epochsBack(was, now [2]int32) string {
	if now[0] < was[0] || now[0] == was[0] && now[1] < was[1] {
		return fmt.Sprintf("went back from leader epoch %d, partition epoch %d to leader epoch %d, partition epoch %d", was[0], was[1], now[0], now[1])
	}
	return ""
}

// leaderKey names one leadership: a leader process in one leader epoch.
type leaderKey struct {
	tp    kafka.TopicPartition
	id    broker.NodeID
	inc   int64
	epoch int32
}

// checkHWOnMinISR: an acting leader's HW moves up only while its ISR has
// min.insync.replicas members (of the partition's replicas, if fewer).
func (inv *invariants) checkHWOnMinISR(tp kafka.TopicPartition, l replicaView) {
	key := leaderKey{tp: tp, id: l.id, inc: l.inc, epoch: l.r.LeaderEpoch()}
	last, seen := inv.leaderHW[key]
	hw := l.r.HW()
	inv.leaderHW[key] = hw
	if !seen || hw <= last {
		return
	}
	p, _ := inv.s.controller().Partition(tp)
	if why := hwBelowMinISR(last, hw, l.r.ISR(), min(inv.s.Spec.Broker.MinInsyncReplicas, len(p.Replicas))); why != "" {
		inv.fail(run.InvHWOnMinISR, fmt.Sprintf("%s: leader %d's %s", tp, l.id, why))
	}
}

// hwBelowMinISR says why moving the HW from last to hw with ISR isr is
// wrong under min.insync.replicas minISR; "" when it is not.
func hwBelowMinISR(last, hw int64, isr []int32, minISR int) string {
	if len(isr) < minISR {
		return fmt.Sprintf("HW went from %d to %d with ISR %v, below min.insync.replicas %d", last, hw, isr, minISR)
	}
	return ""
}

// behindCommitted says why an electable ISR member whose log is m lacks
// what was committed below hw; "" when it does not.
func behindCommitted(hw int64, m replicaState) string {
	if m.LEO() < hw {
		return fmt.Sprintf("ends at %d, below the committed HW %d", m.LEO(), hw)
	}
	return ""
}

// matchCommitted compares the leader's log with the committed batches,
// from where the last comparison of this leader process and log stopped,
// or its log start offset: retention deleted what is below.
func (inv *invariants) matchCommitted(tp kafka.TopicPartition, l replicaView, c *committedLog) (int, bool) {
	key := pairKey{tp: tp, a: l.id, incA: l.inc, trA: l.r.Truncations(), b: -1}
	from := max(inv.verified[key], l.r.LogStart())
	log := l.r.Log()
	for j := c.from(from); j < len(c.batches); j++ {
		i := batchIndex(log, c.batches[j].base)
		if i >= len(log) || !idOf(&log[i]).same(c.batches[j]) {
			return j, false
		}
	}
	inv.verified[key] = c.hw
	return 0, true
}

// checkLogMatching: two replicas agree up to the smaller of their HWs.
// Only replicas that act in the controller's current epoch on a resolved log
// are compared: one just restarted, or still asking the leader where its
// epoch ended, holds leftovers that the protocol is about to truncate (a
// committed record lost to a power loss shows up as LeaderCompleteness or
// TrueHWNeverDecreases, and in the clients' history).
func (inv *invariants) checkLogMatching(tp kafka.TopicPartition, p kafka.PartitionState, all []replicaView) {
	var live []replicaView
	for _, v := range all {
		if v.r.Resolved() && v.r.LeaderEpoch() == p.LeaderEpoch {
			live = append(live, v)
		}
	}
	for i := range live {
		for j := i + 1; j < len(live); j++ {
			a, b := live[i], live[j]
			upTo := min(a.r.HW(), b.r.HW())
			if off, ok := inv.agree(tp, a, b, upTo); !ok {
				inv.fail(run.InvLogMatching, fmt.Sprintf("%s: replicas %d (HW %d) and %d (HW %d) hold different records at offset %d",
					tp, a.id, a.r.HW(), b.id, b.r.HW(), off))
				return
			}
		}
	}
}

// agree reports whether a's and b's logs hold the same batches below upTo,
// and otherwise the first offset where they differ.
func (inv *invariants) agree(tp kafka.TopicPartition, a, b replicaView, upTo int64) (int64, bool) {
	if a.id > b.id {
		a, b = b, a
	}
	key := pairKey{tp: tp, a: a.id, b: b.id, incA: a.inc, incB: b.inc, trA: a.r.Truncations(), trB: b.r.Truncations()}
	// Below either log start offset retention deleted the records: there
	// is nothing to compare.
	from := max(inv.verified[key], a.r.LogStart(), b.r.LogStart())
	if from >= upTo {
		return 0, true
	}
	la, lb := a.r.Log(), b.r.Log()
	i, j := batchIndex(la, from), batchIndex(lb, from)
	for ; i < len(la) && j < len(lb) && la[i].BaseOffset < upTo && lb[j].BaseOffset < upTo; i, j = i+1, j+1 {
		if !idOf(&la[i]).same(idOf(&lb[j])) {
			return min(la[i].BaseOffset, lb[j].BaseOffset), false
		}
	}
	// Callers make sure both logs reach upTo (HWs are clamped to LEO, and
	// StrongIsr checks the member's LEO first).
	inv.verified[key] = upTo
	return 0, true
}

// batchIndex finds the batch holding offset (or the first after it).
func batchIndex(log []record.Batch, offset int64) int { return record.Search(log, offset) }
