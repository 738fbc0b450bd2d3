package controller

import (
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// reconcile brings every partition in line with broker liveness, in
// partition order: dead brokers leave ISRs, and partitions without a live
// leader are elected. It is the one place where deaths and returns turn into
// elections, so a death and a restart follow exactly the same rule. The
// partitions left offline then recover uncleanly, if that is on.
func (c *Controller) reconcile(now int64) {
	for _, tp := range c.order {
		p := c.partitions[tp]
		next, kind := c.settle(p)
		c.apply(p, next, kind, -1, now)
	}
	c.maybeRecover(now)
}

// settle returns the state p should move to given who is alive, and the
// kind of election that produced it, if any.
func (c *Controller) settle(p *kafka.PartitionState) (kafka.PartitionState, EventKind) {
	next := p.Clone()
	next.ISR = c.liveISR(p)
	if next.Leader != kafka.NoLeader && c.active(next.Leader) {
		return next, ISRChange
	}
	if l, ok := c.firstAlive(p.TopicPartition, p.Replicas, next.ISR, false); ok && !c.yields(p, next.ISR, l) {
		next.Leader = l
		if p.Leader != kafka.NoLeader && c.IsAlive(p.Leader) {
			return next, ElectionShutdown // the leader lives: it asked to stop
		}
		return next, ElectionClean
	}
	if l, ok := c.electEligible(p); ok {
		// It holds every committed record (eligible.go); the ISR members
		// it replaces are dead or lost the data.
		next.Leader = l
		next.ISR = []int32{l}
		return next, ElectionEligible
	}
	if c.unclean(p.TopicPartition) {
		l, ok := c.firstAlive(p.TopicPartition, p.Replicas, nil, false)
		if !ok {
			l, ok = c.firstAlive(p.TopicPartition, p.Replicas, nil, true)
		}
		if ok {
			// The new leader's log is the truth from now on; no other
			// replica is known to hold it.
			next.Leader = l
			next.ISR = []int32{l}
			return next, ElectionUnclean
		}
	}
	next.Leader = kafka.NoLeader
	return next, Offline
}

// liveISR returns p's ISR without its dead members and those in a
// controlled shutdown, unless none is left: then it keeps one, so that a
// clean election can pick it when it returns and the partition never
// claims an empty ISR. It keeps the leader if the leader is among them (it
// holds every committed record and possibly more), otherwise the first in
// assignment order.
func (c *Controller) liveISR(p *kafka.PartitionState) []int32 {
	var live []int32
	for _, r := range p.ISR {
		if c.active(r) {
			live = append(live, r)
		}
	}
	if len(live) > 0 {
		return live
	}
	if p.Leader != kafka.NoLeader && slices.Contains(p.ISR, p.Leader) {
		return []int32{p.Leader}
	}
	for _, r := range p.Replicas {
		if slices.Contains(p.ISR, r) {
			return []int32{r}
		}
	}
	return slices.Clone(p.ISR) // unreachable while ISR is a non-empty subset of Replicas
}

// firstAlive returns the first replica of tp, in assignment order, that is
// alive and not shutting down, if within is non-nil in within, and, unless
// lostOK, did not lose tp's committed records. Assignment order makes the preferred replica win
// whenever it is eligible, which keeps leaders spread.
func (c *Controller) firstAlive(tp kafka.TopicPartition, replicas, within []int32, lostOK bool) (int32, bool) {
	for _, r := range replicas {
		if c.active(r) && (within == nil || slices.Contains(within, r)) && (lostOK || !c.lostData(r, tp)) {
			return r, true
		}
	}
	return kafka.NoLeader, false
}

// LostData reports whether broker id's current process lost tp's
// committed records (as it registered) and has not been back in its ISR
// since: for traces that compare with a model whose disks lose nothing.
func (c *Controller) LostData(id int32, tp kafka.TopicPartition) bool { return c.lostData(id, tp) }

// lostData reports whether broker id's current process lost tp's
// committed records and has not been back in its ISR since.
func (c *Controller) lostData(id int32, tp kafka.TopicPartition) bool {
	b, ok := c.brokers[id]
	return ok && b.lost[tp]
}

// rebalance moves leadership to the preferred replica of every partition
// where it is alive, in the ISR, and not already leading.
func (c *Controller) rebalance(now int64) {
	for _, tp := range c.order {
		p := c.partitions[tp]
		pref := p.Replicas[0]
		if p.Leader == pref || !c.active(pref) || !slices.Contains(p.ISR, pref) || c.lostData(pref, tp) {
			continue
		}
		next := p.Clone()
		next.Leader = pref
		c.apply(p, next, ElectionPreferred, -1, now)
	}
}

// apply moves p to next if it differs in leader or ISR, bumping the epochs,
// recording the event and queueing the new state for p's replicas. kind names
// the election; it is ignored when the leader does not change. by is the
// broker whose request caused the change, or -1.
func (c *Controller) apply(p *kafka.PartitionState, next kafka.PartitionState, kind EventKind, by int32, now int64) {
	leaderChanged := next.Leader != p.Leader
	if !leaderChanged && slices.Equal(next.ISR, p.ISR) {
		return
	}
	if leaderChanged {
		next.LeaderEpoch = p.LeaderEpoch + 1
	} else {
		kind = ISRChange
	}
	next.PartitionEpoch = p.PartitionEpoch + 1
	old := *p
	*p = next
	if b := c.brokers[next.Leader]; leaderChanged && b != nil {
		// Its log is the partition's truth from this epoch on: whatever
		// an unclean restart cost it, it holds every committed record.
		delete(b.suspect, next.TopicPartition)
	}
	c.updateELR(old, p, kind)
	c.emit(Event{Kind: kind, Now: now, Broker: by, State: p.Clone(), OldLeader: old.Leader, OldISR: slices.Clone(old.ISR)})
	c.queue(p)
}
