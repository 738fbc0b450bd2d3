package partition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/storage"
)

// drain is Ready then Advance: a test's driver carries out each Ready at
// once (kafka.Handover).
func drain(c *Replica) Ready {
	rd := c.Ready()
	c.Advance()
	return rd
}

func TestReadyIsHandedOverOnceUntilAdvanced(t *testing.T) {
	r, err := New(DefaultConfig(1), kafka.TopicPartition{Topic: "t"}, nil, 0, storage.EpochCache{}, nil)
	require.NoError(t, err)
	r.Ready()
	assert.Panics(t, func() { r.Ready() }, "a second Ready before Advance")
	r.Advance()
	assert.NotPanics(t, func() { r.Ready() })
}

// ProduceResult is what a test sees of one produce right after the call:
// its answer, if the replica gave it at once, or Parked with the offset
// the produce waits on (white-box: read from the replica's parked list).
type ProduceResult struct {
	BaseOffset int64
	Err        error
	Parked     bool
	Duplicate  bool
}

// Completion is the answer to a produce that waited, as tests compare it.
type Completion struct {
	ID         uint64
	BaseOffset int64
	Err        error
}

// completions picks the answers to produces that waited out of rd.
func completions(rd Ready) []Completion {
	var out []Completion
	for _, a := range rd.Answers {
		if p, ok := a.Reply.(ProduceAnswer); ok && a.Waited {
			out = append(out, Completion{ID: a.Ref, BaseOffset: p.BaseOffset, Err: p.Err})
		}
	}
	return out
}

// answeredNow is the answer the last call queued for ref, if that call
// answered at once: the last of Ready.Answers, when the call added it.
// The Ready itself is left to the test.
func answeredNow[R Reply](r *Replica, before int, ref uint64) (R, bool) {
	var zero R
	as := r.ready.Answers
	if len(as) <= before {
		return zero, false
	}
	a := as[len(as)-1]
	if a.Waited || a.Ref != ref {
		return zero, false
	}
	return a.Reply.(R), true
}

// produceAt hands r a produce under ref and returns what a caller learns
// at once.
func produceAt(r *Replica, ref uint64, req ProduceRequest, now int64) ProduceResult {
	before := len(r.ready.Answers)
	r.Produce(ref, req, now)
	if a, ok := answeredNow[ProduceAnswer](r, before, ref); ok {
		return ProduceResult{BaseOffset: a.BaseOffset, Err: a.Err, Duplicate: a.Duplicate}
	}
	for _, a := range r.ready.Answers[before:] {
		if p, ok := a.Reply.(ProduceAnswer); ok && a.Waited && a.Ref == ref {
			// Parked and released by the same call (an ISR of one).
			return ProduceResult{BaseOffset: p.BaseOffset, Parked: true, Duplicate: p.Duplicate}
		}
	}
	ps := r.leader.produces
	if len(ps) == 0 || ps[len(ps)-1].ref != ref {
		panic("produce neither answered nor parked")
	}
	p := ps[len(ps)-1]
	return ProduceResult{BaseOffset: p.base, Parked: true, Duplicate: p.duplicate}
}

// replicaFetchAt hands r a follower's fetch and returns its answer.
func replicaFetchAt(r *Replica, req FetchRequest, now int64) FetchResponse {
	before := len(r.ready.Answers)
	r.ReplicaFetch(0, req, now)
	a, ok := answeredNow[FetchResponse](r, before, 0)
	if !ok {
		panic("replica fetch unanswered")
	}
	return a
}

// epochEndAt hands r an OffsetsForLeaderEpoch and returns its answer.
func epochEndAt(r *Replica, req EpochEndRequest) EpochEndResponse {
	before := len(r.ready.Answers)
	r.EpochEnd(0, req)
	a, ok := answeredNow[EpochEndResponse](r, before, 0)
	if !ok {
		panic("epoch end unanswered")
	}
	return a
}

// readAt hands r a consumer read and returns its answer.
func readAt(r *Replica, offset int64, maxBytes int, epoch int32) ReadResult {
	before := len(r.ready.Answers)
	r.Read(0, ReadRequest{Offset: offset, MaxBytes: maxBytes, CurrentLeaderEpoch: epoch})
	a, ok := answeredNow[ReadResult](r, before, 0)
	if !ok {
		panic("read unanswered")
	}
	return a
}
