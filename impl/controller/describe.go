package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// Describe renders the whole state canonically, one line per broker and per
// partition in sorted order, for scenario tests and traces.
func (c *Controller) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config session-timeout-ms=%d unclean-leader-election=%t auto-leader-rebalance=%t",
		c.cfg.SessionTimeoutMs, c.cfg.UncleanLeaderElection, c.cfg.AutoLeaderRebalance)
	if c.recovering() {
		fmt.Fprintf(&b, " unclean-recovery=%s", c.cfg.UncleanRecovery)
	}
	b.WriteString("\n")
	for _, id := range c.brokerIDs() {
		br := c.brokers[id]
		state := "dead"
		switch {
		case br.alive && br.shuttingDown:
			state = "shutting-down"
		case br.alive:
			state = "alive"
		}
		fmt.Fprintf(&b, "broker %d %s incarnation=%d last-heartbeat=%d\n",
			id, state, br.incarnation, br.lastHeartbeat)
	}
	for _, tp := range c.order {
		fmt.Fprintf(&b, "partition %s", c.partitions[tp])
		if elr := c.elr[tp]; len(elr) > 0 {
			fmt.Fprintf(&b, " elr=%s", ids(elr))
		}
		if asked, answered, ok := c.Recovery(tp); ok {
			fmt.Fprintf(&b, " recovery asked=%s answered=%s", ids(asked), ids(answered))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// CheckInvariants returns an error naming the first invariant of
// kafka.PartitionState or Controller that the current state breaks, or nil. Tests
// and the simulator call it after every step; the controller itself relies
// on the invariants without checking them.
func (c *Controller) CheckInvariants() error {
	if len(c.order) != len(c.partitions) || !slices.IsSortedFunc(c.order, kafka.TopicPartition.Compare) {
		return fmt.Errorf("partition order out of step with partitions")
	}
	for _, tp := range c.order {
		p, ok := c.partitions[tp]
		if !ok {
			return fmt.Errorf("%s: in order but not in partitions", tp)
		}
		if err := c.checkPartition(p); err != nil {
			return fmt.Errorf("%s: %w", tp, err)
		}
		if err := c.checkELR(p); err != nil {
			return fmt.Errorf("%s: %w", tp, err)
		}
		if err := c.checkRecovery(p); err != nil {
			return fmt.Errorf("%s: %w", tp, err)
		}
	}
	for tp := range c.recoveries {
		if _, ok := c.partitions[tp]; !ok {
			return fmt.Errorf("%s: unclean recovery of no partition", tp)
		}
	}
	return nil
}

func (c *Controller) checkPartition(p *kafka.PartitionState) error {
	if len(p.Replicas) == 0 || hasDuplicates(p.Replicas) {
		return fmt.Errorf("replicas %v: empty or repeated", p.Replicas)
	}
	for _, r := range p.Replicas {
		if _, ok := c.brokers[r]; !ok {
			return fmt.Errorf("replica %d: never registered", r)
		}
	}
	if len(p.ISR) == 0 || !slices.IsSorted(p.ISR) || hasDuplicates(p.ISR) {
		return fmt.Errorf("isr %v: empty, unsorted or repeated", p.ISR)
	}
	var dead []int32
	for _, r := range p.ISR {
		if !slices.Contains(p.Replicas, r) {
			return fmt.Errorf("isr member %d is not a replica", r)
		}
		if !c.active(r) {
			dead = append(dead, r)
		}
	}
	if len(dead) > 0 && (len(p.ISR) > 1 || p.Leader != kafka.NoLeader) {
		return fmt.Errorf("isr %v holds dead or stopping %v beside others or under leader %d", p.ISR, dead, p.Leader)
	}
	if p.Leader != kafka.NoLeader {
		if !slices.Contains(p.ISR, p.Leader) {
			return fmt.Errorf("leader %d not in isr %v", p.Leader, p.ISR)
		}
		if !c.active(p.Leader) {
			return fmt.Errorf("leader %d is dead or in a controlled shutdown", p.Leader)
		}
		if c.lostData(p.Leader, p.TopicPartition) && !c.unclean(p.TopicPartition) {
			return fmt.Errorf("leader %d lost the partition's committed records", p.Leader)
		}
		return nil
	}
	for _, r := range p.Replicas {
		if c.active(r) && (c.unclean(p.TopicPartition) || (slices.Contains(p.ISR, r) && !c.lostData(r, p.TopicPartition) && !c.yields(p, p.ISR, r))) {
			return fmt.Errorf("offline although replica %d is alive and eligible", r)
		}
	}
	return nil
}

// checkELR checks p's eligible leader replicas against eligible.go's rules.
func (c *Controller) checkELR(p *kafka.PartitionState) error {
	elr := c.elr[p.TopicPartition]
	if len(elr) == 0 {
		return nil
	}
	if !slices.IsSorted(elr) || hasDuplicates(elr) {
		return fmt.Errorf("elr %v: unsorted or repeated", elr)
	}
	if len(p.ISR) >= c.eligibleMin(p) {
		return fmt.Errorf("elr %v beside isr %v of min isr %d", elr, p.ISR, c.eligibleMin(p))
	}
	for _, r := range elr {
		switch {
		case !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR, r):
			return fmt.Errorf("elr member %d is not a replica, or is in isr %v", r, p.ISR)
		case c.lostData(r, p.TopicPartition):
			return fmt.Errorf("elr member %d lost the partition's committed records", r)
		case c.suspect(r, p.TopicPartition):
			return fmt.Errorf("elr member %d restarted uncleanly and has not been back in the isr", r)
		case p.Leader == kafka.NoLeader && c.active(r):
			return fmt.Errorf("offline although eligible leader replica %d is alive", r)
		}
	}
	return nil
}

// hasDuplicates reports whether an id appears twice in s: a replica list,
// a handful of ids, compared pairwise without allocating (the invariants
// run it on every partition after every simulated step).
func hasDuplicates(s []int32) bool {
	for i := range s {
		if slices.Contains(s[i+1:], s[i]) {
			return true
		}
	}
	return false
}
