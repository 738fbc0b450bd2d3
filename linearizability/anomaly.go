package linearizability

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// Anomaly names, as spec/SEMANTICS.md's table "Anomalies the checkers name"
// spells them.
const (
	// AnomalyInconsistentOffsets: one offset was observed holding two
	// different records.
	AnomalyInconsistentOffsets = "inconsistent-offsets"
	// AnomalyDuplicate: one record value stands at two offsets.
	AnomalyDuplicate = "duplicate"
	// AnomalyLostWrite: a record that must have committed is no longer at its
	// offset in a read that began after it committed.
	AnomalyLostWrite = "lost-write"
	// AnomalyUnseen: an acknowledged write that no read returned, in a run
	// whose final reads read the partition to its end, and that no
	// reported log start offset passed (retention may delete it unread).
	AnomalyUnseen = "unseen"
	// AnomalyDeletedUncommitted: a fetch answer's log start offset was
	// past its HW: retention deleted records that were not committed.
	AnomalyDeletedUncommitted = "deleted-uncommitted"
	// AnomalyReadUncommitted: a read returned a record that a read begun
	// after it returned found gone or replaced.
	AnomalyReadUncommitted = "read-uncommitted"
	// AnomalyReadOfFailedWrite: a read returned a record whose produce got a
	// definite error.
	AnomalyReadOfFailedWrite = "read-of-failed-write"
	// AnomalyPollSkip: a consumer's next read of a partition started past
	// the offset after its previous read.
	AnomalyPollSkip = "poll-skip"
	// AnomalyNonmonotonicPoll: a consumer's next read of a partition started
	// at or before the last offset it had read.
	AnomalyNonmonotonicPoll = "nonmonotonic-poll"
	// AnomalyNonmonotonicSend: a producer's acknowledged send landed at or
	// before the offset of its previous acknowledged send to the partition.
	AnomalyNonmonotonicSend = "nonmonotonic-send"
	// AnomalyDedupFailure: an idempotent write (one PID, epoch and
	// sequence, however often retried) was appended at two offsets.
	AnomalyDedupFailure = "dedup-failure"
	// AnomalyStaleGenerationCommit: a group accepted a member's commit from
	// a generation older than one a member of the group had already
	// learnt written (from a SyncGroup answer: a JoinGroup answer's may be
	// lost with its coordinator).
	AnomalyStaleGenerationCommit = "stale-generation-commit"
	// AnomalyDoubleAssignment: one partition was assigned to two members of
	// a group in one generation.
	AnomalyDoubleAssignment = "double-assignment"
	// AnomalyLostCommit: an offset-fetch returned less than an accepted
	// commit before it, and no later commit can have lowered it.
	AnomalyLostCommit = "lost-commit"
	// AnomalyReprocessed: a group's application processed one record more
	// than once (at-least-once allows it; at-most-once does not).
	AnomalyReprocessed = "reprocessed"
	// AnomalyUnprocessed: a record below the group's committed offset that
	// the group's application never processed (at-most-once allows it;
	// at-least-once does not).
	AnomalyUnprocessed = "unprocessed"
	// AnomalyForeignRecord: a read returned a record that no producer of
	// the run sent: another topic's, another run's, or bytes the broker
	// made up. Values carry the run's own id on real clusters, so another
	// run's records never pass for this run's.
	AnomalyForeignRecord = "foreign-record"
)

// AnomalyNames lists the names CheckAnomalies reports, in the order it
// reports them within a partition.
var AnomalyNames = []string{
	AnomalyInconsistentOffsets,
	AnomalyDuplicate,
	AnomalyLostWrite,
	AnomalyUnseen,
	AnomalyDeletedUncommitted,
	AnomalyReadUncommitted,
	AnomalyReadOfFailedWrite,
	AnomalyForeignRecord,
	AnomalyPollSkip,
	AnomalyNonmonotonicPoll,
	AnomalyNonmonotonicSend,
	AnomalyDedupFailure,
	AnomalyStaleGenerationCommit,
	AnomalyDoubleAssignment,
	AnomalyLostCommit,
	AnomalyReprocessed,
	AnomalyUnprocessed,
}

// Anomaly is one violation of the offset rules, with the operations that
// prove it.
type Anomaly struct {
	Name string `json:"name"`
	// Group is the consumer group concerned, "" for the log anomalies.
	Group     string `json:"group,omitempty"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is the offset concerned, -1 if none.
	Offset int64 `json:"offset"`
	// Value is the record concerned, "" if the anomaly is about several.
	Value string `json:"value,omitempty"`
	// Ops are the IDs of the operations that prove it, the evidence first.
	Ops []int `json:"ops"`
	// Detail says what happened in one sentence.
	Detail string `json:"detail"`
}

// TP is the anomaly's partition.
func (a Anomaly) TP() kafka.TopicPartition {
	return kafka.TopicPartition{Topic: a.Topic, Partition: a.Partition}
}

// String renders "topic-partition name: detail".
func (a Anomaly) String() string { return fmt.Sprintf("%s %s: %s", a.TP(), a.Name, a.Detail) }

// CheckAnomalies judges a history by offsets alone and returns every anomaly
// it finds, ordered by partition, then by name (in AnomalyNames order), then
// by offset. It returns nil for a clean history.
//
// Each partition is judged on its own. Records are identified by value
// (values are unique, see FORMAT.md). Observations of the committed log: an
// acks=all produce acknowledged at Offset says its value stands there; every
// record a fetch returned says its value stands at its offset. An acks=1
// acknowledgement is not one: the leader answers before replicating and may
// lose the record and hand its offset to another (spec/SEMANTICS.md), so it only
// takes part in unseen and nonmonotonic-send.
// Time is the history's: op A happened before op B when A.Return < B.Call.
// The rules, per partition:
//
//   - inconsistent-offsets: an offset observed holding two or more values.
//     Ops: for each value, the produce acknowledged there or else the fetch
//     that returned it there first.
//   - duplicate: a value observed at two or more offsets. Offset is the
//     lowest; Ops as above, one per offset.
//   - lost-write: a (value V, offset O) that must have committed (an acks=all
//     produce acknowledged V at O, or a fetch returned V at O) is missing from
//     an ok fetch called after the commit was known (after the earliest
//     return among that produce and those fetches) that covered O. An ok
//     fetch covers [start, last], where start is its requested Offset (its
//     first record when the Offset is negative) and last is its last record;
//     offsets are contiguous on the reference broker (no compaction, no
//     transactions), so an offset inside that range with another value or no
//     record at all is missing. V re-appearing at another offset does not
//     excuse it: the committed log changed. Ops: the evidence, the fetch.
//   - read-uncommitted: a (V, O) a fetch returned is missing, in the sense
//     above, from an ok fetch called after the first such read returned: the
//     broker let a client see a record that was not committed. Every
//     read-uncommitted is also a lost-write (a read proves a commit); they
//     are reported both because they name different failures (HW visibility
//     and durability). Ops: the first read, the fetch that missed it.
//   - unseen: only in a partition with an ok Final fetch. A produce
//     acknowledged with acks 1 or all, before the partition's final reads
//     began (one acknowledged later may have landed past where they read),
//     that no fetch ever returned, whether
//     its offset is below the end of the final reads (they passed over it) or
//     beyond (they never got that far: the log ends before it); but not
//     one below a log start offset a fetch answer reported, returning
//     after the produce was called: retention deleted it. Ops: the produce, the final fetch that read
//     furthest.
//   - deleted-uncommitted: a fetch, ok or OFFSET_OUT_OF_RANGE, whose
//     answer reported a log start offset past its HW: retention deletes
//     only committed records. Ops: the fetch.
//   - read-of-failed-write: a fetch returned a value whose produce has
//     outcome fail. Offset is where it was first read. Ops: produce, fetch.
//   - poll-skip and nonmonotonic-poll: per client and partition, each ok
//     fetch is compared with the ok fetch before it, unless an assign or
//     assignment op of that client on that partition, or a join op of that
//     client (a rebalance, which may move it anywhere), stands between them
//     (called after the earlier fetch was called, before the later one
//     was), or it is the
//     client's first Final fetch (final reads start wherever the harness
//     chose, usually 0). The previous fetch leaves the consumer at next =
//     its last record + 1 (its Offset if it returned nothing). The new fetch
//     starts at its Offset when that is not next, else at its first record
//     (next if it returned nothing): a start past next is a poll-skip
//     (Offset = next, the first offset skipped), a start before next is a
//     nonmonotonic-poll (Offset = the start). Ops: the two fetches.
//     Fetches of different clients are never compared: a partition that
//     moves from one member to another starts afresh at the new one.
//   - nonmonotonic-send: per client and partition, consecutive produces
//     with outcome ok and Offset >= 0, in call order: the later one at an
//     offset <= the earlier one's. Offset is the later one's. Ops: both.
//
// The group rules, with Group set on what they report. Only join and
// assignment ops with outcome ok that returned count; "learnt generation
// G" means such an op of generation G.
//
//   - double-assignment: per group, generation and partition, assignment
//     ops naming two or more different members. Offset -1. Ops: the first
//     assignment to each member, in ID order.
//   - stale-generation-commit: a commit with outcome ok, generation G >= 0,
//     called after some member of its group had learnt a generation newer
//     than G (the op returned before the commit was called). Offset is the
//     commit's. Ops: the op that showed the highest such generation (the
//     first to return), the commit.
//   - lost-commit: per group and partition, an ok offset-fetch F that
//     returned an offset (or -1, none) lower than that of C, the ok commit
//     called latest among those that returned before F was called, when no
//     commit that may have taken effect (outcome ok or unknown) wrote what F
//     returned, was called before F returned, and may have taken effect
//     after C (it returned at or after C's call, or its outcome is
//     unknown). Committed offsets go back only by a later commit. Offset is
//     C's. Ops: C, F. A commit recorded failed with a code that leaves its
//     outcome open (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
//     REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND; see FORMAT.md)
//     counts as unknown: it never is C, but may explain F. An F that a
//     replaced coordinator may have answered (replacedAnswers) and that
//     returned none or what such a commit wrote, called before F returned,
//     is not one.
//
// Where a rule needs one witness among several, it cites the fetch called
// latest. The group anomalies are ordered with the others: by the
// partition their ops name, then by name. It runs in O(n log n) time for n operations and records (the log
// is from sorting each partition's observed offsets, nearly sorted in
// practice, and operations when a client's are out of call order) and,
// besides an index of the operations by partition, holds memory for the
// distinct values and (offset, value) pairs of one partition per CPU, on
// which partitions are judged in parallel. It does not modify h. A history
// that fails Validate gets unspecified anomalies, but no panic.
func CheckAnomalies(h []Op) []Anomaly {
	groups := groupByPartition(h)
	joins := clientJoins(h)
	// Partitions are independent: judge them on all CPUs, each worker
	// reusing its buffers, and concatenate in partition order.
	found := make([][]Anomaly, len(groups))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(groups)) {
		wg.Go(func() {
			c := newPartitionCheck(h, joins)
			for g := int(next.Add(1) - 1); g < len(groups); g = int(next.Add(1) - 1) {
				found[g] = c.run(groups[g].tp, groups[g].ops)
			}
		})
	}
	wg.Wait()
	out := slices.Concat(found...)
	more := checkGroups(h)
	more = append(more, checkProcessing(h)...)
	if len(more) > 0 {
		out = append(out, more...)
		slices.SortStableFunc(out, compareGroupAnomalies)
	}
	return out
}

// partitionOps is one partition's operations, as indexes into the history.
type partitionOps struct {
	tp  kafka.TopicPartition
	ops []int32
}

// groupByPartition returns the produces, fetches, assigns and assignments
// of each partition, partitions in order, operations in history order.
func groupByPartition(h []Op) []partitionOps {
	// Topics are few and usually repeat, so they are interned once and the
	// per-operation lookup hashes two integers instead of a string.
	type key struct{ topic, partition int32 }
	topics := map[string]int32{}
	lastTopic, lastIdx := "", int32(-1)
	at := map[key]int32{}
	var groups []partitionOps
	for i := range h {
		op := &h[i]
		switch op.Kind {
		case KindProduce, KindFetch, KindAssign, KindAssignment:
		default:
			continue
		}
		if lastIdx < 0 || op.Topic != lastTopic {
			t, ok := topics[op.Topic]
			if !ok {
				t = int32(len(topics))
				topics[op.Topic] = t
			}
			lastTopic, lastIdx = op.Topic, t
		}
		k := key{lastIdx, op.Partition}
		g, ok := at[k]
		if !ok {
			g = int32(len(groups))
			at[k] = g
			groups = append(groups, partitionOps{tp: op.TP()})
		}
		groups[g].ops = append(groups[g].ops, int32(i))
	}
	slices.SortFunc(groups, func(a, b partitionOps) int { return kafka.TopicPartition.Compare(a.tp, b.tp) })
	return groups
}

func span(lo, hi int64) string {
	if lo == hi {
		return fmt.Sprintf("offset %d", lo)
	}
	return fmt.Sprintf("offsets %d..%d", lo, hi)
}

// joinAnd renders "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

var anomalyRank = func() map[string]int {
	m := map[string]int{}
	for i, n := range AnomalyNames {
		m[n] = i
	}
	return m
}()

func compareAnomalies(a, b Anomaly) int {
	return cmp.Or(
		cmp.Compare(anomalyRank[a.Name], anomalyRank[b.Name]),
		cmp.Compare(a.Offset, b.Offset),
		strings.Compare(a.Value, b.Value),
		slices.Compare(a.Ops, b.Ops),
	)
}
