package controller

import (
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// Eligible leader replicas (KIP-966).
//
// A leader moves its HW only while its ISR has min.insync.replicas members
// (partition maybeAdvanceHW). So a replica that leaves the ISR while the
// ISR is, or becomes, smaller than that holds every record committed until
// the ISR is back at min ISR: it is as good a leader as an ISR member.
// The controller keeps these replicas per partition and elects one when no
// ISR member can lead: the last ISR member died for good, or came back
// having lost the partition's data (a damaged log, an empty disk). Without
// them such a partition stays offline although a replica holds its data.
//
// The rules, applied after every change of a partition (updateELR) and as
// a broker registers a restart (leaveELR):
//  1. Replicas that leave the ISR join the ELR when the new ISR is below
//     min ISR and they did not lose the partition's data.
//  2. No ISR member is in the ELR: one that joins the ISR leaves it.
//  3. The ELR empties once the ISR is back at min ISR (the HW may move past
//     its members from then on), and at an unclean election or recovery
//     (the new leader's log is the truth from then on).
//  4. A member leaves as it registers a restart that may have lost what
//     it had reported (no Registration.Synced: KIP-966's unclean shutdown)
//     or that lost this partition's records (Registration.Lost).
//  5. A replica whose restart was unclean joins no ELR, and, as the last
//     ISR member, does not lead while the ELR is not empty (KIP-966: the
//     replica that may have lost records waits for one known to hold
//     them, alive or not); with an empty ELR it leads, as before KIP-966.
//     Both hold until it leads, or a leader adds it back to the ISR.
//
// Differences from KIP-966, on purpose: the last ISR member stays in the
// ISR when it dies, as before (so the ISR is never empty), rather than
// moving to the ELR; there is no last-known ELR (the unclean recovery of
// recovery.go waits for the ISR's kept members and the ELR instead); the
// ELR is not in any answer to clients (Kafka shows it in
// DescribeTopicPartitions).

// suspect reports whether broker id's current process restarted
// uncleanly and has not been back in tp's ISR since (rule 5).
func (c *Controller) suspect(id int32, tp kafka.TopicPartition) bool {
	b, ok := c.brokers[id]
	return ok && b.suspect[tp]
}

// yields reports whether l, the one live candidate of isr, must wait for
// p's eligible leader replicas (rule 5).
func (c *Controller) yields(p *kafka.PartitionState, isr []int32, l int32) bool {
	return len(isr) == 1 && c.suspect(l, p.TopicPartition) && len(c.elr[p.TopicPartition]) > 0
}

// WaitsForEligible reports whether tp is offline only because its last
// ISR member, back from an unclean restart, waits for an eligible leader
// replica (rule 5); for traces that compare with a model without ELR.
func (c *Controller) WaitsForEligible(tp kafka.TopicPartition) bool {
	p, ok := c.partitions[tp]
	if !ok || p.Leader != kafka.NoLeader {
		return false
	}
	for _, r := range p.ISR {
		if c.active(r) && !c.lostData(r, tp) && c.yields(p, p.ISR, r) {
			return true
		}
	}
	return false
}

// replicaOf lists the partitions broker id is a replica of.
func (c *Controller) replicaOf(id int32) []kafka.TopicPartition {
	var tps []kafka.TopicPartition
	for _, tp := range c.order {
		if slices.Contains(c.partitions[tp].Replicas, id) {
			tps = append(tps, tp)
		}
	}
	return tps
}

// eligibleMin is p's min ISR for the ELR rules: its topic's
// min.insync.replicas where it has one, else EligibleMinISR (the
// brokers'); 0 when the rules are off; below 2 there is no ELR.
func (c *Controller) eligibleMin(p *kafka.PartitionState) int {
	if c.cfg.EligibleMinISR == 0 {
		return 0
	}
	m := c.cfg.EligibleMinISR
	if own := c.configs[p.Topic].MinInsyncReplicas; own > 0 {
		m = int(own)
	}
	return min(m, len(p.Replicas))
}

// updateELR applies rules 1-3 to p, which just moved from old.
func (c *Controller) updateELR(old kafka.PartitionState, p *kafka.PartitionState, kind EventKind) {
	tp := p.TopicPartition
	minISR := c.eligibleMin(p)
	if minISR < 2 || kind == ElectionUnclean || kind == ElectionRecovery || len(p.ISR) >= minISR {
		delete(c.elr, tp)
		return
	}
	var elr []int32
	for _, r := range c.elr[tp] {
		if !slices.Contains(p.ISR, r) {
			elr = append(elr, r)
		}
	}
	for _, r := range old.ISR {
		if !slices.Contains(p.ISR, r) && !slices.Contains(elr, r) && !c.lostData(r, tp) && !c.suspect(r, tp) {
			elr = append(elr, r)
		}
	}
	c.setELR(tp, elr)
}

// leaveELR applies rule 4 to broker id, registering a new process after
// a clean or an unclean stop.
func (c *Controller) leaveELR(id int32, reg Registration, clean bool) {
	for tp, elr := range c.elr {
		if slices.Contains(elr, id) && (!clean || slices.Contains(reg.Lost, tp)) {
			c.setELR(tp, slices.DeleteFunc(slices.Clone(elr), func(r int32) bool { return r == id }))
		}
	}
}

func (c *Controller) setELR(tp kafka.TopicPartition, elr []int32) {
	if len(elr) == 0 {
		delete(c.elr, tp)
		return
	}
	slices.Sort(elr)
	c.elr[tp] = elr
}

// ELR returns tp's eligible leader replicas, sorted (nil: none).
func (c *Controller) ELR(tp kafka.TopicPartition) []int32 { return slices.Clone(c.elr[tp]) }

// electEligible returns the first ELR member of p, in assignment order,
// that is alive and did not lose p's data.
func (c *Controller) electEligible(p *kafka.PartitionState) (int32, bool) {
	elr := c.elr[p.TopicPartition]
	if len(elr) == 0 {
		return kafka.NoLeader, false
	}
	return c.firstAlive(p.TopicPartition, p.Replicas, elr, false)
}
