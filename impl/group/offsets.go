package group

import (
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// OffsetCommit handles an OffsetCommit. An accepted commit becomes an
// Append; it is answered, and its offsets become visible to OffsetFetch,
// only when AppendDone reports the append committed.
//
// Rules, in Kafka 4.x's order (OffsetMetadataManager.validateOffsetCommit,
// then ClassicGroup.validateOffsetCommit):
//  1. no such group: accepted if Generation < 0 (a "simple" consumer),
//     else ILLEGAL_GENERATION (what OffsetCommit before v9 gets);
//  2. Generation < 0 and the group is Empty: accepted;
//  3. MemberID is not a member: UNKNOWN_MEMBER_ID (a simple commit to a
//     group with members too);
//  4. Generation is not the group's: ILLEGAL_GENERATION;
//  5. the group is CompletingRebalance: REBALANCE_IN_PROGRESS;
//  6. otherwise accepted, also in PreparingRebalance: members of the
//     current generation still own their partitions until the join
//     completes, and the eager protocol commits on revocation just then.
//
// Kafka checked CompletingRebalance first, so that a stale member got
// REBALANCE_IN_PROGRESS there, until KAFKA-8487 (2.4) moved the check after
// the member and the generation, where the Scala coordinator
// (GroupCoordinator.validateOffsetCommit) and Kafka 4.x's keep it.
//
// A failed or timed-out append is answered as writeError maps it.
func (c *Coordinator) OffsetCommit(id uint64, req CommitRequest, now int64) {
	e := c.checkCommit(req, now)
	errs := make([]error, len(req.Offsets))
	var records []Record
	for i, o := range req.Offsets {
		errs[i] = e
		switch {
		case e != nil:
		case o.Topic == "" || o.Partition < 0:
			// Such a key would not decode: Load must read what is written.
			errs[i] = kafka.ErrUnknownTopicOrPartition
		default:
			records = append(records, EncodeOffset(req.Group, o.TopicPartition, &OffsetValue{Offset: o.Offset, Metadata: o.Metadata}))
		}
	}
	if len(records) == 0 {
		c.answer(id, commitAnswer(req.Offsets, errs, nil))
		return
	}
	c.appendRecords(&pendingAppend{group: req.Group, commit: true, request: id,
		offsets: slices.Clone(req.Offsets), errs: errs}, records)
}

func (c *Coordinator) checkCommit(req CommitRequest, now int64) error {
	if e := c.serving(); e != nil {
		return e
	}
	if !validGroupID(req.Group) {
		return kafka.ErrInvalidGroupID
	}
	g := c.groups[req.Group]
	switch {
	case g == nil && req.Generation < 0:
		return nil
	case g == nil:
		return kafka.ErrIllegalGeneration
	case req.Generation < 0 && g.state == Empty:
		return nil
	case g.members[req.MemberID] == nil:
		return kafka.ErrUnknownMemberID
	case req.Generation != g.generation:
		return kafka.ErrIllegalGeneration
	case g.state == CompletingRebalance:
		return kafka.ErrRebalanceInProgress
	}
	g.members[req.MemberID].lastHeard = now
	return nil
}

// commitAnswer answers offsets with errs, and with e those errs leave nil.
func commitAnswer(offsets []OffsetToCommit, errs []error, e error) CommitResponse {
	r := CommitResponse{Partitions: make([]PartitionError, len(offsets))}
	for i, o := range offsets {
		r.Partitions[i] = PartitionError{TopicPartition: o.TopicPartition, Err: e}
		if errs != nil && errs[i] != nil {
			r.Partitions[i].Err = errs[i]
		}
	}
	return r
}

// OffsetFetch answers at once with the committed offsets: -1 for a
// partition without one, and every partition with one when Partitions is
// nil. Commits still waiting on their append are not visible.
func (c *Coordinator) OffsetFetch(id uint64, req FetchOffsetsRequest, _ int64) {
	if e := c.serving(); e != nil {
		c.answer(id, FetchOffsetsResponse{Err: e})
		return
	}
	if !validGroupID(req.Group) {
		c.answer(id, FetchOffsetsResponse{Err: kafka.ErrInvalidGroupID})
		return
	}
	committed := c.offsets[req.Group]
	tps := req.Partitions
	if tps == nil {
		tps = slices.SortedFunc(maps.Keys(committed), kafka.TopicPartition.Compare)
	}
	r := FetchOffsetsResponse{Partitions: make([]FetchedOffset, 0, len(tps))}
	for _, tp := range tps {
		f := FetchedOffset{TopicPartition: tp, Offset: -1}
		if v, ok := committed[tp]; ok {
			f.Offset, f.Metadata = v.Offset, v.Metadata
		}
		r.Partitions = append(r.Partitions, f)
	}
	c.answer(id, r)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
