package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/settings"
)

// Unclean recovery (KIP-966, part 2; not in Kafka 4.1, whose
// GetReplicaLogInfo RPCs were added by KAFKA-18681 and reverted).
//
// When no ISR member and no eligible leader replica can lead a partition,
// unclean leader election takes the first live replica, whatever it holds.
// With UncleanRecovery the controller asks instead: each live replica
// says where its log ends (kafka.ReplicaLogInfoRequest, KIP-966's
// GetReplicaLogInfo), and the one whose end ranks highest leads
// (kafka.LogEnd.Compare: the later last epoch, then the longer log), with
// the ISR set to it (ElectionRecovery). That loses the least the live
// replicas can still give: if one that answered holds every committed
// record, the replica elected does too (a log of a later last epoch was
// written by a leader that held them; of the same epoch, the longer one
// holds the shorter's).
//
// The rules, applied after every change of liveness, every Tick and every
// answer (maybeRecover):
//  1. A recovery begins once a partition is offline (settle found no ISR
//     member or eligible replica to lead) and one of its replicas is
//     active. It asks every active replica, and each that becomes active
//     while it runs.
//  2. It belongs to the partition epoch it began at: any change of the
//     partition ends it. Answers for another partition epoch, from
//     another incarnation, or from a replica it did not ask are ignored.
//     A replica that dies, stops or restarts meanwhile is dropped with its
//     answer: that process cannot lead now.
//  3. It decides once every replica asked has answered. Balanced also
//     waits for every last-known member, dead or alive: the ISR's kept
//     members and the eligible leader replicas, those that may hold every
//     committed record (KIP-966's Balanced recovers only once its
//     LastKnownELR are back and have answered). Aggressive does not wait
//     for dead ones (KIP-966's Aggressive, which recovers even while
//     fenced ELR members may come back).
//  4. The wait for live replicas is bounded by UncleanRecoveryTimeoutMs,
//     counted from the last question: then it decides on the answers it
//     has, if it has some and no last-known member it waits for is
//     missing; otherwise it asks the silent replicas again (a question or
//     an answer may have been lost).
//  5. The highest answer leads, ties going to assignment order, even a
//     replica that registered having lost the partition's data: its
//     answer is what it holds now. Its lost mark goes, as the log it
//     leads with is the partition's from then on; the ELR empties
//     (eligible.go rule 3); the event lists every answer, and what lies
//     past the new leader's end on any other replica is lost.
//
// Differences from KIP-966, on purpose: every live replica is asked, not
// only the last-known members (a longer replica outside them can only
// lose less); there is no LastKnownELR, so an ELR member that restarts
// uncleanly is no longer waited for, though it is asked as any live
// replica; the strategy is the controller's, not a topic's, and no
// manual recovery (KIP-966's None with kafka-leader-election) exists.

// RecoveryStrategy says whether and how an offline partition recovers
// uncleanly (Config.UncleanRecovery; settings.RecoveryStrategy).
type RecoveryStrategy = settings.RecoveryStrategy

// The strategies, by KIP-966's names.
const (
	RecoveryNone       = settings.RecoveryNone
	RecoveryBalanced   = settings.RecoveryBalanced
	RecoveryAggressive = settings.RecoveryAggressive
)

// ErrNotAsked is an answer no recovery in flight asked for.
var ErrNotAsked = errors.New("answer to no unclean recovery in flight")

// recovery is one offline partition's unclean recovery.
//
// Invariants:
//  1. The partition is offline at partition epoch epoch.
//  2. asked holds replicas of the partition, each with the incarnation
//     asked; answers holds answers of asked replicas only.
type recovery struct {
	epoch   int32
	started int64 // when the last question went out: the timeout counts from here
	asked   map[int32]int64
	answers map[int32]kafka.LogEnd
}

// recovering reports whether offline partitions recover uncleanly, which
// takes the place of unclean leader election.
func (c *Controller) recovering() bool { return c.cfg.UncleanRecovery != RecoveryNone }

// maybeRecover applies rules 1-4 to every partition.
func (c *Controller) maybeRecover(now int64) {
	if !c.recovering() {
		return
	}
	for _, tp := range c.order {
		p := c.partitions[tp]
		r := c.recoveries[tp]
		if r != nil && (p.Leader != kafka.NoLeader || r.epoch != p.PartitionEpoch) {
			delete(c.recoveries, tp)
			r = nil
		}
		if p.Leader != kafka.NoLeader {
			continue
		}
		if r == nil {
			r = &recovery{epoch: p.PartitionEpoch, asked: map[int32]int64{}, answers: map[int32]kafka.LogEnd{}}
		}
		for id, inc := range r.asked {
			if b := c.brokers[id]; !c.active(id) || b.incarnation != inc {
				delete(r.asked, id)
				delete(r.answers, id)
			}
		}
		for _, id := range p.Replicas {
			if _, ok := r.asked[id]; !ok && c.active(id) {
				c.ask(p, r, id, now)
			}
		}
		if len(r.asked) == 0 {
			delete(c.recoveries, tp) // nobody to ask: the next live replica begins anew
			continue
		}
		c.recoveries[tp] = r
		c.maybeDecide(p, r, now)
	}
}

func (c *Controller) ask(p *kafka.PartitionState, r *recovery, id int32, now int64) {
	inc := c.brokers[id].incarnation
	r.asked[id] = inc
	r.started = now
	c.asks = append(c.asks, kafka.ReplicaLogInfoRequest{TopicPartition: p.TopicPartition, BrokerID: id, Incarnation: inc, PartitionEpoch: r.epoch})
}

// ReplicaLogInfo takes a replica's answer to an unclean recovery's
// question, and elects if the recovery may now decide. An answer the
// recovery in flight did not ask for (another incarnation, another
// partition epoch, a recovery that ended) changes nothing and is refused
// with ErrNotAsked.
func (c *Controller) ReplicaLogInfo(ans kafka.ReplicaLogInfo, now int64) error {
	r, ok := c.recoveries[ans.TopicPartition]
	if !ok || r.epoch != ans.PartitionEpoch {
		return fmt.Errorf("log end of %s from broker %d for partition epoch %d: %w", ans.TopicPartition, ans.BrokerID, ans.PartitionEpoch, ErrNotAsked)
	}
	if inc, asked := r.asked[ans.BrokerID]; !asked || inc != ans.Incarnation {
		return fmt.Errorf("log end of %s from broker %d incarnation %d: %w", ans.TopicPartition, ans.BrokerID, ans.Incarnation, ErrNotAsked)
	}
	r.answers[ans.BrokerID] = ans.LogEnd
	c.maybeDecide(c.partitions[ans.TopicPartition], r, now)
	return nil
}

// maybeDecide elects p's leader if r may decide (rules 3 and 4), and asks
// the silent replicas again once the timeout has passed without that.
func (c *Controller) maybeDecide(p *kafka.PartitionState, r *recovery, now int64) {
	missing := false
	if c.cfg.UncleanRecovery == RecoveryBalanced {
		for _, id := range c.lastKnown(p) {
			if _, ok := r.answers[id]; !ok {
				missing = true
			}
		}
	}
	timedOut := now-r.started >= c.cfg.UncleanRecoveryTimeoutMs
	if !missing && len(r.answers) > 0 && (len(r.answers) == len(r.asked) || timedOut) {
		c.electRecovered(p, r, now)
		return
	}
	if timedOut {
		for _, id := range p.Replicas {
			_, asked := r.asked[id]
			if _, answered := r.answers[id]; asked && !answered {
				c.ask(p, r, id, now)
			}
		}
		r.started = now
	}
}

// lastKnown lists p's last-known members: those that may hold every
// committed record, its ISR (the members kept while offline) and its
// eligible leader replicas.
func (c *Controller) lastKnown(p *kafka.PartitionState) []int32 {
	return append(slices.Clone(p.ISR), c.elr[p.TopicPartition]...)
}

// electRecovered elects the replica whose answer ranks highest (rule 5).
func (c *Controller) electRecovered(p *kafka.PartitionState, r *recovery, now int64) {
	best, bestEnd := kafka.NoLeader, kafka.LogEnd{}
	for _, id := range p.Replicas {
		if e, ok := r.answers[id]; ok && (best == kafka.NoLeader || e.Compare(bestEnd) > 0) {
			best, bestEnd = id, e
		}
	}
	var answers []ReplicaEnd
	for _, id := range slices.Sorted(maps.Keys(r.answers)) {
		answers = append(answers, ReplicaEnd{Broker: id, LogEnd: r.answers[id]})
	}
	delete(c.recoveries, p.TopicPartition)
	delete(c.brokers[best].lost, p.TopicPartition)
	next := p.Clone()
	next.Leader = best
	next.ISR = []int32{best}
	c.apply(p, next, ElectionRecovery, -1, now)
	c.events[len(c.events)-1].Ends = answers // apply recorded the election last
}

// Recovery describes tp's unclean recovery in flight, for traces and
// tests: the replicas asked and those that answered, sorted; ok is false
// when none is in flight.
func (c *Controller) Recovery(tp kafka.TopicPartition) (asked, answered []int32, ok bool) {
	r, ok := c.recoveries[tp]
	if !ok {
		return nil, nil, false
	}
	return slices.Sorted(maps.Keys(r.asked)), slices.Sorted(maps.Keys(r.answers)), true
}

// checkRecovery checks p against the rules: an offline partition with an
// active replica has a recovery in flight, of its partition epoch, whose
// questions and answers are its replicas'.
func (c *Controller) checkRecovery(p *kafka.PartitionState) error {
	r, ok := c.recoveries[p.TopicPartition]
	if !c.recovering() || p.Leader != kafka.NoLeader {
		if ok {
			return fmt.Errorf("unclean recovery in flight although the partition has leader %d or recovery is off", p.Leader)
		}
		return nil
	}
	if !ok {
		for _, id := range p.Replicas {
			if c.active(id) {
				return fmt.Errorf("offline with replica %d alive and no unclean recovery in flight", id)
			}
		}
		return nil
	}
	if r.epoch != p.PartitionEpoch {
		return fmt.Errorf("unclean recovery of partition epoch %d in flight at partition epoch %d", r.epoch, p.PartitionEpoch)
	}
	for id := range r.asked {
		if !slices.Contains(p.Replicas, id) {
			return fmt.Errorf("unclean recovery asked broker %d, not a replica", id)
		}
	}
	for id := range r.answers {
		if _, asked := r.asked[id]; !asked {
			return fmt.Errorf("unclean recovery holds an answer of broker %d, which it did not ask", id)
		}
	}
	return nil
}
