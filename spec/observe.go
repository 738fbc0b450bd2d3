package spec

// This file is the sequential specification of one partition as its clients
// may observe it. The state is the committed log (Log): the records below the
// highest HW any leader has reached, which is the part of the log the
// protocol promises never to lose or change. Each client operation takes
// effect at one instant between its call and its return:
//
//   - a produce, at the instant its record is committed (or never);
//   - a fetch or a list-offsets, at the instant the broker read its HW.
//
// Reference: spec/SEMANTICS.md, Replication ("HW: offsets below it are committed
// and visible to consumers"; "the HW a new leader starts with can be behind
// the old leader's").

// Acks values a producer may ask for. Reference: spec/SEMANTICS.md, Producer.
const (
	// AcksNone (0): no answer; the record may be lost.
	AcksNone = 0
	// AcksLeader (1): answered once the leader has the record; a leader
	// failure before replication can lose it.
	AcksLeader = 1
	// AcksAll (-1): answered once HW has passed the record: it is committed.
	AcksAll = -1
)

// NoOffset stands for an offset the client did not learn.
const NoOffset int64 = -1

// Outcome is how a produce ended, as far as its client could tell.
type Outcome uint8

// Outcomes of a produce.
const (
	// Acknowledged: the broker answered success. With acks=0 there is no
	// answer to wait for, and the record was merely sent.
	Acknowledged Outcome = iota
	// Failed: a definite error; the record was certainly not appended.
	Failed
	// Unknown: a timeout, a lost connection, or an error the write may have
	// survived (NOT_ENOUGH_REPLICAS_AFTER_APPEND, a leader change while the
	// produce waited).
	Unknown
)

// String names the outcome as the history format does.
func (o Outcome) String() string {
	switch o {
	case Acknowledged:
		return "ok"
	case Failed:
		return "fail"
	case Unknown:
		return "unknown"
	}
	return "outcome?"
}

// Write is one produce of one record, with what its client learnt.
type Write struct {
	Value   string
	Acks    int // AcksNone, AcksLeader or AcksAll; any other value is read as AcksLeader
	Outcome Outcome
	// Offset is where the broker said the record landed, or NoOffset.
	Offset int64
	// Idempotent says the write carried a producer id, epoch and sequence
	// (the idempotent producer): every retry of it is the same batch.
	Idempotent bool
}

// Record is one record a fetch returned.
type Record struct {
	Offset int64
	Value  string
}

// Produce returns every committed log that may follow l once w has taken
// effect; none if w cannot take effect on l at all.
//
// Rules:
//
//  1. A definite failure leaves the log as it was: {l}.
//     Reference: spec/SEMANTICS.md, Producer; FORMAT.md ("fail: the operation
//     certainly did not take effect").
//
//  2. acks=all answered ok: the record is committed, at the offset the
//     broker named, so that offset must be the log's end: {l+[v]} if
//     Offset == Len() (or the offset is unknown), else {}.
//     Reference: spec/SEMANTICS.md, Producer ("the leader answers once every
//     replica in the ISR has the record (HW has passed it)"; "an acknowledged
//     record is never lost").
//
//  3. Everything else may or may not have taken effect: acks=1 answered ok
//     (the leader can die before replicating), acks=0 (at-most-once), and an
//     unknown outcome. {l} and, when the record may stand at the log's end
//     (offset unknown, or Offset == Len()), l+[v]. A record that was
//     appended at offset O on some leader can only ever be committed at O.
//     Reference: spec/SEMANTICS.md, Producer (acks 0 and 1;
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND "the record may still commit").
//
//  4. The dedup rule: an idempotent write whose record already stands in the
//     log (a retry of a batch the leader appended: same PID, epoch and
//     sequence, so the same record) is answered with the original offset
//     and appended no second time: {l} when acknowledged at the offset
//     where l holds it, {} when acknowledged anywhere else. The broker keeps
//     the last 5 batches per producer to tell; a producer keeps at most 5 in
//     flight, so a retry is always within that window.
//     Reference: spec/SEMANTICS.md, Producer ("A retry of one of them ... is
//     answered with the original offset and not appended again").
//
// A produce takes effect at most once: the rules describe an idempotent or
// non-retrying producer. Duplicates from non-idempotent retries
// (spec/SEMANTICS.md: "at-least-once (duplicates possible)") are outside this
// specification; the anomaly checker names them.
func Produce(l Log, w Write) []Log {
	fits := w.Offset < 0 || w.Offset == l.Len()
	if w.Idempotent && w.Offset >= 0 && w.Offset < l.Len() {
		if v, _ := l.At(w.Offset); v == w.Value {
			return []Log{l} // already in: a retry cannot add it again
		}
	}
	switch {
	case w.Outcome == Failed:
		return []Log{l}
	case w.Outcome == Acknowledged && w.Acks == AcksAll:
		if !fits {
			return nil
		}
		return []Log{l.Append(w.Value)}
	case fits:
		return []Log{l, l.Append(w.Value)}
	default:
		return []Log{l}
	}
}

// Fetch reports whether a fetch from offset that returned records is allowed
// when the committed log is l.
//
// Rules:
//  1. A non-empty answer is a run of committed records from the offset asked
//     for: records[i] is at offset+i and holds l's value there, and the run
//     ends at or before Len(). Consumers read only below HW, and everything
//     below any leader's HW is committed, so a fetch never returns a record
//     past the committed log's end nor one that is not (or no longer) the
//     committed one. Reference: spec/SEMANTICS.md, Replication ("Consumers read
//     only below HW").
//  2. An empty answer is allowed at any offset. An offset in (HW, LEO] is
//     answered with nothing, and LEO can be far past the committed end while
//     followers catch up; the leader answering may also be a new one whose
//     HW lags; and a long poll ends empty when fetch.max.wait.ms runs out.
//     Past LEO the answer is OFFSET_OUT_OF_RANGE, a failed fetch, which
//     observes nothing and is not judged here. Reference: spec/SEMANTICS.md,
//     Replication ("A fetch at an offset in (HW, LEO] returns nothing; beyond
//     LEO it is OFFSET_OUT_OF_RANGE"); Consumer and groups (long poll).
//  3. Retention deletes a prefix of what clients may read, never a record
//     at or above the log start offset, and changes nothing it keeps: a
//     fetch below the log start offset is OFFSET_OUT_OF_RANGE too (not
//     judged here; LogStart judges the offset the broker reports), and the
//     records above it are still the committed log's at their offsets, so
//     rule 1 holds unchanged. Reference: spec/SEMANTICS.md, Retention.
//
// A fetch may return fewer records than are committed (fetch.max.bytes, a
// lagging HW): there is no lower bound on what it sees.
func Fetch(l Log, offset int64, records []Record) bool {
	if len(records) == 0 {
		return true
	}
	if offset < 0 || offset > l.Len() || int64(len(records)) > l.Len()-offset {
		return false
	}
	for i, r := range records {
		if r.Offset != offset+int64(i) {
			return false
		}
	}
	n := l.from(offset + int64(len(records)))
	for i := len(records) - 1; i >= 0; i-- {
		if n.value != records[i].Value {
			return false
		}
		n = n.prev
	}
	return true
}

// ListOffsets reports whether a broker may answer hw when asked for the
// latest visible offset (the HW) while the committed log is l.
//
// Rule: hw <= Len(). Every leader's HW is at or below the committed end,
// since what is below it is committed by definition. There is no lower
// bound: a new leader starts with the HW it learnt as a follower, one round
// late, so it can be behind the old leader's, and a client can see the HW go
// back across a leader change. A negative answer (no HW) tells nothing and is
// allowed. Reference: spec/SEMANTICS.md, Replication ("Leader HW = min LEO over
// the ISR"; "the HW a new leader starts with can be behind the old
// leader's").
func ListOffsets(l Log, hw int64) bool {
	return hw <= l.Len()
}

// LogStart reports whether a broker may answer a fetch with log start
// offset start while the committed log is l.
//
// Rule: start <= Len(). Retention deletes only committed records (those
// below the HW), so everything below the log start offset was committed.
// There is no lower bound and no monotonicity across leaders: each
// replica deletes its own segments, and a new leader may have kept more.
// Reference: spec/SEMANTICS.md, Retention.
func LogStart(l Log, start int64) bool {
	return start <= l.Len()
}
