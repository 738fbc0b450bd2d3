package linearizability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/spec"
)

// linHistory builds histories for the porcupine tests, one topic-partition
// unless an op says otherwise.
type linHistory struct{ ops []Op }

func (b *linHistory) add(op Op) *Op {
	op.ID = len(b.ops)
	if op.Topic == "" {
		op.Topic = "t"
	}
	b.ops = append(b.ops, op)
	return &b.ops[len(b.ops)-1]
}

// produce records a produce; offset -1 when the client learnt none.
func (b *linHistory) produce(client int, value string, acks int, call, ret int64, outcome Outcome, offset int64) *Op {
	return b.add(Op{Client: client, Kind: KindProduce, Call: call, Return: ret, Outcome: outcome, Value: value, Acks: acks, Offset: offset})
}

// fetch records an ok fetch from offset that returned values at consecutive
// offsets, with the HW the broker reported.
func (b *linHistory) fetch(client int, call, ret, offset, hw int64, values ...string) *Op {
	recs := make([]Record, len(values))
	for i, v := range values {
		recs[i] = Record{Offset: offset + int64(i), Value: v}
	}
	return b.add(Op{Client: client, Kind: KindFetch, Call: call, Return: ret, Outcome: OutcomeOK, Offset: offset, Records: recs, HW: hw})
}

func (b *linHistory) listOffsets(client int, call, ret, hw int64) *Op {
	return b.add(Op{Client: client, Kind: KindListOffsets, Call: call, Return: ret, Outcome: OutcomeOK, Offset: hw})
}

func (b *linHistory) check(t *testing.T) LinearizabilityResult {
	t.Helper()
	require.NoError(t, Validate(b.ops))
	return CheckLinearizability(b.ops, 10*time.Second)
}

const acksAll = -1

// Acknowledged acks=all writes are committed at their offsets, and reads that
// start after them see them there, while a read concurrent with a write may
// or may not. Reference: spec/SEMANTICS.md, Producer, acks=all; Replication.
func TestLinearizableAcksAllWritesAndReads(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 10, OutcomeOK, 0)
	b.produce(1, "b", acksAll, 5, 20, OutcomeOK, 1)
	b.fetch(2, 6, 8, 0, 0)             // concurrent with both: sees nothing yet
	b.fetch(2, 12, 14, 0, 1, "a")      // after a, concurrent with b
	b.fetch(3, 15, 30, 0, 2, "a", "b") // concurrent with b: sees it
	b.fetch(2, 21, 22, 1, 2, "b")
	b.listOffsets(4, 23, 24, 2)
	b.listOffsets(4, 25, 26, 1) // a new leader's HW may lag
	b.fetch(2, 27, 28, 7, 2)    // empty past the end: (HW, LEO] or a lagging leader

	res := b.check(t)
	assert.Equal(t, VerdictOK, res.Verdict)
	require.Len(t, res.Partitions, 1)
	assert.Equal(t, PartitionVerdict{TP: kafka.TopicPartition{Topic: "t", Partition: 0}, Ops: 9, Verdict: VerdictOK}, res.Partitions[0])
}

// "acks=1: ... a leader failure before replication can lose an acknowledged
// record": the lost record's offset is then reused by the next leader, and
// that is not a violation. Reference: spec/SEMANTICS.md, Producer, acks=1;
// Known bugs, "acks=1 loss" (by design).
func TestLinearizableAcks1WriteLostAndOffsetReused(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.produce(0, "lost", 1, 6, 8, OutcomeOK, 1) // leader acked, then died
	b.produce(1, "b", acksAll, 20, 30, OutcomeOK, 1)
	b.fetch(2, 31, 32, 0, 2, "a", "b")

	assert.Equal(t, VerdictOK, b.check(t).Verdict)
}

// An unknown outcome may have taken effect: a timed-out produce that a later
// read shows committed is fine, whenever it committed, even after the client
// gave up on it. Reference: spec/SEMANTICS.md, Producer
// (NOT_ENOUGH_REPLICAS_AFTER_APPEND: "the record may still commit");
// FORMAT.md, outcome "unknown".
func TestLinearizableUnknownProduceCommittedAndRead(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.produce(0, "maybe", acksAll, 6, 100, OutcomeUnknown, -1)
	b.produce(1, "b", acksAll, 110, 120, OutcomeOK, 1) // before "maybe" committed
	b.produce(1, "never", acksAll, 121, 300, OutcomeUnknown, -1)
	b.produce(2, "open", acksAll, 122, -1, OutcomeUnknown, -1) // still open at the end
	b.fetch(3, 200, 210, 0, 4, "a", "b", "maybe", "open")

	assert.Equal(t, VerdictOK, b.check(t).Verdict)
}

// acks=0 sends get no answer: they may be lost, or land after the client
// moved on. Reference: spec/SEMANTICS.md, Producer, acks=0.
func TestLinearizableAcks0(t *testing.T) {
	var b linHistory
	b.produce(0, "fire", 0, 0, 1, OutcomeOK, -1)
	b.produce(0, "forget", 0, 2, 3, OutcomeOK, -1)
	b.fetch(1, 4, 5, 0, 0) // nothing there yet
	b.produce(2, "a", acksAll, 6, 10, OutcomeOK, 0)
	b.fetch(1, 20, 21, 0, 2, "a", "forget")

	assert.Equal(t, VerdictOK, b.check(t).Verdict)
}

// Writes no read returned do not multiply the search: forty concurrent
// unknown produces, then acknowledged writes that pin the log's length.
func TestLinearizableManyUnreadUnknownProduces(t *testing.T) {
	var b linHistory
	for i := range 40 {
		b.produce(i, fmt.Sprintf("u%d", i), acksAll, int64(i), 1000, OutcomeUnknown, -1)
	}
	b.produce(100, "a", acksAll, 50, 60, OutcomeOK, 3) // three of them committed first
	b.fetch(101, 70, 71, 4, 5)
	b.produce(100, "b", acksAll, 80, 90, OutcomeOK, 6) // and one more after
	b.listOffsets(101, 91, 92, 7)

	res := b.check(t)
	assert.Equal(t, VerdictOK, res.Verdict)
	assert.Less(t, res.Elapsed, 5*time.Second)
}

// A write nobody read can still explain the offsets of later writes and the
// HW: it took effect unseen. It cannot before it was called.
// Reference: spec/SEMANTICS.md, Producer (NOT_ENOUGH_REPLICAS_AFTER_APPEND "the
// record may still commit").
func TestUnreadUnknownWriteFillsAnOffset(t *testing.T) {
	t.Run("before an acknowledged write", func(t *testing.T) {
		var b linHistory
		b.produce(0, "unseen", acksAll, 0, 3000, OutcomeUnknown, -1)
		b.produce(1, "a", acksAll, 5, 10, OutcomeOK, 1)
		b.fetch(2, 11, 12, 1, 2, "a")
		assert.Equal(t, VerdictOK, b.check(t).Verdict)
	})
	t.Run("under an HW", func(t *testing.T) {
		var b linHistory
		b.produce(0, "unseen", 0, 0, 1, OutcomeOK, -1) // acks=0
		b.listOffsets(1, 5, 6, 1)
		b.fetch(2, 7, 8, 1, 1)
		assert.Equal(t, VerdictOK, b.check(t).Verdict)
	})
	t.Run("called too late", func(t *testing.T) {
		var b linHistory
		b.produce(1, "a", acksAll, 5, 10, OutcomeOK, 1)
		b.produce(0, "unseen", acksAll, 11, 3000, OutcomeUnknown, -1)
		assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
	})
	t.Run("one write fills one offset", func(t *testing.T) {
		var b linHistory
		b.produce(0, "unseen", acksAll, 0, 3000, OutcomeUnknown, -1)
		b.listOffsets(1, 5, 6, 2)
		assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
	})
	t.Run("a failed write fills nothing", func(t *testing.T) {
		var b linHistory
		b.produce(0, "failed", acksAll, 0, 1, OutcomeFail, -1)
		b.produce(1, "a", acksAll, 5, 10, OutcomeOK, 1)
		assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
	})
}

// Proving a history illegal means trying every linearization, and writes
// nobody read, which may take effect at any later time, multiply them: here
// 30 lost writes, each followed by an acknowledged one, then an impossible
// read. toOperations' reductions 4 and 5 keep this to milliseconds.
func TestIllegalWithManyLostWritesIsDecided(t *testing.T) {
	var b linHistory
	for i := range 30 {
		ts := int64(10 * i)
		b.produce(0, fmt.Sprintf("lost%d", i), acksAll, ts, ts+5, OutcomeUnknown, -1)
		b.produce(1, fmt.Sprintf("a%d", i), acksAll, ts+1, ts+4, OutcomeOK, int64(i))
	}
	b.fetch(2, 400, 401, 0, 1, "ghost")

	res := CheckLinearizability(b.ops, 10*time.Second)
	assert.Equal(t, VerdictIllegal, res.Verdict)
	assert.Less(t, res.Elapsed, 5*time.Second)
}

// A write that was read took effect before the read returned, at the offset
// it was read at, whatever its client learnt.
func TestReadWriteTookEffectBeforeItsRead(t *testing.T) {
	t.Run("legal", func(t *testing.T) {
		var b linHistory
		b.produce(0, "u", acksAll, 0, 3000, OutcomeUnknown, -1)
		b.produce(1, "a", acksAll, 5, 10, OutcomeOK, 0)
		b.fetch(2, 20, 21, 0, 2, "a", "u")
		assert.Equal(t, VerdictOK, b.check(t).Verdict)
	})
	t.Run("read before an acknowledged write at a lower offset", func(t *testing.T) {
		var b linHistory
		b.produce(0, "u", acksAll, 0, 3000, OutcomeUnknown, -1)
		b.fetch(2, 1, 2, 1, 2, "u") // offset 0 was committed by now
		b.produce(1, "a", acksAll, 5, 10, OutcomeOK, 0)
		assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
	})
	t.Run("read before it was written", func(t *testing.T) {
		var b linHistory
		b.fetch(2, 1, 2, 0, 1, "u")
		b.produce(0, "u", acksAll, 5, 3000, OutcomeUnknown, -1)
		assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
	})
}

// An acknowledged acks=all write is committed at its offset and "never
// lost": a read that starts after the acknowledgement and finds another
// record at that offset breaks the spec. Reference: spec/SEMANTICS.md, Producer,
// acks=all; Known bugs, KIP-101 data loss ("acks=all write missing ...
// offset reused").
func TestIllegalAcksAllWriteReplaced(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.produce(0, "m2", acksAll, 6, 10, OutcomeOK, 1)
	b.produce(1, "m3", 1, 11, 12, OutcomeOK, 1) // a new leader reused offset 1
	b.fetch(2, 20, 22, 1, 2, "m3")

	res := b.check(t)
	assert.Equal(t, VerdictIllegal, res.Verdict)
	assert.Equal(t, VerdictIllegal, res.Partitions[0].Verdict)
}

// "Consumers read only below HW", and what is below HW is committed: a read
// of a record that a later read shows replaced read uncommitted data.
// Reference: spec/SEMANTICS.md, Anomalies, read-uncommitted; Known bugs, KIP-101
// data loss ("m2 already read, then gone").
func TestIllegalReadUncommitted(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.produce(0, "m2", 1, 6, 8, OutcomeOK, 1)
	b.fetch(2, 9, 10, 1, 2, "m2") // visible below HW: committed
	b.produce(1, "m3", 1, 20, 22, OutcomeOK, 1)
	b.fetch(2, 30, 31, 0, 2, "a", "m3")

	assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
}

// Two reads that disagree about one offset are illegal whatever their
// timing: the committed log only grows. Reference: spec/SEMANTICS.md, Anomalies,
// inconsistent-offsets.
func TestIllegalConcurrentReadsDisagree(t *testing.T) {
	var b linHistory
	b.produce(0, "x", 1, 0, 50, OutcomeOK, 0)
	b.produce(1, "y", 1, 0, 50, OutcomeOK, 0)
	b.fetch(2, 10, 40, 0, 1, "x")
	b.fetch(3, 10, 40, 0, 1, "y")

	assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
}

// Two acknowledged acks=all writes cannot both be committed at one offset.
// Reference: spec/SEMANTICS.md, Known bugs, KIP-101 divergence ("same offset, two
// records").
func TestIllegalTwoAcksAllAtOneOffset(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 10, OutcomeOK, 0)
	b.produce(1, "b", acksAll, 0, 10, OutcomeOK, 0)

	assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
}

// A definite error means the record was not appended; a read of it breaks
// the spec. Reference: spec/SEMANTICS.md, Anomalies, read-of-failed-write.
func TestIllegalReadOfFailedWrite(t *testing.T) {
	var b linHistory
	b.produce(0, "nope", acksAll, 0, 5, OutcomeFail, -1).Error = "NOT_ENOUGH_REPLICAS"
	b.fetch(1, 10, 11, 0, 0, "nope") // no HW reported: the record alone is judged

	assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
}

// An HW past everything that could be committed makes an uncommitted record
// visible, whether a list-offsets or a fetch reports it.
// Reference: spec/SEMANTICS.md, Replication ("HW: offsets below it are committed").
func TestIllegalHWPastCommitted(t *testing.T) {
	t.Run("list-offsets", func(t *testing.T) {
		var b linHistory
		b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
		b.listOffsets(1, 6, 7, 2)
		assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
	})
	t.Run("fetch", func(t *testing.T) {
		var b linHistory
		b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
		b.fetch(1, 6, 7, 0, 2, "a")
		assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
	})
}

// A log start offset past everything that could be committed says
// retention deleted uncommitted records; one within the committed log is
// legal, with the records above it read as before.
// Reference: spec/SEMANTICS.md, Retention; spec.LogStart.
func TestLogStartPastCommitted(t *testing.T) {
	t.Run("illegal", func(t *testing.T) {
		var b linHistory
		b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
		b.fetch(1, 6, 7, 1, 1).LogStart = 3
		assert.Equal(t, VerdictIllegal, b.check(t).Verdict)
	})
	t.Run("legal", func(t *testing.T) {
		var b linHistory
		b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
		b.produce(0, "b", acksAll, 6, 7, OutcomeOK, 1)
		b.fetch(1, 8, 9, 1, 2, "b").LogStart = 1
		assert.Equal(t, VerdictOK, b.check(t).Verdict)
	})
}

// Partitions are judged apart, and the verdict names the broken one.
func TestLinearizabilityPerPartition(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.fetch(1, 6, 7, 0, 1, "a")
	bad := b.produce(0, "b", acksAll, 0, 5, OutcomeOK, 0)
	bad.Partition = 1
	other := b.fetch(1, 6, 7, 0, 1, "zzz")
	other.Partition = 1
	// The same offsets on another topic are no conflict.
	b.produce(2, "c", acksAll, 0, 5, OutcomeOK, 0).Topic = "s"
	// Assigns and failed reads observe nothing and are not checked.
	b.add(Op{Client: 1, Kind: KindAssign, Call: 8, Return: 8, Outcome: OutcomeOK, Offset: 0})
	b.add(Op{Client: 1, Kind: KindFetch, Call: 9, Return: 10, Outcome: OutcomeFail, Offset: 9, Error: "OFFSET_OUT_OF_RANGE"})

	res := b.check(t)
	assert.Equal(t, VerdictIllegal, res.Verdict)
	assert.Equal(t, []PartitionVerdict{
		{TP: kafka.TopicPartition{Topic: "s", Partition: 0}, Ops: 1, Verdict: VerdictOK},
		{TP: kafka.TopicPartition{Topic: "t", Partition: 0}, Ops: 2, Verdict: VerdictOK},
		{TP: kafka.TopicPartition{Topic: "t", Partition: 1}, Ops: 2, Verdict: VerdictIllegal},
	}, res.Partitions)
}

func TestLinearizableEmptyHistory(t *testing.T) {
	res := CheckLinearizability(nil, 0)
	assert.Equal(t, VerdictOK, res.Verdict)
	assert.Empty(t, res.Partitions)
}

// hardHistory has n reads of an empty log and one read of a value nobody
// wrote, all concurrent. It is illegal, but porcupine only learns that after
// trying the impossible read after every subset of the others: 2^n states.
// (Concurrent unknown produces were the hard case before toOperations'
// reductions 2 to 5; they no longer are.)
func hardHistory(n int) []Op {
	var b linHistory
	for i := range n {
		b.fetch(i, int64(i), 1000, 0, 0)
	}
	b.fetch(n, int64(n), 1000, 0, 1, "ghost")
	return b.ops
}

// A search cut short by the timeout is unknown, never a pass; without a
// timeout the same kind of history, smaller, is found illegal.
func TestLinearizabilityTimeoutIsUnknown(t *testing.T) {
	small := hardHistory(4)
	require.NoError(t, Validate(small))
	assert.Equal(t, VerdictIllegal, CheckLinearizability(small, 0).Verdict)

	// 2^40 states: far beyond 50ms on any machine.
	res := CheckLinearizability(hardHistory(40), 50*time.Millisecond)
	assert.Equal(t, VerdictUnknown, res.Verdict)
	assert.Equal(t, VerdictUnknown, res.Partitions[0].Verdict)
	assert.Less(t, res.Elapsed, 5*time.Second, "the timeout must stop the search")
}

func TestDescribeOperation(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.produce(0, "b", 1, 6, 8, OutcomeUnknown, -1)
	b.fetch(1, 10, 11, 0, 1, "a")
	b.listOffsets(1, 12, 13, 2) // the log is longer than what was read: b may be there
	ops, _, _ := toOperations(b.ops)
	var got []string
	for _, o := range ops {
		got = append(got, describeOperation(o.Input.(*logCall), o.Output.(*logReturn)))
	}
	assert.Equal(t, []string{
		"produce a acks=all → ok @0",
		"produce b acks=1 → unknown (never read)",
		"fetch @0 → [0:a] hw 1",
		"list-offsets → 2",
	}, got)
	assert.Equal(t, int64(14), ops[1].Return, "an unknown outcome returns after everything else")
}

// toOperations, 6: in a partition observed whole, a write nobody read that
// may not have happened is left out; where the log is longer than what was
// observed, it stays, since it may be what fills the gap.
func TestPendingWritesLeftOutWhenTheLogWasObservedWhole(t *testing.T) {
	var whole linHistory
	whole.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	whole.produce(0, "b", 1, 6, 8, OutcomeUnknown, -1)
	whole.fetch(1, 10, 11, 0, 1, "a")
	ops, _, _ := toOperations(whole.ops)
	assert.Len(t, ops, 2, "b cannot stand anywhere anyone looked")
	assert.Equal(t, VerdictOK, CheckLinearizability(whole.ops, 0).Verdict)

	var gap linHistory
	gap.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	gap.produce(0, "b", 1, 6, 8, OutcomeUnknown, -1)
	gap.produce(0, "c", acksAll, 9, 12, OutcomeOK, 2)
	ops, _, _ = toOperations(gap.ops)
	assert.Len(t, ops, 3, "offset 1 was never observed: b may be what stands there")
	assert.Equal(t, VerdictOK, CheckLinearizability(gap.ops, 0).Verdict, "b fills offset 1")

	var lost linHistory
	lost.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	lost.produce(0, "b", acksAll, 6, 8, OutcomeOK, 1)
	lost.produce(0, "c", 1, 6, 8, OutcomeUnknown, -1)
	lost.fetch(1, 10, 11, 0, 1, "a")
	lost.fetch(1, 12, 13, 1, 1, "x")
	assert.Equal(t, VerdictIllegal, CheckLinearizability(lost.ops, 0).Verdict, "leaving c out must not hide a lost acks=all write")
}

// The generated clean history the benchmark checks is linearizable, and
// changing one record a read returned makes it illegal.
func TestCleanGeneratedHistory(t *testing.T) {
	h := cleanPartitionHistory(7, 1000)
	require.NoError(t, Validate(h))
	assert.Equal(t, VerdictOK, CheckLinearizability(h, time.Minute).Verdict)

	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Kind == KindFetch && len(h[i].Records) > 0 {
			h[i].Records[0].Value = "tampered"
			break
		}
	}
	assert.Equal(t, VerdictIllegal, CheckLinearizability(h, time.Minute).Verdict)
}

func logOf(values ...string) spec.Log {
	var l spec.Log
	for _, v := range values {
		l = l.Append(v)
	}
	return l
}

// The model's state is a set: duplicates merge, order does not matter, of
// two states with one log the one with more pending writes stays, and it is
// all the same past the size where lookups switch to an index.
func TestCandidatesAreASet(t *testing.T) {
	for _, n := range []int{3, 3 * indexAbove} {
		var forward, backward candidateBuilder
		for i := range n {
			forward.add(logState{log: logOf("a", fmt.Sprint(i))})
			forward.add(logState{log: logOf("a", fmt.Sprint(i))}) // built apart, equal
		}
		for i := n - 1; i >= 0; i-- {
			backward.add(logState{log: logOf("a", fmt.Sprint(i))})
		}
		assert.Len(t, forward.c.states, n)
		assert.True(t, forward.c.equal(&backward.c), "n=%d", n)
		assert.Equal(t, forward.c.hash, backward.c.hash)

		backward.add(logState{log: logOf("a", "0"), pending: 2})
		assert.Len(t, backward.c.states, n)
		assert.False(t, forward.c.equal(&backward.c), "pending writes count")
		forward.add(logState{log: logOf("a", "0"), pending: 1})
		forward.add(logState{log: logOf("a", "0"), pending: 2})
		forward.add(logState{log: logOf("a", "0"), pending: 0})
		assert.True(t, forward.c.equal(&backward.c), "the most pending writes stay")
		assert.Equal(t, forward.c.hash, backward.c.hash)

		backward.add(logState{log: logOf("b")})
		assert.False(t, forward.c.equal(&backward.c))
	}
}

// A step over a large set stops when the timeout's context is done.
func TestCandidatesStepStopsOnTimeout(t *testing.T) {
	var b candidateBuilder
	for i := range 1000 {
		b.add(logState{log: logOf(fmt.Sprint(i))})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	_, ok := b.c.step(ctx, func(s logState, add func(logState)) { calls++; add(s) })
	assert.False(t, ok)
	assert.Less(t, calls, 100)

	next, ok := b.c.step(context.Background(), func(s logState, add func(logState)) {
		if s.log.Len() == 1 {
			add(logState{log: s.log.Append("x"), pending: 1})
		}
	})
	require.True(t, ok)
	assert.Len(t, next.states, 1000)
	assert.Equal(t, "one of {len 2 [0:0 1:x] +1 pending | len 2 [0:1 1:x] +1 pending | len 2 [0:2 1:x] +1 pending | len 2 [0:3 1:x] +1 pending | 996 more}", next.describe())
}
