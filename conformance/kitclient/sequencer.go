package kitclient

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/settings"
)

// batchState is where a batch stands.
type batchState uint8

const (
	stateWaiting  batchState = iota // to be sent, or resent after an error
	stateInFlight                   // an attempt awaits its answer
	stateDone                       // result known, maybe not reported yet
)

// batch is one Send: one record, sent as one produce request per attempt.
//
// Invariants:
//  1. seq == record.NoSequence <=> sess == noSession (the batch is unbound).
//  2. corr != 0 <=> state == stateInFlight, and then byCorr[corr] == the batch.
//  3. maybeWritten is false only if every attempt so far was refused by a
//     broker before any append.
type batch struct {
	id       uint64
	tp       kafka.TopicPartition
	records  []record.Record
	deadline int64 // delivery deadline

	state        batchState
	attempts     int
	maybeWritten bool
	lastErr      error
	notBefore    int64 // retry backoff
	// sentBehind: when the attempt in flight (or the last one) was sent, an
	// earlier batch of the partition was unresolved, so a sequence gap
	// answer to it may only mean that batch had not arrived yet: the
	// network may deliver requests, and answers, out of order.
	sentBehind bool
	// behind: the last attempt was refused for such a gap. Resending before
	// the earlier batches are answered would only meet the same gap.
	behind bool

	// The sequence binding (idempotent producer): the batch keeps it across
	// retries and loses it only when its partition abandons the session
	// with the batch certainly unwritten.
	sess session
	seq  int32
	// What the last attempt carried, for the Result.
	sentSess session
	sentSeq  int32

	corr         uint64
	to           clientmsg.NodeID
	respDeadline int64

	result Result // once state == stateDone
}

// partState is the producer's state for one partition.
//
// Invariants:
//  1. queue holds the partition's unreported sends in Send order; after
//     settle its head is not done (done batches wait there only for an
//     earlier one, so results come out in order).
//  2. window == the number of batches in queue with attempts > 0, and
//     window <= MaxInFlight. Counting a batch from its first send until it
//     is reported (not just while a request is out) keeps every batch a
//     retry may need deduplicated within the broker's last
//     settings.DedupWindow batches of the producer.
//  3. A batch is sent only when every earlier batch in queue is in flight
//     or done, so sequences are assigned, and retries resent, in order.
//  4. Every bound batch in queue that is not done has sess == ps.sess, and
//     their sequences increase along queue.
//  5. broken implies no bound batch is waiting: breakSession resolves them.
type partState struct {
	tp     kafka.TopicPartition
	queue  []*batch
	window int

	// stale: the leader is suspect (NOT_LEADER, a timeout...). Nothing is
	// sent until a metadata request numbered above staleAfter answers.
	stale      bool
	staleAfter uint64

	// sess and nextSeq number this partition's batches. broken: sess can
	// no longer be used here (a sequence was lost or refused for good); the
	// partition adopts the producer's next session once none of its bound
	// batches is unresolved.
	sess    session
	nextSeq int32
	broken  bool
}

// settle reports what is done and sends what may be sent, until neither
// makes progress: an acks=0 send completes as it goes out, which frees room
// in the window for the next.
func (p *Producer) settle(ps *partState) {
	p.flush(ps)
	for p.pump(ps) {
		p.flush(ps)
	}
}

// flush reports the done batches at the head of the queue.
func (p *Producer) flush(ps *partState) {
	n := 0
	for n < len(ps.queue) && ps.queue[n].state == stateDone {
		b := ps.queue[n]
		if b.attempts > 0 {
			ps.window--
		}
		p.emit(b.result)
		n++
	}
	switch {
	case n == len(ps.queue):
		clear(ps.queue)
		ps.queue = ps.queue[:0]
	case n > 0:
		clear(ps.queue[:n])
		ps.queue = ps.queue[n:]
	}
}

// pump sends the waiting batches that may go now, in queue order. It
// reports whether the head of the queue completed meanwhile, so that
// flushing would make room for more.
func (p *Producer) pump(ps *partState) (headDone bool) {
	first := slices.IndexFunc(ps.queue, func(b *batch) bool { return b.state == stateWaiting })
	if first < 0 {
		return false
	}
	defer func() { headDone = ps.queue[0].state == stateDone }()
	l, ok := p.leaders[ps.tp]
	if !ok || l.leader < 0 || ps.stale {
		p.metaWanted = true
		return
	}
	if p.cfg.Idempotent {
		p.maybeAdopt(ps)
	}
	earlierInFlight := slices.ContainsFunc(ps.queue[:first], func(b *batch) bool { return b.state == stateInFlight })
	for _, b := range ps.queue[first:] {
		if b.state == stateInFlight {
			earlierInFlight = true
		}
		if b.state != stateWaiting {
			continue
		}
		if p.now >= b.deadline {
			p.fail(ps, b, deliveryErr(b.lastErr))
			continue
		}
		if p.now < b.notBefore || (b.attempts == 0 && ps.window >= p.cfg.MaxInFlight) || (b.behind && earlierInFlight) {
			return
		}
		if p.cfg.Idempotent && b.seq == record.NoSequence {
			if ps.broken || ps.sess == noSession {
				return // waiting for a PID, or for the old session to drain
			}
			b.sess, b.seq = ps.sess, ps.nextSeq
			ps.nextSeq = incrementSequence(ps.nextSeq, len(b.records))
		}
		p.sendBatch(ps, b, clientmsg.NodeID(l.leader))
		earlierInFlight = earlierInFlight || b.state == stateInFlight
	}
	return
}

// maybeAdopt moves the partition to the producer's current session once no
// batch bound to its old one is unresolved: sequences restart at 0.
func (p *Producer) maybeAdopt(ps *partState) {
	if p.sess == noSession || ps.sess == p.sess {
		return
	}
	for _, b := range ps.queue {
		if b.state != stateDone && b.seq != record.NoSequence {
			return
		}
	}
	ps.sess, ps.nextSeq, ps.broken = p.sess, 0, false
}

func (p *Producer) sendBatch(ps *partState, b *batch, to clientmsg.NodeID) {
	b.attempts++
	if b.attempts == 1 {
		ps.window++
	}
	b.sentSess, b.sentSeq = b.sess, b.seq
	b.sentBehind = p.cfg.Idempotent && p.openPredecessor(ps, b)
	p.corr++
	p.send(to, clientmsg.ProduceRequest{
		Correlation:    p.corr,
		TopicPartition: ps.tp,
		Acks:           p.cfg.Acks,
		TimeoutMs:      p.cfg.RequestTimeoutMs,
		Batch: record.Batch{
			ProducerID:    b.sess.pid,
			ProducerEpoch: b.sess.epoch,
			BaseSequence:  b.seq,
			Records:       slices.Clone(b.records), // the broker owns what it is sent
		},
	})
	if p.cfg.Acks == settings.AcksNone {
		// No answer will come: the record may or may not be written.
		p.finish(ps, b, OutcomeUnknown, -1, nil)
		return
	}
	b.state = stateInFlight
	b.corr, b.to = p.corr, to
	b.respDeadline = p.now + p.cfg.RequestTimeoutMs + p.cfg.ResponseSlackMs
	p.byCorr[b.corr] = b
}

// endAttempt forgets the attempt in flight; a late answer to it is dropped.
func (p *Producer) endAttempt(ps *partState, b *batch) {
	delete(p.byCorr, b.corr)
	b.corr = 0
	b.state = stateWaiting
}

// errClass says what an attempt's error means for its batch.
type errClass struct {
	retriable       bool // resending the same batch may succeed
	mayBeWritten    bool // the broker may have appended it before failing
	refreshMetadata bool // the leader may have moved
	sequence        bool // a sequence error: see afterAttempt
}

// classify sorts produce errors. Refusals that come before the append
// (NOT_LEADER, NOT_ENOUGH_REPLICAS, UNKNOWN_TOPIC_OR_PARTITION, sequence
// errors, INVALID_RECORD) leave the record unwritten; errors after it, or
// the lack of an answer, leave it open. An error the producer does not
// know is taken as final and open.
func classify(err error) errClass {
	switch {
	case errors.Is(err, kafka.ErrNotLeader), errors.Is(err, kafka.ErrUnknownTopicOrPartition):
		return errClass{retriable: true, refreshMetadata: true}
	case errors.Is(err, kafka.ErrNotEnoughReplicasAfterAppend):
		return errClass{retriable: true, mayBeWritten: true}
	case errors.Is(err, kafka.ErrNotEnoughReplicas):
		return errClass{retriable: true}
	case errors.Is(err, kafka.ErrLeaderChanged),
		errors.Is(err, kafka.ErrRequestTimedOut),
		errors.Is(err, kafka.ErrNetwork),
		errors.Is(err, ErrResponseTimeout):
		return errClass{retriable: true, mayBeWritten: true, refreshMetadata: true}
	case errors.Is(err, kafka.ErrOutOfOrderSequence),
		errors.Is(err, kafka.ErrUnknownProducerID),
		errors.Is(err, kafka.ErrInvalidProducerEpoch):
		return errClass{sequence: true}
	case errors.Is(err, kafka.ErrInvalidRecord):
		return errClass{}
	}
	return errClass{mayBeWritten: true}
}

// afterAttempt decides a batch's fate after an attempt ended with an
// answer (err nil: appended at offset) or ErrResponseTimeout.
//
// A sequence error (OUT_OF_ORDER_SEQUENCE or UNKNOWN_PRODUCER_ID) for an
// attempt sent while an earlier batch of the partition was unresolved, or
// while one still is, is expected: that batch had not reached the broker
// yet (it is being retried, or the network reordered the requests), so the
// batch is retried after it. The same error for an attempt sent with every
// earlier batch acknowledged is a real gap: the broker lost sequences it had
// acknowledged, or its producer state. Nothing under this session
// can be written to the partition any more; the batch fails and the
// partition moves to a new PID (breakSession). INVALID_PRODUCER_EPOCH is
// final at once.
func (p *Producer) afterAttempt(ps *partState, b *batch, err error, offset int64) {
	if err == nil {
		p.finish(ps, b, OutcomeOK, offset, nil)
		return
	}
	b.lastErr = err
	c := classify(err)
	if c.mayBeWritten {
		b.maybeWritten = true
	}
	if c.refreshMetadata && !ps.stale {
		ps.stale, ps.staleAfter = true, p.metaSent
		p.metaWanted = true
	}
	retry := c.retriable && p.cfg.Retries
	b.behind = false
	if c.sequence && !errors.Is(err, kafka.ErrInvalidProducerEpoch) {
		retry = !ps.broken && (b.sentBehind || p.openPredecessor(ps, b))
		b.behind = retry
	}
	switch {
	case b.seq != record.NoSequence && ps.broken && (retry || c.sequence):
		p.resolveBroken(ps, b)
	case !retry:
		p.fail(ps, b, fmt.Errorf("%s: %w", ps.tp, err))
	case p.now >= b.deadline:
		p.fail(ps, b, deliveryErr(err))
	default:
		b.notBefore = p.now + p.cfg.RetryBackoffMs
	}
}

// openPredecessor reports whether a batch before b in its partition holds a
// sequence and is unresolved.
func (p *Producer) openPredecessor(ps *partState, b *batch) bool {
	for _, a := range ps.queue {
		if a == b {
			return false
		}
		if a.state != stateDone && a.seq != record.NoSequence {
			return true
		}
	}
	return false
}

// fail completes b without success: OutcomeFail only if no attempt can have
// been written.
func (p *Producer) fail(ps *partState, b *batch, err error) {
	outcome := OutcomeFail
	if b.maybeWritten {
		outcome = OutcomeUnknown
	}
	p.finish(ps, b, outcome, -1, err)
}

// finish completes b. A bound batch that did not succeed leaves a hole in
// its session's sequence at this partition, so the session breaks.
func (p *Producer) finish(ps *partState, b *batch, outcome Outcome, offset int64, err error) {
	b.state = stateDone
	b.result = b.resultOf(outcome, offset, err)
	if outcome != OutcomeOK && b.seq != record.NoSequence {
		p.breakSession(ps)
	}
}

// breakSession abandons the partition's session. When it is the producer's
// current one, a new PID is requested (maybeRequestControl): InitProducerID
// hands out a fresh PID, where KIP-360 would bump the epoch of the old one.
// A fresh PID needs nothing from the broker beyond what it already does
// (InitProducerIDRequest carries no PID to bump), and "a new PID is a new
// identity" keeps dedup reasoning per session simple.
//
// Bound batches not in flight are resolved now, those in flight when their
// attempt ends (afterAttempt): see resolveBroken.
func (p *Producer) breakSession(ps *partState) {
	if ps.broken {
		return
	}
	ps.broken = true
	if ps.sess == p.sess {
		p.sess = noSession
	}
	for _, b := range ps.queue {
		if b.state == stateWaiting && b.seq != record.NoSequence {
			p.resolveBroken(ps, b)
		}
	}
}

// resolveBroken settles a batch of a broken session whose attempt is over.
// If any attempt may have been written, resending it under a new PID could
// write it twice, so it completes as unknown. Otherwise it was certainly not
// written: it loses its sequence and is sent again under the next session.
func (p *Producer) resolveBroken(ps *partState, b *batch) {
	if b.maybeWritten {
		p.finish(ps, b, OutcomeUnknown, -1, fmt.Errorf("%s: %w (last attempt: %w)", ps.tp, ErrSessionReset, b.lastErr))
		return
	}
	b.sess, b.seq, b.behind = noSession, record.NoSequence, false
}

// expire fails the waiting batches past their delivery deadline. In-flight
// attempts are left to finish (afterAttempt checks the deadline): their
// answer may still be a success.
func (p *Producer) expire(ps *partState) {
	for _, b := range ps.queue {
		if b.state != stateWaiting {
			continue
		}
		if p.now < b.deadline {
			return // deadlines ascend along the queue
		}
		p.fail(ps, b, deliveryErr(b.lastErr))
	}
}

func deliveryErr(last error) error {
	if last == nil {
		return ErrDeliveryTimeout
	}
	return fmt.Errorf("%w (last attempt: %w)", ErrDeliveryTimeout, last)
}

func (b *batch) resultOf(outcome Outcome, offset int64, err error) Result {
	return Result{
		ID:            b.id,
		Topic:         b.tp.Topic,
		Partition:     b.tp.Partition,
		Offset:        offset,
		Outcome:       outcome,
		Err:           err,
		Attempts:      b.attempts,
		ProducerID:    b.sentSess.pid,
		ProducerEpoch: b.sentSess.epoch,
		Sequence:      b.sentSeq,
	}
}

// incrementSequence adds n to a sequence, wrapping past math.MaxInt32 to 0
// as Kafka's DefaultRecordBatch.incrementSequence does.
func incrementSequence(seq int32, n int) int32 {
	if int64(seq) > math.MaxInt32-int64(n) {
		return int32(int64(n) - (math.MaxInt32 - int64(seq)) - 1)
	}
	return seq + int32(n)
}
