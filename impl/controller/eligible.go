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
//     its members from then on), and at an unclean election (the new
//     leader's log is the truth from then on).
//  4. A member leaves as it registers a restart that may have lost what
//     it had reported (no Registration.Synced: KIP-966's unclean shutdown)
//     or that lost this partition's records (Registration.Lost).
//
// Differences from KIP-966, on purpose: the last ISR member stays in the
// ISR when it dies, as before (so the ISR is never empty), rather than
// moving to the ELR; there is no last-known ELR and no unclean recovery
// that asks replicas for their log ends; the ELR is not in any answer to
// clients (Kafka shows it in DescribeTopicPartitions).

// eligibleMin is p's min ISR for the ELR rules; below 2 there is no ELR.
func (c *Controller) eligibleMin(p *kafka.PartitionState) int {
	return min(c.cfg.EligibleMinISR, len(p.Replicas))
}

// updateELR applies rules 1-3 to p, which just moved from old.
func (c *Controller) updateELR(old kafka.PartitionState, p *kafka.PartitionState, kind EventKind) {
	tp := p.TopicPartition
	minISR := c.eligibleMin(p)
	if minISR < 2 || kind == ElectionUnclean || len(p.ISR) >= minISR {
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
		if !slices.Contains(p.ISR, r) && !slices.Contains(elr, r) && !c.lostData(r, tp) {
			elr = append(elr, r)
		}
	}
	c.setELR(tp, elr)
}

// leaveELR applies rule 4 to broker id, registering a new process.
func (c *Controller) leaveELR(id int32, reg Registration) {
	for tp, elr := range c.elr {
		if slices.Contains(elr, id) && (!reg.Synced || slices.Contains(reg.Lost, tp)) {
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
