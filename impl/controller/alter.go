package controller

import (
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// AlterPartition applies a leader's proposed ISR if the proposal is current.
// Checks run in this order, the first failure deciding the answer:
//   - kafka.ErrStaleBrokerEpoch: the sender is unknown or its incarnation is not the
//     registered one (it restarted since).
//   - kafka.ErrUnknownTopicOrPartition: no such partition.
//   - kafka.ErrNotController: LeaderEpoch or PartitionEpoch is above the
//     partition's, so another controller gave them out (Kafka 4.1's
//     ReplicationControlManager answers so, to send the leader looking for
//     the active controller).
//   - kafka.ErrFencedLeaderEpoch: LeaderEpoch is below the partition's leader epoch.
//   - kafka.ErrInvalidRequest: the sender does not lead the partition (as
//     Kafka 4.1 answers).
//   - kafka.ErrInvalidUpdateVersion: PartitionEpoch is below the partition's epoch; the
//     proposal was made from a state that has since changed.
//   - kafka.ErrInvalidRequest: NewISR is empty, repeats a broker, names a non-replica,
//     or leaves out the leader; or NewISRIncarnations has the wrong length.
//   - kafka.ErrIneligibleReplica: NewISR adds a broker that is dead, or whose
//     incarnation in NewISRIncarnations is not the registered one (unless
//     ISRWithoutBrokerEpoch, KAFKA-14139). Members already in the ISR are
//     not checked: removing a broker is always safe.
//
// On success the ISR becomes NewISR, sorted, and the partition epoch grows by
// one; a proposal equal to the current ISR changes nothing. The answer, to
// req.LeaderID, is in the next Ready (Answers), after the state it made.
func (c *Controller) AlterPartition(req kafka.AlterPartition, now int64) {
	c.answers = append(c.answers, Answer{Broker: req.LeaderID, Msg: c.alterPartition(req, now)})
}

func (c *Controller) alterPartition(req kafka.AlterPartition, now int64) kafka.AlterPartitionAnswer {
	b, ok := c.brokers[req.LeaderID]
	if !ok || b.incarnation != req.LeaderIncarnation {
		return c.refuse(req, kafka.ErrStaleBrokerEpoch)
	}
	p, ok := c.partitions[req.TopicPartition]
	if !ok {
		return kafka.AlterPartitionAnswer{TopicPartition: req.TopicPartition, ProposalID: req.ProposalID, Err: kafka.ErrUnknownTopicOrPartition}
	}
	switch {
	case req.LeaderEpoch > p.LeaderEpoch, req.PartitionEpoch > p.PartitionEpoch:
		// Epochs this controller never gave out: another controller did.
		return c.refuse(req, kafka.ErrNotController)
	case req.LeaderEpoch < p.LeaderEpoch:
		return c.refuse(req, kafka.ErrFencedLeaderEpoch)
	case req.LeaderID != p.Leader:
		return c.refuse(req, kafka.ErrInvalidRequest)
	case req.PartitionEpoch < p.PartitionEpoch:
		return c.refuse(req, kafka.ErrInvalidUpdateVersion)
	}
	isr := slices.Sorted(slices.Values(req.NewISR))
	if err := c.checkISR(p, req, isr); err != nil {
		return c.refuse(req, err)
	}
	next := p.Clone()
	for _, r := range isr {
		if b := c.brokers[r]; b != nil && !slices.Contains(p.ISR, r) {
			// Added by a leader that holds the data: it holds the HW again.
			delete(b.lost, req.TopicPartition)
			delete(b.suspect, req.TopicPartition)
		}
	}
	next.ISR = isr
	c.apply(p, next, ISRChange, req.LeaderID, now)
	return kafka.AlterPartitionAnswer{TopicPartition: req.TopicPartition, ProposalID: req.ProposalID, State: p.Clone()}
}

// checkISR validates a proposed ISR (already sorted) against p.
func (c *Controller) checkISR(p *kafka.PartitionState, req kafka.AlterPartition, isr []int32) error {
	if len(isr) == 0 || len(slices.Compact(slices.Clone(isr))) != len(isr) {
		return kafka.ErrInvalidRequest
	}
	if req.NewISRIncarnations != nil && len(req.NewISRIncarnations) != len(req.NewISR) {
		return kafka.ErrInvalidRequest
	}
	if !slices.Contains(isr, p.Leader) {
		return kafka.ErrInvalidRequest
	}
	for _, r := range isr {
		if !slices.Contains(p.Replicas, r) {
			return kafka.ErrInvalidRequest
		}
	}
	for i, r := range req.NewISR {
		if slices.Contains(p.ISR, r) {
			continue
		}
		b, ok := c.brokers[r]
		if !ok || !b.alive || b.shuttingDown {
			// KIP-841: a fenced broker, or one in a controlled shutdown,
			// does not join an ISR.
			return kafka.ErrIneligibleReplica
		}
		if req.NewISRIncarnations != nil && req.NewISRIncarnations[i] != b.incarnation && !c.cfg.ISRWithoutBrokerEpoch {
			// KIP-903: the leader saw another process of r fetch.
			return kafka.ErrIneligibleReplica
		}
	}
	return nil
}

// refuse answers req with err and the partition's current state.
func (c *Controller) refuse(req kafka.AlterPartition, err error) kafka.AlterPartitionAnswer {
	st, _ := c.Partition(req.TopicPartition)
	return kafka.AlterPartitionAnswer{TopicPartition: req.TopicPartition, ProposalID: req.ProposalID, Err: err, State: st}
}
