package group

import (
	"errors"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// writtenCommit is a commit whose append failed after its records were
// written to the offsets partition: they may still commit.
type writtenCommit struct {
	id uint64
	a  *pendingAppend
}

// writtenError reports whether an append that failed with err had written
// its records: it timed out waiting for the ISR (the broker's deadline,
// offsets.commit.timeout.ms), or the ISR shrank below min.insync.replicas
// after the write. Its records stay in the log and commit when the HW
// passes them, unless a leader change truncates them, which unloads the
// coordinator.
func writtenError(err error) bool {
	return errors.Is(err, kafka.ErrRequestTimedOut) || errors.Is(err, kafka.ErrNotEnoughReplicasAfterAppend)
}

// applyWritten makes the written commits older than append id take
// effect: id committed, and appends of one term are written in id order,
// so the HW passed theirs too. Kafka 4.x's coordinator replays a write's
// records into its state when it appends them and reads at the last
// committed offset (CoordinatorRuntime), so a commit answered
// COORDINATOR_NOT_AVAILABLE after a timeout shows in OffsetFetch once the
// HW passes it; here it shows from the next append that commits, in log
// order, before that append's own effect. Without it the coordinator's
// state and its log disagree: an OffsetFetch answers an offset the log
// has overwritten, and a reload (a failover) brings the commit back after
// the generation that fenced it was stored.
func (c *Coordinator) applyWritten(id uint64) {
	n := 0
	for n < len(c.written) && c.written[n].id < id {
		c.applyCommit(c.written[n].a)
		n++
	}
	c.written = c.written[n:]
}

// applyCommit makes an accepted commit's offsets visible.
func (c *Coordinator) applyCommit(a *pendingAppend) {
	for i, o := range a.offsets {
		if a.errs[i] != nil {
			continue
		}
		if c.offsets[a.group] == nil {
			c.offsets[a.group] = make(map[kafka.TopicPartition]OffsetValue)
		}
		c.offsets[a.group][o.TopicPartition] = OffsetValue{Offset: o.Offset, Metadata: o.Metadata}
	}
}
