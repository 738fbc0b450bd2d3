package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// values renders candidate logs for comparison.
func values(ls []Log) [][]string {
	out := make([][]string, len(ls))
	for i, l := range ls {
		out[i] = l.Values()
	}
	return out
}

// A definite failure never takes effect: the record was not appended.
// Reference: spec/SEMANTICS.md, Producer; FORMAT.md, outcome "fail".
func TestProduceFailedLeavesLog(t *testing.T) {
	l := logOf("a")
	for _, acks := range []int{AcksNone, AcksLeader, AcksAll} {
		got := Produce(l, Write{Value: "v", Acks: acks, Outcome: Failed, Offset: NoOffset})
		assert.Equal(t, [][]string{{"a"}}, values(got), "acks=%d", acks)
	}
}

// "With acks=all ... the leader answers once every replica in the ISR has the
// record (HW has passed it)": an acknowledged record is committed, at the
// offset the broker named, so that offset must be the committed log's end.
// Reference: spec/SEMANTICS.md, Producer, acks=all.
func TestProduceAcksAllCommitsAtItsOffset(t *testing.T) {
	l := logOf("a", "b")
	ok := func(off int64) Write { return Write{Value: "v", Acks: AcksAll, Outcome: Acknowledged, Offset: off} }

	assert.Equal(t, [][]string{{"a", "b", "v"}}, values(Produce(l, ok(2))))
	assert.Empty(t, Produce(l, ok(1)), "offset 1 is taken")
	assert.Empty(t, Produce(l, ok(3)), "offset 3 leaves a hole")
	assert.Equal(t, [][]string{{"a", "b", "v"}}, values(Produce(l, ok(NoOffset))), "offset unknown")
}

// acks=1 (a leader failure before replication can lose an acknowledged
// record), acks=0 (at-most-once) and unknown outcomes may or may not take
// effect; when they do, the record stands where the broker put it.
// Reference: spec/SEMANTICS.md, Producer, acks 0 and 1, NOT_ENOUGH_REPLICAS_AFTER_APPEND.
func TestProduceMayOrMayNotTakeEffect(t *testing.T) {
	l := logOf("a", "b")
	cases := []struct {
		name string
		w    Write
		want [][]string
	}{
		{"acks=1 ok at the end", Write{Value: "v", Acks: AcksLeader, Outcome: Acknowledged, Offset: 2}, [][]string{{"a", "b"}, {"a", "b", "v"}}},
		{"acks=1 ok at a taken offset", Write{Value: "v", Acks: AcksLeader, Outcome: Acknowledged, Offset: 1}, [][]string{{"a", "b"}}},
		{"acks=1 ok past the end", Write{Value: "v", Acks: AcksLeader, Outcome: Acknowledged, Offset: 5}, [][]string{{"a", "b"}}},
		{"acks=0", Write{Value: "v", Acks: AcksNone, Outcome: Acknowledged, Offset: NoOffset}, [][]string{{"a", "b"}, {"a", "b", "v"}}},
		{"acks=all unknown", Write{Value: "v", Acks: AcksAll, Outcome: Unknown, Offset: NoOffset}, [][]string{{"a", "b"}, {"a", "b", "v"}}},
		{"acks=all unknown, offset known", Write{Value: "v", Acks: AcksAll, Outcome: Unknown, Offset: 1}, [][]string{{"a", "b"}}},
		{"acks=1 unknown", Write{Value: "v", Acks: AcksLeader, Outcome: Unknown, Offset: NoOffset}, [][]string{{"a", "b"}, {"a", "b", "v"}}},
		{"odd acks read as 1", Write{Value: "v", Acks: 7, Outcome: Acknowledged, Offset: 2}, [][]string{{"a", "b"}, {"a", "b", "v"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, values(Produce(l, c.w)))
		})
	}
}

// "Consumers read only below HW": a fetch returns a contiguous run of
// committed records from the offset asked for, and an empty answer at any
// offset (in (HW, LEO], a lagging HW, a long poll that timed out).
// Reference: spec/SEMANTICS.md, Replication.
func TestFetch(t *testing.T) {
	l := logOf("a", "b", "c")
	recs := func(off int64, vs ...string) []Record {
		out := make([]Record, len(vs))
		for i, v := range vs {
			out[i] = Record{Offset: off + int64(i), Value: v}
		}
		return out
	}
	cases := []struct {
		name    string
		offset  int64
		records []Record
		legal   bool
	}{
		{"whole log", 0, recs(0, "a", "b", "c"), true},
		{"middle", 1, recs(1, "b"), true},
		{"tail", 2, recs(2, "c"), true},
		{"fewer than committed", 0, recs(0, "a"), true},
		{"empty at the end", 3, nil, true},
		{"empty inside the log", 1, nil, true},
		{"empty past the committed end", 42, nil, true},
		{"wrong value", 1, recs(1, "x"), false},
		{"past the committed end", 2, recs(2, "c", "d"), false},
		{"starts past the committed end", 3, recs(3, "d"), false},
		{"does not start at the offset asked", 0, recs(1, "b"), false},
		{"gap", 0, []Record{{0, "a"}, {2, "c"}}, false},
		{"negative offset", -1, recs(-1, "z", "a"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.legal, Fetch(l, c.offset, c.records))
		})
	}
	assert.False(t, Fetch(Log{}, 0, recs(0, "a")), "nothing is committed yet")
}

// Every leader's HW is at or below the committed end; a new leader's HW can
// lag the old one's, so there is no lower bound.
// Reference: spec/SEMANTICS.md, Replication ("the HW a new leader starts with can
// be behind the old leader's").
func TestListOffsets(t *testing.T) {
	l := logOf("a", "b", "c")
	assert.True(t, ListOffsets(l, 3))
	assert.True(t, ListOffsets(l, 0), "a lagging HW")
	assert.True(t, ListOffsets(l, -1), "no HW tells nothing")
	assert.False(t, ListOffsets(l, 4), "an uncommitted record would be visible")
}

func TestOutcomeString(t *testing.T) {
	assert.Equal(t, "ok", Acknowledged.String())
	assert.Equal(t, "fail", Failed.String())
	assert.Equal(t, "unknown", Unknown.String())
}

// An idempotent retry of a record already in the log is answered with the
// original offset and not appended again; acknowledged anywhere else, it is
// illegal. Reference: spec/SEMANTICS.md, Producer (dedup window).
func TestProduceDedupRule(t *testing.T) {
	l := Log{}.Append("a").Append("b")
	retry := Write{Value: "a", Acks: AcksAll, Outcome: Acknowledged, Offset: 0, Idempotent: true}
	got := Produce(l, retry)
	if len(got) != 1 || !got[0].Equal(l) {
		t.Fatalf("dedup: got %v, want the log unchanged", got)
	}
	plain := retry
	plain.Idempotent = false
	if got := Produce(l, plain); len(got) != 0 {
		t.Fatalf("a non-idempotent write acknowledged at a taken offset must be illegal, got %v", got)
	}
	elsewhere := Write{Value: "a", Acks: AcksAll, Outcome: Acknowledged, Offset: 1, Idempotent: true}
	if got := Produce(l, elsewhere); len(got) != 0 {
		t.Fatalf("an idempotent write acknowledged where another record stands must be illegal, got %v", got)
	}
}

// Retention deletes only committed records: the log start offset a broker
// reports is within the committed log.
// Reference: spec/SEMANTICS.md, Retention.
func TestLogStartWithinTheCommittedLog(t *testing.T) {
	l := logOf("a", "b")
	assert.True(t, LogStart(l, 0))
	assert.True(t, LogStart(l, 2), "everything deleted but the end")
	assert.False(t, LogStart(l, 3), "past the committed end")
}
