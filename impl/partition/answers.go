package partition

import "github.com/watermarkhq/watermark/impl/record"

// Every request the driver hands a replica (Produce, ReplicaFetch,
// EpochEnd, Read) carries a ref the driver chose, and the replica answers
// each exactly once, in Ready.Answers under that ref: at once, or, for an
// acks=all produce, when HW passes it, its leadership ends or its deadline
// passes. The ref is the request's one identity on the broker; the
// replica is where a produce waits.

// Reply is an answer a replica gives: a ProduceAnswer, ReadResult,
// FetchResponse or EpochEndResponse.
type Reply interface {
	// Failure is the answer's error, nil when it succeeded.
	Failure() error
	reply()
}

// Answer is a Reply to the request the driver handed in with Ref.
type Answer struct {
	Ref   uint64
	Reply Reply
	// Waited says the request waited in the replica (an acks=all produce
	// released by HW, failed by a change of leadership or expired): the
	// driver delivers such answers before what the same change woke
	// elsewhere, and the answer to the input at hand after both, as
	// Kafka completes its delayed produces and fetches when HW moves,
	// before it answers the request that moved it.
	Waited bool
}

func (ProduceAnswer) reply()    {}
func (ReadResult) reply()       {}
func (FetchResponse) reply()    {}
func (EpochEndResponse) reply() {}

// ProduceAnswer answers a ProduceRequest.
type ProduceAnswer struct {
	BaseOffset int64
	Err        error
	// Duplicate says the batch was a retry of one already in the log:
	// nothing was appended, BaseOffset is the original's.
	Duplicate bool
}

// Failure implements Reply.
func (a ProduceAnswer) Failure() error { return a.Err }

// ReadRequest is a consumer's read of one partition.
type ReadRequest struct {
	Offset   int64
	MaxBytes int
	// CurrentLeaderEpoch fences the read (KIP-320); -1 skips the check
	// and only asks that this replica lead.
	CurrentLeaderEpoch int32
}

// ReadResult answers a ReadRequest.
type ReadResult struct {
	Batches []record.Batch
	HW      int64
	LEO     int64
	// LogStart is the replica's log start offset (-1 when fenced).
	LogStart int64
	Err      error
}

// Failure implements Reply.
func (r ReadResult) Failure() error { return r.Err }

// answer queues a reply to the request handed in with ref.
func (r *Replica) answer(ref uint64, reply Reply) {
	r.ready.Answers = append(r.ready.Answers, Answer{Ref: ref, Reply: reply})
}

// release queues the reply to a produce that waited.
func (r *Replica) release(p parkedProduce, err error) {
	r.ready.Answers = append(r.ready.Answers, Answer{Ref: p.ref, Reply: ProduceAnswer{BaseOffset: p.base, Err: err, Duplicate: p.duplicate}, Waited: true})
}
