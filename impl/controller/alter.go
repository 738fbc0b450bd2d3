package controller

import (
	"slices"
)

// AlterPartitionRequest is a leader's proposal of a new ISR (KIP-497's
// AlterPartition, formerly AlterIsr).
type AlterPartitionRequest struct {
	TopicPartition
	BrokerID          int32   // the sender, which must be the partition's leader
	BrokerIncarnation int64   // the sender's incarnation
	LeaderEpoch       int32   // the leader epoch the sender leads in
	PartitionEpoch    int32   // the partition epoch the proposal was made from
	NewISR            []int32 // the proposed ISR, in any order
	// NewISRIncarnations, if not nil, holds for each member of NewISR the
	// incarnation the leader saw in its fetches (KIP-903's NewIsrWithEpochs).
	// A member added with an incarnation other than its registered one
	// fetched before it restarted, and is ineligible. nil skips the check.
	NewISRIncarnations []int64
}

// AlterPartitionResult is the controller's answer to an AlterPartition.
type AlterPartitionResult struct {
	Error Error
	// State is the partition's state after the request, accepted or not, so
	// that a refused leader learns the current epochs; zero for an unknown
	// partition.
	State PartitionState
}

// AlterPartition applies a leader's proposed ISR if the proposal is current.
// Checks run in this order, the first failure deciding the answer:
//   - StaleBrokerEpoch: the sender is unknown or its incarnation is not the
//     registered one (it restarted since).
//   - UnknownTopicOrPartition: no such partition.
//   - FencedLeaderEpoch: LeaderEpoch is not the partition's leader epoch.
//   - NotLeader: the sender does not lead the partition.
//   - InvalidUpdateVersion: PartitionEpoch is not the partition's epoch; the
//     proposal was made from a state that has since changed.
//   - InvalidRequest: NewISR is empty, repeats a broker, names a non-replica,
//     or leaves out the leader; or NewISRIncarnations has the wrong length.
//   - IneligibleReplica: NewISR adds a broker that is dead, or whose
//     incarnation in NewISRIncarnations is not the registered one. Members
//     already in the ISR are not checked: removing a broker is always safe.
//
// On success the ISR becomes NewISR, sorted, and the partition epoch grows by
// one; a proposal equal to the current ISR changes nothing.
func (c *Controller) AlterPartition(req AlterPartitionRequest, now int64) AlterPartitionResult {
	b, ok := c.brokers[req.BrokerID]
	if !ok || b.incarnation != req.BrokerIncarnation {
		return c.refuse(req.TopicPartition, StaleBrokerEpoch)
	}
	p, ok := c.partitions[req.TopicPartition]
	if !ok {
		return AlterPartitionResult{Error: UnknownTopicOrPartition}
	}
	switch {
	case req.LeaderEpoch != p.LeaderEpoch:
		return c.refuse(req.TopicPartition, FencedLeaderEpoch)
	case req.BrokerID != p.Leader:
		return c.refuse(req.TopicPartition, NotLeader)
	case req.PartitionEpoch != p.PartitionEpoch:
		return c.refuse(req.TopicPartition, InvalidUpdateVersion)
	}
	isr := slices.Sorted(slices.Values(req.NewISR))
	if code := c.checkISR(p, req, isr); code != None {
		return c.refuse(req.TopicPartition, code)
	}
	next := p.Clone()
	next.ISR = isr
	c.apply(p, next, ISRChange, req.BrokerID, now)
	return AlterPartitionResult{Error: None, State: p.Clone()}
}

// checkISR validates a proposed ISR (already sorted) against p.
func (c *Controller) checkISR(p *PartitionState, req AlterPartitionRequest, isr []int32) Error {
	if len(isr) == 0 || len(slices.Compact(slices.Clone(isr))) != len(isr) {
		return InvalidRequest
	}
	if req.NewISRIncarnations != nil && len(req.NewISRIncarnations) != len(req.NewISR) {
		return InvalidRequest
	}
	if !slices.Contains(isr, p.Leader) {
		return InvalidRequest
	}
	for _, r := range isr {
		if !slices.Contains(p.Replicas, r) {
			return InvalidRequest
		}
	}
	for i, r := range req.NewISR {
		if slices.Contains(p.ISR, r) {
			continue
		}
		b, ok := c.brokers[r]
		if !ok || !b.alive {
			return IneligibleReplica
		}
		if req.NewISRIncarnations != nil && req.NewISRIncarnations[i] != b.incarnation {
			return IneligibleReplica
		}
	}
	return None
}

// refuse answers a request for tp with code and the current state.
func (c *Controller) refuse(tp TopicPartition, code Error) AlterPartitionResult {
	st, _ := c.Partition(tp)
	return AlterPartitionResult{Error: code, State: st}
}
