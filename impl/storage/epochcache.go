package storage

// This file does no I/O: the pure partition state machine uses EpochCache
// directly and leaves persisting it (checkpoint.go) to its caller.

import (
	"fmt"
	"sort"
	"strings"
)

// UndefinedEpoch is Kafka's UNDEFINED_EPOCH (-1): no leader epoch, in a request
// or in an OffsetsForLeaderEpoch answer.
const UndefinedEpoch int32 = -1

// UndefinedEpochOffset is Kafka's UNDEFINED_EPOCH_OFFSET (-1): the end offset
// in an OffsetsForLeaderEpoch answer that knows nothing about the epoch asked.
const UndefinedEpochOffset int64 = -1

// EpochEntry records that leader epoch Epoch appended its first batch at
// StartOffset (or, for a leader with nothing appended yet, that its log ended
// there when it took over).
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// EpochCache is the leader-epoch cache of KIP-101: for each leader epoch seen
// in the log, the offset where it starts. An epoch's records end where the
// next epoch in the cache starts, or at the LEO for the latest one.
//
// Invariants:
//  1. Epochs strictly increase along the entries.
//  2. Start offsets strictly increase along the entries.
//  3. Epochs and start offsets are >= 0.
//
// The zero value is an empty cache. Copying an EpochCache shares its entries;
// use Clone for an independent copy.
type EpochCache struct {
	entries []EpochEntry
}

// NewEpochCache returns a cache holding entries, or an error if they break the
// cache's invariants.
func NewEpochCache(entries []EpochEntry) (EpochCache, error) {
	for i, e := range entries {
		if e.Epoch < 0 || e.StartOffset < 0 {
			return EpochCache{}, fmt.Errorf("epoch entry %d: negative epoch %d or start offset %d", i, e.Epoch, e.StartOffset)
		}
		if i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset <= entries[i-1].StartOffset) {
			return EpochCache{}, fmt.Errorf("epoch entry %d (%d@%d) does not follow (%d@%d): epochs and start offsets must increase",
				i, e.Epoch, e.StartOffset, entries[i-1].Epoch, entries[i-1].StartOffset)
		}
	}
	return EpochCache{entries: append([]EpochEntry(nil), entries...)}, nil
}

// Entries returns a copy of the entries, oldest epoch first.
func (c *EpochCache) Entries() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}

// Clone returns a copy that shares nothing with c.
func (c *EpochCache) Clone() EpochCache {
	return EpochCache{entries: c.Entries()}
}

// Latest returns the newest epoch in the cache; ok is false when it is empty.
func (c *EpochCache) Latest() (epoch int32, ok bool) {
	if len(c.entries) == 0 {
		return UndefinedEpoch, false
	}
	return c.entries[len(c.entries)-1].Epoch, true
}

// Assign records that epoch starts at startOffset and reports whether the
// cache changed (so the caller knows to persist it).
//
// Epochs only grow: an epoch <= the latest one is ignored, which makes it
// safe to call Assign for every appended batch. A new epoch first drops the
// entries that start at or after startOffset: their records are no longer in
// the log (it was truncated below them), or they had none (an equal start
// means that epoch appended nothing). Kafka's LeaderEpochFileCache drops the
// same entries. It panics on a negative epoch or offset, which only a bug
// in the caller can produce.
func (c *EpochCache) Assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		panic(fmt.Sprintf("storage: assign epoch %d at offset %d: negative", epoch, startOffset))
	}
	if latest, ok := c.Latest(); ok && epoch <= latest {
		return false
	}
	c.TruncateFromEnd(startOffset)
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// TruncateFromEnd drops the entries that start at or after offset; call it
// after truncating the log to offset, since those epochs no longer have
// records in the log.
func (c *EpochCache) TruncateFromEnd(offset int64) {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= offset })
	clear(c.entries[i:])
	c.entries = c.entries[:i]
}

// EndOffsetFor answers an OffsetsForLeaderEpoch request for epoch as a leader
// whose log ends at leo, following Kafka since KIP-279 (2.0):
//
//   - epoch is the latest in the cache: (epoch, leo).
//   - otherwise, with floor the largest cached epoch <= epoch and next the
//     smallest cached epoch > epoch: (floor, next's start offset). The answer
//     names floor, not epoch: a follower that asked about an epoch the leader
//     never had then looks up where floor ends in its own log and truncates
//     to the smaller of the two ends, instead of trusting an offset that can
//     lie past the point where the two logs diverge (KAFKA-6361).
//   - epoch is older than every entry: (epoch, first entry's start offset):
//     the leader holds nothing from before, so the follower keeps nothing
//     from after that offset.
//   - epoch is newer than every entry, is UndefinedEpoch (negative), or the
//     cache is empty: (UndefinedEpoch, UndefinedEpochOffset), -1/-1. A
//     follower then falls back to truncating to its high watermark.
//
// Kafka 0.11 (KIP-101 alone) answered an epoch older than every entry with
// UNDEFINED_EPOCH_OFFSET instead; EndOffsetKIP101 keeps that variant.
func (c *EpochCache) EndOffsetFor(epoch int32, leo int64) (foundEpoch int32, endOffset int64) {
	if epoch < 0 {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if latest, ok := c.Latest(); ok && epoch == latest {
		return epoch, leo
	}
	next := c.firstAfter(epoch)
	switch {
	case next == len(c.entries):
		return UndefinedEpoch, UndefinedEpochOffset
	case next == 0:
		return epoch, c.entries[0].StartOffset
	default:
		return c.entries[next-1].Epoch, c.entries[next].StartOffset
	}
}

// EndOffsetKIP101 answers an OffsetsForLeaderEpoch request as Kafka 0.11 did,
// before KIP-279: only an end offset, the start of the first cached epoch
// greater than epoch, or leo when epoch is the latest, or UndefinedEpochOffset
// when epoch is older or newer than every entry. Without the floor epoch in
// the answer a follower can keep records the leader never had; it exists so
// that the simulator can run that variant and reproduce KAFKA-6361.
func (c *EpochCache) EndOffsetKIP101(epoch int32, leo int64) int64 {
	if latest, ok := c.Latest(); ok && epoch == latest {
		return leo
	}
	next := c.firstAfter(epoch)
	if next == len(c.entries) || next == 0 {
		return UndefinedEpochOffset
	}
	return c.entries[next].StartOffset
}

// firstAfter returns the index of the first entry with an epoch > epoch.
func (c *EpochCache) firstAfter(epoch int32) int {
	return sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > epoch })
}

// String renders the cache as epoch@startOffset pairs, for logs and tests.
func (c *EpochCache) String() string {
	parts := make([]string, len(c.entries))
	for i, e := range c.entries {
		parts[i] = fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
