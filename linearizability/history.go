// Package linearizability records what clients saw and judges it: the
// history format, the porcupine models built on spec/, and the offset-based
// anomaly checker.
package linearizability

// Kind is the operation a client performed.
type Kind string

// Operation kinds.
const (
	KindProduce     Kind = "produce"
	KindFetch       Kind = "fetch"
	KindListOffsets Kind = "list-offsets"
)

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

// Record is one record a fetch returned.
type Record struct {
	Offset int64  `json:"offset"`
	Value  string `json:"value"`
}

// Op is one client operation, from call to return.
//
// Invariants:
//  1. Call <= Return (Return is -1 while the operation is open).
//  2. Produce: Value is unique in the history.
//  3. Outcome ok for produce with acks != 0 => Offset >= 0.
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

	// Produce: the value written, the acks used, the offset assigned.
	Value string `json:"value,omitempty"`
	Acks  int    `json:"acks,omitempty"`
	// Offset is the produce's assigned offset, the fetch's start offset, or
	// the list-offsets answer.
	Offset int64 `json:"offset"`

	// Fetch: the records returned and the HW the broker reported.
	Records []Record `json:"records,omitempty"`
	HW      int64    `json:"hw,omitempty"`
}
