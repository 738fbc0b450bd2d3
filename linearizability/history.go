// Package linearizability records what clients saw and judges it: the
// history format, the porcupine models built on spec/, and the offset-based
// anomaly checker.
//
// A history is a list of operations (Op), written as JSON lines (one Op per
// line; see FORMAT.md). Any harness in any language can write one and have
// watermark check it.
package linearizability

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/spec"
)

// Kind is the operation a client performed.
type Kind string

// Operation kinds.
const (
	// KindProduce writes one record (Value) to a partition.
	KindProduce Kind = "produce"
	// KindFetch reads records of a partition from Offset on.
	KindFetch Kind = "fetch"
	// KindListOffsets asks for the latest visible offset (the HW).
	KindListOffsets Kind = "list-offsets"
	// KindAssign says a consumer (Client) starts reading a partition at
	// Offset: after a (re)assignment, a seek or an offset reset. The next
	// fetch of that client on that partition is not compared with the ones
	// before it.
	KindAssign Kind = "assign"
	// KindJoin says member Member learnt it belongs to Group in generation
	// Generation (a JoinGroup answer). It names no partition.
	KindJoin Kind = "join"
	// KindAssignment says member Member of Group in Generation was given
	// the partition (its SyncGroup answer; one op per assigned partition).
	// Like KindAssign, it ends the client's run of reads of the partition:
	// the next fetch is not compared with the ones before.
	KindAssignment Kind = "assignment"
	// KindCommit commits Offset for the partition in Group, as member Member
	// of Generation (NoGeneration and no member for a simple commit).
	KindCommit Kind = "commit"
	// KindOffsetFetch reads the partition's committed Offset in Group (-1
	// for none).
	KindOffsetFetch Kind = "offset-fetch"
	// KindProcess says the application behind a consumer (Client, a member
	// of Group when set) processed the record Value at Offset of the
	// partition: what delivery levels are about on the consumer's side
	// (spec/SEMANTICS.md). Call is when it did; Return = Call.
	KindProcess Kind = "process"
)

// NoGeneration is the generation of a simple commit, made outside group
// membership.
const NoGeneration = spec.NoGeneration

// Kinds lists the kinds a history may hold.
var Kinds = []Kind{KindProduce, KindFetch, KindListOffsets, KindAssign,
	KindJoin, KindAssignment, KindCommit, KindOffsetFetch, KindProcess}

// groupKind reports whether k is one of the consumer-group kinds, which
// name a Group.
func groupKind(k Kind) bool {
	return k == KindJoin || k == KindAssignment || k == KindCommit || k == KindOffsetFetch
}

// Outcome is how an operation ended, as far as the client could tell.
type Outcome string

// Outcomes. Unknown means the operation may or may not have taken effect
// (a timeout, a lost connection, an error returned after the write may have
// been made, such as NOT_ENOUGH_REPLICAS_AFTER_APPEND).
const (
	OutcomeOK      Outcome = "ok"
	OutcomeFail    Outcome = "fail"
	OutcomeUnknown Outcome = "unknown"
)

// judgedOutcome is the outcome the checkers judge op by: its own, except
// that a commit recorded as failed with a code after which its offsets may
// still have been stored (kafka.CommitOutcomeUnknown: Kafka 4.x answers a
// commit whose write timed out COORDINATOR_NOT_AVAILABLE, and the write may
// commit) is unknown. A harness that took such an answer for a definite
// failure would otherwise have a correct broker judged not linearizable
// when a later offset-fetch shows the commit.
func judgedOutcome(op *Op) Outcome {
	if op.Kind == KindCommit && op.Outcome == OutcomeFail && kafka.CommitOutcomeUnknown(kafka.ForCode(op.Code)) {
		return OutcomeUnknown
	}
	return op.Outcome
}

// Record is one record a fetch returned.
type Record struct {
	Offset int64  `json:"offset"`
	Value  string `json:"value"`
}

// Op is one client operation, from call to return.
//
// Invariants (Validate checks them):
//  1. Call <= Return; Return is -1 only for an operation still open when the
//     history ended, whose outcome is then unknown.
//  2. Produce: Value is non-empty and unique among the history's produces.
//  3. Produce with outcome ok and acks != 0: Offset >= 0 is where it landed.
//  4. Fetch with outcome ok: Records have strictly increasing offsets, all
//     >= Offset.
//  5. Join, assignment, commit and offset-fetch name a Group; join and
//     assignment a Member and a Generation >= 0.
//  6. Commit: Offset >= 0; Generation is NoGeneration exactly when Member is
//     empty (a simple commit).
//  7. Offset-fetch with outcome ok: Offset >= -1.
type Op struct {
	ID        int     `json:"id"`
	Client    int     `json:"client"`
	Kind      Kind    `json:"kind"`
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Call      int64   `json:"call"`
	Return    int64   `json:"return"`
	Outcome   Outcome `json:"outcome"`
	Error     string  `json:"error,omitempty"`
	// Code is the Kafka error code the operation ended with, when the
	// broker answered one (0: none, or an error of the client's own, such
	// as a timeout). Checkers and cases branch on it, never on Error.
	Code int16 `json:"code,omitempty"`

	// Produce: the value written and the acks used (0, 1 or -1 for all).
	Value string `json:"value,omitempty"`
	Acks  int    `json:"acks,omitempty"`
	// Offset is the produce's assigned offset (-1 when unknown), the fetch's
	// or assign's start offset, the list-offsets answer, the offset a
	// commit commits or the one an offset-fetch returned (-1 for none).
	Offset int64 `json:"offset"`
	// Produce by an idempotent producer: its producer id (> 0), epoch, and
	// the record's sequence number. Every retry of the write carried them.
	ProducerID    int64 `json:"producer_id,omitempty"`
	ProducerEpoch int16 `json:"producer_epoch,omitempty"`
	Sequence      int32 `json:"sequence,omitempty"`
	// Resend marks a produce of a value an earlier produce of the history
	// already carried: an application sending again what it never saw
	// acknowledged, for example after its producer restarted with a new
	// producer id. It is the one way a value may appear in two produces.
	Resend bool `json:"resend,omitempty"`

	// Fetch: the records returned and the HW the broker reported.
	Records []Record `json:"records,omitempty"`
	HW      int64    `json:"hw,omitempty"`
	// LogStart is the log start offset the broker reported with a fetch's
	// answer, ok or OFFSET_OUT_OF_RANGE (0 when it reported none):
	// retention deleted every record below it.
	LogStart int64 `json:"log_start,omitempty"`
	// Final marks the reads done after every fault healed; they read each
	// partition to its end, which makes "unseen" meaningful.
	Final bool `json:"final,omitempty"`

	// Consumer groups: the group, and the generation and member id the
	// member learnt (join, assignment) or sent (commit).
	Group      string `json:"group,omitempty"`
	Generation int32  `json:"generation,omitempty"`
	Member     string `json:"member,omitempty"`
	// Broker is the id of the broker that answered a join, assignment or
	// offset-fetch, or that a commit was last sent to (> 0; 0 when not
	// recorded). It tells an answer of a coordinator that had been
	// replaced (replacedAnswers).
	Broker int32 `json:"broker,omitempty"`
}

// TP is the operation's partition.
func (op *Op) TP() kafka.TopicPartition {
	return kafka.TopicPartition{Topic: op.Topic, Partition: op.Partition}
}

// Validate checks a history's invariants and reports the first broken one
// with the operation's line.
func Validate(h []Op) error {
	values := map[string]int{}
	for i := range h {
		op := &h[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("op %d (line %d): %s", op.ID, i+1, fmt.Sprintf(format, args...))
		}
		if !slices.Contains(Kinds, op.Kind) {
			return bad("unknown kind %q: want one of %v", op.Kind, Kinds)
		}
		switch op.Outcome {
		case OutcomeOK, OutcomeFail, OutcomeUnknown:
		default:
			return bad("unknown outcome %q: want ok, fail or unknown", op.Outcome)
		}
		if op.Return == -1 {
			if op.Outcome != OutcomeUnknown {
				return bad("open operation (return -1) must have outcome unknown")
			}
		} else if op.Return < op.Call {
			return bad("returns (%d) before it is called (%d)", op.Return, op.Call)
		}
		switch op.Kind {
		case KindProduce:
			if op.Value == "" {
				return bad("produce without a value")
			}
			if j, dup := values[op.Value]; dup && !op.Resend {
				return bad("value %q was already produced by op %d: values must be unique (mark a deliberate resend with resend: true)", op.Value, j)
			} else if !dup && op.Resend {
				return bad("resend of value %q, which no earlier produce carried", op.Value)
			}
			if _, dup := values[op.Value]; !dup {
				values[op.Value] = op.ID
			}
			if op.Outcome == OutcomeOK && op.Acks != 0 && op.Offset < 0 {
				return bad("acknowledged produce without an offset")
			}
		case KindFetch:
			prev := op.Offset - 1
			for _, r := range op.Records {
				if r.Offset <= prev {
					return bad("fetch records out of order at offset %d (after %d)", r.Offset, prev)
				}
				prev = r.Offset
			}
		case KindProcess:
			if op.Value == "" || op.Offset < 0 {
				return bad("process of %q at offset %d: want a value and an offset >= 0", op.Value, op.Offset)
			}
		}
		if groupKind(op.Kind) {
			if err := validateGroupOp(op); err != "" {
				return bad("%s", err)
			}
		}
	}
	return nil
}

// validateGroupOp checks invariants 5 to 7 and says what is wrong, or "".
func validateGroupOp(op *Op) string {
	if op.Group == "" {
		return fmt.Sprintf("%s without a group", op.Kind)
	}
	if op.Broker < 0 {
		return fmt.Sprintf("%s answered by broker %d: want a broker id > 0, or 0 (not recorded)", op.Kind, op.Broker)
	}
	switch op.Kind {
	case KindJoin, KindAssignment:
		if op.Member == "" {
			return fmt.Sprintf("%s without a member", op.Kind)
		}
		if op.Generation < 0 {
			return fmt.Sprintf("%s in generation %d: want >= 0", op.Kind, op.Generation)
		}
	case KindCommit:
		if op.Offset < 0 {
			return fmt.Sprintf("commit of offset %d: want >= 0", op.Offset)
		}
		if op.Generation < NoGeneration {
			return fmt.Sprintf("commit in generation %d: want >= 0, or -1 for a simple commit", op.Generation)
		}
		if (op.Generation == NoGeneration) != (op.Member == "") {
			return "commit: a simple commit has generation -1 and no member, a member's commit both"
		}
	case KindOffsetFetch:
		if op.Outcome == OutcomeOK && op.Offset < -1 {
			return fmt.Sprintf("offset-fetch returned offset %d: want >= -1", op.Offset)
		}
	}
	return ""
}

// WriteHistory writes h as JSON lines.
func WriteHistory(w io.Writer, h []Op) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range h {
		if err := enc.Encode(&h[i]); err != nil {
			return fmt.Errorf("write op %d: %w", h[i].ID, err)
		}
	}
	return bw.Flush()
}

// ReadHistory reads JSON lines written by WriteHistory or any harness that
// follows FORMAT.md, and validates them.
func ReadHistory(r io.Reader) ([]Op, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var h []Op
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var op Op
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&op); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		h = append(h, op)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("history line %d: longer than 64 MiB", line+1)
		}
		return nil, fmt.Errorf("read history: %w", err)
	}
	if err := Validate(h); err != nil {
		return nil, fmt.Errorf("invalid history: %w", err)
	}
	return h, nil
}
