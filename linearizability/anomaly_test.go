package linearizability

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// hist builds a small history on partition t-0. Each operation is called
// one tick after the previous one returned, so they run one after another,
// unless at gives the next one its own call and return times.
type hist struct {
	ops       []Op
	now       int64
	call, ret int64
	timed     bool
}

// at sets the call and return times of the next operation.
func (b *hist) at(call, ret int64) *hist {
	b.call, b.ret, b.timed = call, ret, true
	return b
}

func (b *hist) add(op Op) int {
	op.ID = len(b.ops)
	op.Topic = "t"
	if b.timed {
		op.Call, op.Return, b.timed = b.call, b.ret, false
	} else {
		op.Call, op.Return = b.now+1, b.now+2
	}
	b.now = max(b.now, op.Return)
	b.ops = append(b.ops, op)
	return op.ID
}

// send is a produce acknowledged with acks=all at offset.
func (b *hist) send(client int, value string, offset int64) int {
	return b.add(Op{Client: client, Kind: KindProduce, Outcome: OutcomeOK, Value: value, Acks: -1, Offset: offset})
}

// sendAcks1 is a produce acknowledged with acks=1 at offset.
func (b *hist) sendAcks1(client int, value string, offset int64) int {
	return b.add(Op{Client: client, Kind: KindProduce, Outcome: OutcomeOK, Value: value, Acks: 1, Offset: offset})
}

// sendFailed is a produce that got a definite error.
func (b *hist) sendFailed(client int, value string) int {
	return b.add(Op{Client: client, Kind: KindProduce, Outcome: OutcomeFail, Error: "NOT_LEADER_OR_FOLLOWER",
		Value: value, Acks: -1, Offset: -1})
}

// sendUnknown is a produce that timed out: it may or may not have landed.
func (b *hist) sendUnknown(client int, value string) int {
	return b.add(Op{Client: client, Kind: KindProduce, Outcome: OutcomeUnknown, Error: "REQUEST_TIMED_OUT",
		Value: value, Acks: -1, Offset: -1})
}

// poll is an ok fetch from offset from that returned values at from,
// from+1, ...
func (b *hist) poll(client int, from int64, values ...string) int {
	return b.pollRecords(client, from, contiguous(from, values...)...)
}

// pollRecords is an ok fetch from offset from that returned recs.
func (b *hist) pollRecords(client int, from int64, recs ...Record) int {
	return b.add(Op{Client: client, Kind: KindFetch, Outcome: OutcomeOK, Offset: from, Records: recs})
}

// finalPoll is an ok final fetch: the partition read to its end.
func (b *hist) finalPoll(client int, from int64, recs ...Record) int {
	return b.add(Op{Client: client, Kind: KindFetch, Outcome: OutcomeOK, Offset: from, Records: recs, Final: true})
}

// assign says client now reads from offset.
func (b *hist) assign(client int, offset int64) int {
	return b.add(Op{Client: client, Kind: KindAssign, Outcome: OutcomeOK, Offset: offset})
}

func rec(offset int64, value string) Record { return Record{Offset: offset, Value: value} }

func contiguous(from int64, values ...string) []Record {
	recs := make([]Record, len(values))
	for i, v := range values {
		recs[i] = rec(from+int64(i), v)
	}
	return recs
}

// summary renders an anomaly without its detail, for comparing.
func summary(a Anomaly) string {
	return fmt.Sprintf("%s at %d %q ops %v", a.Name, a.Offset, a.Value, a.Ops)
}

// check validates the history, checks it and returns the summaries.
func (b *hist) check(t *testing.T) []string {
	t.Helper()
	require.NoError(t, Validate(b.ops))
	var got []string
	for _, a := range CheckAnomalies(b.ops) {
		assert.NotEmpty(t, a.Detail, "anomaly %s has no detail", a.Name)
		got = append(got, summary(a))
	}
	return got
}

// Rule: inconsistent-offsets, one offset observed holding two different
// records.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name".
func TestInconsistentOffsets(t *testing.T) {
	t.Run("has", func(t *testing.T) {
		var b hist
		b.poll(2, 0)
		b.sendUnknown(1, "a")
		b.sendUnknown(1, "b")
		ra := b.poll(2, 0, "a")
		rb := b.at(100, 101).poll(3, 0, "b")
		got := b.check(t)
		assert.Contains(t, got, fmt.Sprintf(`inconsistent-offsets at 0 "" ops [%d %d]`, ra, rb))
		for _, a := range CheckAnomalies(b.ops) {
			if a.Name == AnomalyInconsistentOffsets {
				assert.Equal(t, `offset 0 held "a" (op 3) and "b" (op 4)`, a.Detail)
			}
		}
	})
	t.Run("has with an acks=all acknowledgement", func(t *testing.T) {
		var b hist
		a := b.send(0, "a", 0)
		b.sendUnknown(1, "b")
		r := b.poll(2, 0, "b")
		assert.Contains(t, b.check(t), fmt.Sprintf(`inconsistent-offsets at 0 "" ops [%d %d]`, a, r))
	})
	t.Run("has not", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.sendUnknown(1, "b")
		b.poll(2, 0, "a", "b")
		assert.Empty(t, b.check(t))
	})
	// acks=1 lets the leader lose an acknowledged record and give its
	// offset to another (spec/SEMANTICS.md, Producer): the acknowledgement is not
	// an observation of the committed log.
	t.Run("has not: acks=1 record lost, offset reused", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		b.sendUnknown(1, "b")
		b.poll(2, 0, "b")
		assert.NotContains(t, fmt.Sprint(b.check(t)), AnomalyInconsistentOffsets)
	})
}

// Rule: duplicate, one record value stands at two offsets.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name".
func TestDuplicate(t *testing.T) {
	t.Run("has", func(t *testing.T) {
		var b hist
		s := b.send(0, "a", 0)
		r := b.poll(1, 0, "a", "a")
		assert.Equal(t, []string{
			fmt.Sprintf(`duplicate at 0 "a" ops [%d %d]`, s, r),
		}, b.check(t))
	})
	t.Run("has not", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.poll(1, 0, "a", "b")
		assert.Empty(t, b.check(t))
	})
}

// Rule: lost-write, a write that must have committed (acks=all ok, or seen
// by a read) is missing below an offset that a later read reached.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name".
func TestLostWrite(t *testing.T) {
	t.Run("has: a later read skipped its offset", func(t *testing.T) {
		var b hist
		s := b.send(0, "a", 0)
		b.send(0, "b", 1)
		r := b.pollRecords(1, 0, rec(1, "b"))
		assert.Equal(t, []string{
			fmt.Sprintf(`lost-write at 0 "a" ops [%d %d]`, s, r),
		}, b.check(t))
	})
	t.Run("has: a later read found another record there", func(t *testing.T) {
		// Two facts: the offset held two records, and the committed one went.
		var b hist
		s := b.send(0, "a", 0)
		b.sendUnknown(1, "x")
		r := b.poll(1, 0, "x")
		assert.Equal(t, []string{
			fmt.Sprintf(`inconsistent-offsets at 0 "" ops [%d %d]`, s, r),
			fmt.Sprintf(`lost-write at 0 "a" ops [%d %d]`, s, r),
		}, b.check(t))
	})
	t.Run("has: moving to another offset does not excuse it", func(t *testing.T) {
		var b hist
		s := b.send(0, "a", 0)
		b.sendUnknown(1, "x")
		r := b.poll(1, 0, "x", "a")
		assert.Equal(t, []string{
			fmt.Sprintf(`inconsistent-offsets at 0 "" ops [%d %d]`, s, r),
			fmt.Sprintf(`duplicate at 0 "a" ops [%d %d]`, s, r),
			fmt.Sprintf(`lost-write at 0 "a" ops [%d %d]`, s, r),
		}, b.check(t))
	})
	t.Run("has not: acks=1 promises nothing", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		b.send(0, "b", 1)
		b.pollRecords(1, 0, rec(1, "b"))
		assert.Empty(t, b.check(t))
	})
	t.Run("has not: the read began before the acknowledgement", func(t *testing.T) {
		var b hist
		b.at(1, 10).send(0, "a", 0)
		b.at(2, 3).send(1, "b", 1)
		b.at(5, 6).pollRecords(2, 0, rec(1, "b"))
		assert.Empty(t, b.check(t))
	})
	t.Run("has not: the read did not reach its offset", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.poll(1, 1, "b")
		b.pollRecords(2, -1, rec(1, "b")) // start unknown: covers only [1, 1]
		assert.Empty(t, b.check(t))
	})
}

// Rule: unseen, an acknowledged write never read by the end of a run that
// healed all faults.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name".
func TestUnseen(t *testing.T) {
	t.Run("has: beyond the end of the final read", func(t *testing.T) {
		var b hist
		s := b.sendAcks1(0, "a", 0)
		f := b.finalPoll(1, 0)
		assert.Equal(t, []string{
			fmt.Sprintf(`unseen at 0 "a" ops [%d %d]`, s, f),
		}, b.check(t))
	})
	t.Run("has: passed over by the final read", func(t *testing.T) {
		var b hist
		s := b.sendAcks1(0, "a", 0)
		b.sendAcks1(0, "b", 1)
		f := b.finalPoll(1, 0, rec(1, "b"))
		assert.Equal(t, []string{
			fmt.Sprintf(`unseen at 0 "a" ops [%d %d]`, s, f),
		}, b.check(t))
	})
	t.Run("has not: no final read", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		b.poll(1, 0)
		assert.Empty(t, b.check(t))
	})
	t.Run("has not: read before the final read", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		b.poll(1, 0, "a")
		b.finalPoll(2, 1)
		assert.Empty(t, b.check(t))
	})
	// A write still being retried when the final reads begin may land past
	// where they read: it need not show in them.
	t.Run("has not: acknowledged after the final reads began", func(t *testing.T) {
		var b hist
		b.at(1, 10).sendAcks1(0, "a", 0)
		b.at(5, 6).finalPoll(1, 0)
		assert.Empty(t, b.check(t))
	})
}

// Rule: retention may delete a record before any read: one below a log
// start offset a fetch answer reported is not unseen; one at or above it
// still is, and a log start offset past the answer's HW is
// deleted-uncommitted.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name"; Retention.
func TestUnseenBelowTheLogStart(t *testing.T) {
	// outOfRange is a fetch from 0 answered OFFSET_OUT_OF_RANGE with a log
	// start offset of 2.
	outOfRange := func(b *hist) int {
		return b.add(Op{Client: 1, Kind: KindFetch, Outcome: OutcomeFail, Error: "OFFSET_OUT_OF_RANGE", Code: 1, Offset: 0, HW: 3, LogStart: 2})
	}
	t.Run("has not: deleted below the reported log start", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		b.sendAcks1(0, "b", 1)
		b.sendAcks1(0, "c", 2)
		outOfRange(&b)
		b.add(Op{Client: 1, Kind: KindFetch, Outcome: OutcomeOK, Offset: 2, Records: []Record{rec(2, "c")}, HW: 3, LogStart: 2, Final: true})
		assert.Empty(t, b.check(t))
	})
	t.Run("has: at the log start, unread", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		s := b.sendAcks1(0, "b", 1)
		b.sendAcks1(0, "c", 2)
		b.add(Op{Client: 1, Kind: KindFetch, Outcome: OutcomeFail, Error: "OFFSET_OUT_OF_RANGE", Code: 1, Offset: 0, HW: 3, LogStart: 1})
		f := b.add(Op{Client: 1, Kind: KindFetch, Outcome: OutcomeOK, Offset: 2, Records: []Record{rec(2, "c")}, HW: 3, LogStart: 1, Final: true})
		assert.Equal(t, []string{fmt.Sprintf(`unseen at 1 "b" ops [%d %d]`, s, f)}, b.check(t))
	})
	t.Run("has: below a log start reported before it was written", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		b.sendAcks1(0, "b", 1)
		outOfRange(&b)
		s := b.sendAcks1(0, "z", 1) // acknowledged below the log start 2
		b.sendAcks1(0, "c", 2)
		f := b.add(Op{Client: 1, Kind: KindFetch, Outcome: OutcomeOK, Offset: 2, Records: []Record{rec(2, "c")}, HW: 3, LogStart: 2, Final: true})
		got := b.check(t)
		assert.Contains(t, got, fmt.Sprintf(`unseen at 1 "z" ops [%d %d]`, s, f))
		assert.NotContains(t, got, fmt.Sprintf(`unseen at 1 "b" ops [1 %d]`, f), "b was written before the log start passed it")
	})
	t.Run("has: deleted-uncommitted", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		f := b.add(Op{Client: 1, Kind: KindFetch, Outcome: OutcomeOK, Offset: 3, HW: 2, LogStart: 3})
		assert.Equal(t, []string{fmt.Sprintf(`deleted-uncommitted at 3 "" ops [%d]`, f)}, b.check(t))
	})
	t.Run("has: deleted-uncommitted, out of range", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		f := b.add(Op{Client: 1, Kind: KindFetch, Outcome: OutcomeFail, Error: "OFFSET_OUT_OF_RANGE", Code: 1, Offset: 0, HW: 1, LogStart: 4})
		assert.Equal(t, []string{fmt.Sprintf(`deleted-uncommitted at 4 "" ops [%d]`, f)}, b.check(t))
	})
	t.Run("has not: another error", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 0)
		b.add(Op{Client: 1, Kind: KindFetch, Outcome: OutcomeFail, Error: "NOT_LEADER_OR_FOLLOWER", Code: 6, Offset: 0, LogStart: 4})
		assert.Empty(t, b.check(t))
	})
}

// Rule: read-uncommitted, a read returned a record that later vanished or
// was replaced. A read proves a commit, so it is a lost-write too.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name"; KIP-101,
// scenario 1 (m2 already read, then gone).
func TestReadUncommitted(t *testing.T) {
	t.Run("has", func(t *testing.T) {
		var b hist
		b.sendUnknown(0, "a")
		r1 := b.poll(1, 0, "a")
		b.sendUnknown(0, "b")
		r2 := b.poll(2, 0, "b")
		assert.Equal(t, []string{
			fmt.Sprintf(`inconsistent-offsets at 0 "" ops [%d %d]`, r1, r2),
			fmt.Sprintf(`lost-write at 0 "a" ops [%d %d]`, r1, r2),
			fmt.Sprintf(`read-uncommitted at 0 "a" ops [%d %d]`, r1, r2),
		}, b.check(t))
	})
	t.Run("has: a final read passed over it", func(t *testing.T) {
		var b hist
		b.sendUnknown(0, "a")
		r := b.poll(1, 0, "a")
		b.send(0, "b", 1)
		f := b.finalPoll(2, 0, rec(1, "b"))
		assert.Equal(t, []string{
			fmt.Sprintf(`lost-write at 0 "a" ops [%d %d]`, r, f),
			fmt.Sprintf(`read-uncommitted at 0 "a" ops [%d %d]`, r, f),
		}, b.check(t))
	})
	t.Run("has not: the other read overlapped it", func(t *testing.T) {
		var b hist
		b.sendUnknown(0, "a")
		b.sendUnknown(0, "b")
		r1 := b.at(10, 20).poll(1, 0, "a")
		r2 := b.at(11, 19).poll(2, 0, "b")
		assert.Equal(t, []string{
			fmt.Sprintf(`inconsistent-offsets at 0 "" ops [%d %d]`, r1, r2),
		}, b.check(t))
	})
}

// Rule: read-of-failed-write, a read returned a record whose produce got a
// definite error.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name".
func TestReadOfFailedWrite(t *testing.T) {
	t.Run("has", func(t *testing.T) {
		var b hist
		s := b.sendFailed(0, "a")
		r := b.poll(1, 0, "a")
		assert.Equal(t, []string{
			fmt.Sprintf(`read-of-failed-write at 0 "a" ops [%d %d]`, s, r),
		}, b.check(t))
	})
	t.Run("has not: the outcome was unknown", func(t *testing.T) {
		var b hist
		b.sendUnknown(0, "a")
		b.poll(1, 0, "a")
		assert.Empty(t, b.check(t))
	})
}

// Rule: poll-skip, one consumer, consecutive reads of a partition, no
// reassignment between: the next read starts past last+1.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name".
func TestPollSkip(t *testing.T) {
	t.Run("has: the consumer asked past it", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.send(0, "c", 2)
		r1 := b.poll(3, 0, "a", "b")
		r2 := b.poll(3, 3)
		assert.Equal(t, []string{
			fmt.Sprintf(`poll-skip at 2 "" ops [%d %d]`, r1, r2),
		}, b.check(t))
	})
	t.Run("has: the broker answered past it", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.sendUnknown(0, "c")
		b.sendAcks1(0, "d", 3)
		r1 := b.poll(3, 0, "a")
		r2 := b.pollRecords(3, 1, rec(3, "d"))
		assert.Equal(t, []string{
			fmt.Sprintf(`poll-skip at 1 "" ops [%d %d]`, r1, r2),
		}, b.check(t))
	})
	t.Run("has not: an assign stands between", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.send(0, "c", 2)
		b.poll(3, 0, "a", "b")
		b.assign(3, 3)
		b.poll(3, 3)
		assert.Empty(t, b.check(t))
	})
	t.Run("has not: another consumer", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.send(0, "c", 2)
		b.poll(3, 0, "a", "b")
		b.poll(4, 3)
		assert.Empty(t, b.check(t))
	})
}

// Rule: nonmonotonic-poll, one consumer, consecutive reads of a partition,
// no reassignment between: the next read starts at or before last.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name".
func TestNonmonotonicPoll(t *testing.T) {
	t.Run("has: the consumer asked again", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		r1 := b.poll(2, 0, "a", "b")
		r2 := b.poll(2, 1, "b")
		assert.Equal(t, []string{
			fmt.Sprintf(`nonmonotonic-poll at 1 "" ops [%d %d]`, r1, r2),
		}, b.check(t))
	})
	t.Run("has: records went back, start unknown", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		r1 := b.poll(2, 0, "a", "b")
		r2 := b.pollRecords(2, -1, rec(0, "a"))
		assert.Equal(t, []string{
			fmt.Sprintf(`nonmonotonic-poll at 0 "" ops [%d %d]`, r1, r2),
		}, b.check(t))
	})
	t.Run("has not: an assign stands between", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.poll(2, 0, "a", "b")
		b.assign(2, 1)
		b.poll(2, 1, "b")
		assert.Empty(t, b.check(t))
	})
	t.Run("has: consecutive final reads went back", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		f1 := b.finalPoll(2, 0, contiguous(0, "a", "b")...)
		f2 := b.finalPoll(2, 1, rec(1, "b"))
		assert.Equal(t, []string{
			fmt.Sprintf(`nonmonotonic-poll at 1 "" ops [%d %d]`, f1, f2),
		}, b.check(t))
	})
	t.Run("has not: the final read starts afresh", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.send(0, "b", 1)
		b.poll(2, 0, "a", "b")
		b.finalPoll(2, 0, contiguous(0, "a", "b")...)
		assert.Empty(t, b.check(t))
	})
	t.Run("has not: empty reads at the same offset", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.poll(2, 0, "a")
		b.poll(2, 1)
		b.poll(2, 1)
		assert.Empty(t, b.check(t))
	})
}

// Rule: nonmonotonic-send, one producer, consecutive acknowledged sends to
// a partition land at or before an earlier one.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name".
func TestNonmonotonicSend(t *testing.T) {
	t.Run("has", func(t *testing.T) {
		var b hist
		s1 := b.sendAcks1(0, "a", 5)
		b.sendFailed(0, "x")
		s2 := b.sendAcks1(0, "b", 3)
		assert.Equal(t, []string{
			fmt.Sprintf(`nonmonotonic-send at 3 "b" ops [%d %d]`, s1, s2),
		}, b.check(t))
	})
	t.Run("has: at the same offset", func(t *testing.T) {
		var b hist
		s1 := b.sendAcks1(0, "a", 3)
		s2 := b.sendAcks1(0, "b", 3)
		// acks=1 acknowledgements are not observations of the committed
		// log, so this is not inconsistent-offsets (acks=1 may lose "a").
		assert.Equal(t, []string{
			fmt.Sprintf(`nonmonotonic-send at 3 "b" ops [%d %d]`, s1, s2),
		}, b.check(t))
	})
	t.Run("has: at the same offset, acks=all", func(t *testing.T) {
		var b hist
		s1 := b.send(0, "a", 3)
		s2 := b.send(0, "b", 3)
		assert.Equal(t, []string{
			fmt.Sprintf(`inconsistent-offsets at 3 "" ops [%d %d]`, s1, s2),
			fmt.Sprintf(`nonmonotonic-send at 3 "b" ops [%d %d]`, s1, s2),
		}, b.check(t))
	})
	t.Run("has not: two producers", func(t *testing.T) {
		var b hist
		b.sendAcks1(0, "a", 5)
		b.sendAcks1(1, "b", 3)
		assert.Empty(t, b.check(t))
	})
}

// A partition is judged alone: the same offsets in two partitions do not
// conflict, and anomalies come out partition by partition.
func TestCheckAnomaliesPerPartition(t *testing.T) {
	var b hist
	b.send(0, "a", 0)
	b.ops[len(b.ops)-1].Partition = 1
	b.ops[len(b.ops)-1].Topic = "s"
	b.send(0, "b", 0)
	b.poll(1, 0, "b")
	b.poll(1, 0, "b") // a rewind in partition 0
	r := b.poll(1, 0, "a")
	b.ops[r].Partition = 1
	b.ops[r].Topic = "s"
	got := CheckAnomalies(b.ops)
	require.Len(t, got, 1)
	assert.Equal(t, kafka.TopicPartition{Topic: "t", Partition: 0}, got[0].TP())
	assert.Equal(t, AnomalyNonmonotonicPoll, got[0].Name)
}

// The result does not depend on the order of the history's lines.
func TestCheckAnomaliesOrderIndependent(t *testing.T) {
	var b hist
	b.sendUnknown(0, "a")
	b.poll(1, 0, "a")
	b.sendFailed(0, "b")
	b.poll(2, 0, "b", "a")
	b.poll(2, 1, "a")
	b.sendAcks1(0, "c", 4)
	b.sendAcks1(0, "d", 2)
	b.finalPoll(3, 0, rec(0, "b"))
	want := CheckAnomalies(b.ops)
	require.NotEmpty(t, want)
	rng := rand.New(rand.NewPCG(7, 7))
	for range 10 {
		h := append([]Op(nil), b.ops...)
		rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		assert.Equal(t, want, CheckAnomalies(h))
	}
}

// A realistic clean history: several producers and consumer groups on
// several partitions, overlapping operations, failed and unknown produces,
// all acks levels, seeks, and final reads. No anomaly.
func TestCheckAnomaliesCleanHistory(t *testing.T) {
	for seed := range uint64(5) {
		h := genHistory(seed, genConfig{
			Ops: 20_000, Partitions: 4, Producers: 5, Groups: 2, Members: 3,
			MaxRecords: 8, Faults: true, Final: true,
		})
		require.NoError(t, Validate(h))
		assert.Nil(t, CheckAnomalies(h), "seed %d", seed)
	}
}

// Any history, even one that fails Validate, is judged without a panic.
func TestCheckAnomaliesSurvivesInvalidHistories(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(n int) int64 { return int64(rng.IntN(n)) - 2 }
	for range 200 {
		h := make([]Op, rng.IntN(30))
		for i := range h {
			op := &h[i]
			*op = Op{
				ID: rng.IntN(10), Client: rng.IntN(3), Kind: Kinds[rng.IntN(len(Kinds))],
				Topic: "t", Partition: int32(rng.IntN(2)), Call: pick(20), Return: pick(20),
				Outcome: []Outcome{OutcomeOK, OutcomeFail, OutcomeUnknown}[rng.IntN(3)],
				Value:   string(rune('a' + rng.IntN(4))), Acks: rng.IntN(3) - 1, Offset: pick(8),
				Final: rng.IntN(4) == 0,
			}
			for range rng.IntN(4) {
				op.Records = append(op.Records, rec(pick(8), string(rune('a'+rng.IntN(4)))))
			}
		}
		assert.NotPanics(t, func() { CheckAnomalies(h) })
	}
}

// The clean history stops being clean when one record is tampered with.
func TestCheckAnomaliesCatchesTampering(t *testing.T) {
	gen := func() ([]Op, *Op, int) {
		h := genHistory(43, genConfig{
			Ops: 2_000, Partitions: 2, Producers: 3, Groups: 1, Members: 2,
			MaxRecords: 5, Faults: true, Final: true,
		})
		acked := map[string]bool{}
		for _, op := range h {
			if op.Kind == KindProduce && op.Outcome == OutcomeOK && op.Acks == -1 {
				acked[op.Value] = true
			}
		}
		final := &h[len(h)-1]
		for k, r := range final.Records {
			if k > 0 && acked[r.Value] {
				return h, final, k
			}
		}
		t.Fatal("no acks=all record in the final read")
		return nil, nil, 0
	}

	h, final, k := gen()
	final.Records[k].Value = "forged"
	assert.Contains(t, names(CheckAnomalies(h)), AnomalyInconsistentOffsets)

	h, final, k = gen()
	final.Records = append(final.Records[:k:k], final.Records[k+1:]...)
	assert.Contains(t, names(CheckAnomalies(h)), AnomalyLostWrite)
}

func names(as []Anomaly) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Name)
	}
	return out
}

// Rule: dedup-failure, an idempotent retry of the same (PID, epoch,
// sequence) appended twice.
// Reference: spec/SEMANTICS.md, "Anomalies the checkers name"; Producer.
func TestDedupFailure(t *testing.T) {
	idem := func(b *hist, value string, offset int64) int {
		return b.add(Op{Client: 0, Kind: KindProduce, Outcome: OutcomeOK, Value: value, Acks: -1, Offset: offset,
			ProducerID: 7 << 20, Sequence: 3})
	}
	t.Run("has", func(t *testing.T) {
		var b hist
		p := idem(&b, "a", 0)
		r := b.poll(1, 0, "a", "a")
		got := b.check(t)
		assert.Contains(t, got, fmt.Sprintf(`dedup-failure at 0 "a" ops [%d %d]`, p, r))
		assert.Contains(t, got, fmt.Sprintf(`duplicate at 0 "a" ops [%d %d]`, p, r), "the duplicate is reported as well")
	})
	t.Run("has not: appended once", func(t *testing.T) {
		var b hist
		idem(&b, "a", 0)
		b.poll(1, 0, "a")
		assert.Empty(t, b.check(t))
	})
	t.Run("has not: a duplicate of a non-idempotent write", func(t *testing.T) {
		var b hist
		b.send(0, "a", 0)
		b.poll(1, 0, "a", "a")
		assert.NotContains(t, fmt.Sprint(b.check(t)), AnomalyDedupFailure)
	})
}

// A resend by the application under a new producer id (Op.Resend) that
// lands a second copy is a duplicate, but not a dedup failure: no broker
// saw one (PID, epoch, sequence) twice. Reference: spec/SEMANTICS.md, Producer
// ("A new PID (producer restart) is a new identity: no dedup across
// sessions").
func TestResendAfterProducerRestart(t *testing.T) {
	var b hist
	b.add(Op{Client: 0, Kind: KindProduce, Outcome: OutcomeUnknown, Value: "a", Acks: -1, Offset: -1,
		ProducerID: 1 << 20, Sequence: 0})
	again := b.add(Op{Client: 0, Kind: KindProduce, Outcome: OutcomeOK, Value: "a", Acks: -1, Offset: 1,
		ProducerID: 2 << 20, Sequence: 0, Resend: true})
	r := b.poll(1, 0, "a", "a")
	got := b.check(t)
	assert.Contains(t, got, fmt.Sprintf(`duplicate at 0 "a" ops [%d %d]`, r, again))
	assert.NotContains(t, fmt.Sprint(got), AnomalyDedupFailure)
}

func TestValidateResend(t *testing.T) {
	dup := []Op{
		{ID: 0, Kind: KindProduce, Outcome: OutcomeOK, Value: "a", Acks: -1, Offset: 0, Call: 1, Return: 2},
		{ID: 1, Kind: KindProduce, Outcome: OutcomeOK, Value: "a", Acks: -1, Offset: 1, Call: 3, Return: 4},
	}
	require.ErrorContains(t, Validate(dup), "values must be unique")
	dup[1].Resend = true
	require.NoError(t, Validate(dup))
	lonely := []Op{{ID: 0, Kind: KindProduce, Outcome: OutcomeOK, Value: "a", Acks: -1, Offset: 0, Call: 1, Return: 2, Resend: true}}
	require.ErrorContains(t, Validate(lonely), "no earlier produce")
}

// A read of a record no producer of the run sent (another topic's, as a
// broker that serves an old topic's log under a new name does) is a
// foreign record, named once, and never matched to the run's own sends:
// not a duplicate, not a read of a failed write. The run's own records
// read back are not foreign.
func TestForeignRecord(t *testing.T) {
	var b hist
	b.send(0, "r1/c0-1", 0)
	b.sendFailed(0, "r1/c0-2")
	b.poll(1, 0, "r1/c0-1", "r0/c0-2", "r0/c0-2")
	b.check(t)
	got := CheckAnomalies(b.ops)
	require.Len(t, got, 1, "%v", got)
	assert.Equal(t, AnomalyForeignRecord, got[0].Name)
	assert.Contains(t, got[0].Detail, `"r0/c0-2" at offset 1`)

	var quiet hist
	quiet.send(0, "r1/c0-1", 0)
	quiet.send(0, "r1/c0-2", 1)
	quiet.poll(1, 0, "r1/c0-1", "r1/c0-2")
	assert.Empty(t, quiet.check(t))
}
