package partition

import (
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Acks is the producer's acks setting (settings.Acks).
type Acks = settings.Acks

// The three acks levels of spec/SEMANTICS.md.
const (
	AcksNone   = settings.AcksNone
	AcksLeader = settings.AcksLeader
	AcksAll    = settings.AcksAll
)

// followerProgress is the leader's view of one follower.
//
// Invariants:
//  1. leo == -1 until the follower fetches in this leader epoch.
//  2. lastCaughtUp <= lastFetchTime once the follower has fetched.
type followerProgress struct {
	incarnation        int64 // of the follower process whose fetches these are
	leo                int64
	lastCaughtUp       int64
	lastFetchTime      int64
	lastFetchLeaderLEO int64
}

// pendingISR is an ISR change sent to the controller and not yet answered.
// While it is in flight the leader computes HW over the union of the old and
// the proposed ISR (KIP-497's "maximal ISR"), so neither a shrink nor an
// expansion can let HW pass a record some controller-visible ISR member lacks.
type pendingISR struct {
	id     uint64 // the request's ProposalID; a resend gets a new one
	isr    []int32
	incs   []int64 // each member's incarnation as the proposal was decided
	sentAt int64
}

// parkedProduce is an acks=all produce waiting for HW to pass it: the one
// place a produce waits.
type parkedProduce struct {
	ref       uint64
	base      int64
	required  int64 // HW must reach this (the batch's next offset)
	deadline  int64 // 0: none
	duplicate bool
}

// leaderState exists while the replica leads.
type leaderState struct {
	start     int64 // first offset of this leader epoch
	followers map[int32]*followerProgress
	pending   *pendingISR
	retryAt   int64 // no new ISR proposal before this time (after a refusal)
	produces  []parkedProduce
}

// ProduceRequest appends one batch. The replica takes ownership of Batch.
type ProduceRequest struct {
	Acks  Acks
	Batch record.Batch
	// Deadline, when not 0, is when an acks=all produce stops waiting for
	// HW: the first Tick at or after it answers REQUEST_TIMED_OUT (the
	// produce request's timeout). The records may still commit.
	Deadline int64
}

func (r *Replica) becomeLeader(epoch int32, now int64) {
	r.failPending(kafka.ErrLeaderChanged)
	r.role = RoleLeader
	r.epoch = epoch
	r.leaderID = r.cfg.BrokerID
	r.follower = followerState{}
	leo := r.leo()
	r.epochs.Assign(epoch, leo)
	r.ready.EpochsChanged = true
	r.leader = leaderState{start: leo, followers: map[int32]*followerProgress{}}
	for _, id := range r.replicas {
		if id == r.cfg.BrokerID {
			continue
		}
		// ISR members get a full lag window to show up, as in Kafka.
		r.leader.followers[id] = &followerProgress{leo: -1, lastCaughtUp: now, lastFetchTime: now, lastFetchLeaderLEO: -1}
	}
	r.event(EventBecameLeader, "leader epoch %d start %d isr %v", epoch, leo, r.isr)
	r.maybeAdvanceHW()
}

// Produce appends a batch as leader and answers ref in Ready.Answers:
// acks 0 and 1 and refusals at once (the driver sends the answer after
// persisting the Ready), acks=all when HW passes the batch.
func (r *Replica) Produce(ref uint64, req ProduceRequest, now int64) {
	refuse := func(err error) { r.answer(ref, ProduceAnswer{BaseOffset: -1, Err: err}) }
	if r.role != RoleLeader {
		refuse(kafka.ErrNotLeader)
		return
	}
	if req.Batch.Len() <= 0 {
		refuse(kafka.ErrInvalidRecord)
		return
	}
	if req.Acks == AcksAll && len(r.isr) < r.minISR() {
		refuse(kafka.ErrNotEnoughReplicas)
		return
	}
	b := req.Batch
	if b.ProducerID != record.NoProducerID {
		dup, err := r.producers.check(&b, r.cfg.ProducerState == ProducerStateLeaderOnly)
		if err != nil {
			refuse(err)
			return
		}
		if dup != nil {
			// A retry of a batch already in the log: answer with its
			// offset, once it is as committed as acks asks.
			if req.Acks != AcksAll || r.hw > dup.last {
				r.answer(ref, ProduceAnswer{BaseOffset: dup.base, Duplicate: true})
				return
			}
			r.leader.produces = append(r.leader.produces, parkedProduce{ref: ref, base: dup.base, required: dup.last + 1, deadline: req.Deadline, duplicate: true})
			return
		}
	}
	b.BaseOffset = r.leo()
	b.LeaderEpoch = r.epoch
	r.append(b)
	if req.Acks != AcksAll {
		r.maybeAdvanceHW()
		r.answer(ref, ProduceAnswer{BaseOffset: b.BaseOffset})
		return
	}
	r.leader.produces = append(r.leader.produces, parkedProduce{ref: ref, base: b.BaseOffset, required: b.NextOffset(), deadline: req.Deadline})
	r.maybeAdvanceHW()
}

// ReplicaFetch serves a follower's fetch: it records the follower's LEO (its
// fetch offset), may expand the ISR and advance HW, and returns the batches
// from the fetch offset, answering ref in Ready.Answers. Call it again when
// a held fetch completes; it is safe to repeat for the same offset. A fetch whose LastFetchedEpoch shows
// the follower's log diverging from ours gets a DivergingEpoch answer and
// counts for nothing (Kafka's Partition.fetchRecords skips the follower's
// fetch state then).
func (r *Replica) ReplicaFetch(ref uint64, req FetchRequest, now int64) {
	resp := r.replicaFetch(req, now)
	r.answer(ref, resp)
}

func (r *Replica) replicaFetch(req FetchRequest, now int64) FetchResponse {
	resp := FetchResponse{TopicPartition: req.TopicPartition, ID: req.ID, HW: -1, LEO: -1,
		DivergingEpoch: noEpoch, DivergingEndOffset: storage.UndefinedEpochOffset}
	if err := r.checkLeaderEpoch(req.CurrentLeaderEpoch); err != nil {
		resp.Err = err
		return resp
	}
	f := r.leader.followers[req.ReplicaID]
	if f == nil {
		resp.Err = kafka.ErrNotLeader // not a replica of this partition
		return resp
	}
	switch {
	case req.ReplicaIncarnation < f.incarnation:
		// Sent by the follower's previous process, delayed or held here:
		// what it says about the follower's log is no longer true.
		resp.Err = kafka.ErrStaleBrokerEpoch
		return resp
	case req.ReplicaIncarnation > f.incarnation:
		// A new process: nothing it has not itself fetched counts.
		f.incarnation = req.ReplicaIncarnation
		f.leo = -1
		f.lastFetchLeaderLEO = -1
	}
	leo := r.leo()
	resp.LEO, resp.LogStart = leo, r.logStart()
	if req.LastFetchedEpoch >= 0 {
		e, end := r.epochs.EndOffsetFor(req.LastFetchedEpoch, leo)
		switch {
		case e < 0 || end < 0 || req.FetchOffset < resp.LogStart:
			// No end for the follower's epoch (Kafka answers so too), or
			// below our log start whatever the epochs say.
			resp.Err = kafka.ErrOffsetOutOfRange
			return resp
		case e < req.LastFetchedEpoch || end < req.FetchOffset:
			resp.Diverging, resp.DivergingEpoch, resp.DivergingEndOffset = true, e, end
			resp.HW = r.hw
			return resp
		}
	}
	if req.FetchOffset > leo || req.FetchOffset < resp.LogStart {
		// Past our end, the follower's log ran past ours; below our start,
		// retention deleted what it lacks and it starts again there.
		resp.Err = kafka.ErrOffsetOutOfRange
		return resp
	}
	switch {
	case req.FetchOffset >= leo:
		f.lastCaughtUp = max(f.lastCaughtUp, now)
	case req.FetchOffset >= f.lastFetchLeaderLEO && f.lastFetchLeaderLEO >= 0:
		f.lastCaughtUp = max(f.lastCaughtUp, f.lastFetchTime)
	}
	f.leo = req.FetchOffset
	f.lastFetchLeaderLEO = leo
	f.lastFetchTime = now
	r.maybeExpandISR(req.ReplicaID, now)
	r.maybeAdvanceHW()
	resp.Batches = r.read(req.FetchOffset, leo, min(req.MaxBytes, r.cfg.ReplicaFetchMaxBytes))
	resp.HW = r.hw
	return resp
}

// EpochEnd answers OffsetsForLeaderEpoch for a follower (KIP-101, KIP-279)
// or a client (KIP-320), under ref in Ready.Answers.
func (r *Replica) EpochEnd(ref uint64, req EpochEndRequest) {
	r.answer(ref, r.epochEnd(req))
}

func (r *Replica) epochEnd(req EpochEndRequest) EpochEndResponse {
	resp := EpochEndResponse{TopicPartition: req.TopicPartition, ID: req.ID, Epoch: -1, EndOffset: -1}
	if err := r.checkLeaderEpoch(req.CurrentLeaderEpoch); err != nil {
		resp.Err = err
		return resp
	}
	if r.cfg.Truncation == TruncateToEpochKIP101 {
		// Kafka 0.11 (KAFKA-6361): an end offset only, no floor epoch; the
		// answer keeps Epoch -1 and the follower does not look at it.
		resp.EndOffset = r.epochs.EndOffsetKIP101(req.Epoch, r.leo())
		return resp
	}
	resp.Epoch, resp.EndOffset = r.epochs.EndOffsetFor(req.Epoch, r.leo())
	return resp
}

// Read serves a consumer, under ref in Ready.Answers: only batches wholly
// below HW. An offset in [HW, LEO] returns nothing; past LEO, or below the
// log start offset (retention deleted it), is kafka.ErrOffsetOutOfRange.
func (r *Replica) Read(ref uint64, req ReadRequest) {
	r.answer(ref, r.readAt(req))
}

func (r *Replica) readAt(req ReadRequest) ReadResult {
	if req.CurrentLeaderEpoch >= 0 {
		if err := r.checkLeaderEpoch(req.CurrentLeaderEpoch); err != nil {
			return ReadResult{Err: err, HW: -1, LEO: -1, LogStart: -1}
		}
	} else if r.role != RoleLeader {
		return ReadResult{Err: kafka.ErrNotLeader, HW: -1, LEO: -1, LogStart: -1}
	}
	leo, start := r.leo(), r.logStart()
	if req.Offset < start || req.Offset > leo {
		return ReadResult{Err: kafka.ErrOffsetOutOfRange, HW: r.hw, LEO: leo, LogStart: start}
	}
	return ReadResult{Batches: r.read(req.Offset, r.hw, req.MaxBytes), HW: r.hw, LEO: leo, LogStart: start}
}

// checkLeaderEpoch fences requests made in another epoch (KIP-320). As in
// Kafka, the epoch is checked first: a replica that is no longer leader
// fences a request from an epoch it has left, and answers NOT_LEADER only
// to one made in its own epoch.
func (r *Replica) checkLeaderEpoch(epoch int32) error {
	switch {
	case epoch < r.epoch:
		return kafka.ErrFencedLeaderEpoch
	case epoch > r.epoch:
		return kafka.ErrUnknownLeaderEpoch
	case r.role != RoleLeader:
		return kafka.ErrNotLeader
	}
	return nil
}

// HandleAlterPartitionAnswer handles the controller's answer to an ISR change.
// Answers can be late, duplicated and reordered, so an answer counts only if
// it carries a partition state newer than the one the leader knows: then it
// is the controller's truth, whether it accepted this proposal, an earlier
// copy of it, or refused it (a refusal carries the current state). An
// answer that is not newer belongs to an earlier proposal and is ignored:
// the proposal in flight stays in flight, and HW keeps counting it (KIP-497).
// A refusal that teaches nothing new ends the proposal, and the leader waits
// RetryBackoffMs before proposing again.
func (r *Replica) HandleAlterPartitionAnswer(resp kafka.AlterPartitionAnswer, now int64) {
	if r.role != RoleLeader || r.leader.pending == nil {
		return
	}
	st := resp.State
	switch {
	case st.LeaderEpoch == r.epoch && st.PartitionEpoch > r.partitionEpoch:
		// News from the controller, whichever proposal it answers.
		r.adoptISR(st)
	case resp.ProposalID != r.leader.pending.id:
		return // an answer to an earlier proposal, or an earlier copy of this one
	case resp.Err == nil:
		r.leader.pending = nil // accepted, and it changed nothing
	default:
		// This proposal was refused on the state the leader knows.
		r.leader.pending = nil
		r.leader.retryAt = now + r.cfg.RetryBackoffMs
	}
	r.maybeAdvanceHW()
	r.maybeShrinkISR(now)
}

// adoptISR takes the controller's committed ISR. A proposal in flight that
// it settles is done; one made from an older partition epoch can only be
// refused, so it is dropped too.
func (r *Replica) adoptISR(st kafka.PartitionState) {
	r.isr = sortedClone(st.ISR)
	r.partitionEpoch = st.PartitionEpoch
	r.replicas = slices.Clone(st.Replicas)
	r.leader.pending = nil
	r.event(EventISRChanged, "isr %v partition epoch %d", r.isr, r.partitionEpoch)
	if !r.cfg.AdvanceHWBelowMinISR && len(r.isr) < r.minISR() {
		// HW cannot pass what is parked until the ISR grows back: tell the
		// producers now, as Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND does;
		// the records may still commit, so the outcome is unknown to them.
		r.failPending(kafka.ErrNotEnoughReplicasAfterAppend)
	}
}

// Tick advances logical time: the leader drops followers that have not caught
// up within replica.lag.time.max.ms and re-sends an unanswered ISR change; the
// follower re-sends a fetch that got no answer.
func (r *Replica) Tick(now int64) {
	switch r.role {
	case RoleLeader:
		if p := r.leader.pending; p != nil && now-p.sentAt >= r.cfg.RequestTimeoutMs {
			r.resendAlterPartition(p, now)
		}
		r.maybeShrinkISR(now)
		r.expireProduces(now)
	case RoleFollower:
		r.tickFollower(now)
	}
}

func (r *Replica) maybeShrinkISR(now int64) {
	if r.leader.pending != nil || now < r.leader.retryAt {
		return
	}
	var keep []int32
	for _, id := range r.isr {
		f := r.leader.followers[id]
		if id == r.cfg.BrokerID || f == nil || now-f.lastCaughtUp <= r.cfg.ReplicaLagTimeMaxMs {
			keep = append(keep, id)
		}
	}
	if len(keep) < len(r.isr) {
		r.event(EventISRShrinkProposed, "isr %v -> %v", r.isr, keep)
		r.sendAlterPartition(keep, now)
	}
}

// maybeExpandISR proposes adding a follower whose LEO has reached both HW and
// the start of this leader epoch.
func (r *Replica) maybeExpandISR(id int32, now int64) {
	if r.leader.pending != nil || now < r.leader.retryAt || slices.Contains(r.isr, id) {
		return
	}
	f := r.leader.followers[id]
	if f.leo < r.hw || f.leo < r.leader.start {
		return
	}
	isr := sortedClone(append(slices.Clone(r.isr), id))
	r.event(EventISRExpandProposed, "isr %v -> %v", r.isr, isr)
	r.sendAlterPartition(isr, now)
}

// sendAlterPartition proposes isr, naming each member's process as the
// leader knows it now: the fetches it decided on (KIP-903).
func (r *Replica) sendAlterPartition(isr []int32, now int64) {
	incs := make([]int64, len(isr))
	for i, id := range isr {
		if id == r.cfg.BrokerID {
			incs[i] = r.cfg.Incarnation
		} else if f := r.leader.followers[id]; f != nil {
			incs[i] = f.incarnation
		}
	}
	r.proposeISR(isr, incs, now)
}

// resendAlterPartition repeats the proposal p that got no answer, with a
// new id but the incarnations it was decided on: a follower that
// restarted since has not earned its place, and the controller must see
// the process the proposal is about (Kafka retries the same
// AlterPartition, broker epochs and all).
func (r *Replica) resendAlterPartition(p *pendingISR, now int64) {
	r.proposeISR(p.isr, p.incs, now)
}

func (r *Replica) proposeISR(isr []int32, incs []int64, now int64) {
	r.requestID++
	r.leader.pending = &pendingISR{id: r.requestID, isr: isr, incs: incs, sentAt: now}
	r.ready.Messages = append(r.ready.Messages, kafka.AlterPartition{
		TopicPartition:     r.tp,
		ProposalID:         r.requestID,
		LeaderID:           r.cfg.BrokerID,
		LeaderIncarnation:  r.cfg.Incarnation,
		LeaderEpoch:        r.epoch,
		PartitionEpoch:     r.partitionEpoch,
		NewISR:             slices.Clone(isr),
		NewISRIncarnations: slices.Clone(incs),
	})
}

// maybeAdvanceHW sets HW to the smallest LEO over the maximal ISR, never
// lower than it was, and completes the produces it passes.
func (r *Replica) maybeAdvanceHW() {
	if r.role != RoleLeader {
		return
	}
	size := len(r.isr)
	if p := r.leader.pending; p != nil {
		size = min(size, len(p.isr))
	}
	if !r.cfg.AdvanceHWBelowMinISR && size < r.minISR() {
		return
	}
	hw := r.leo()
	for _, id := range r.maximalISR() {
		if id == r.cfg.BrokerID {
			continue
		}
		f := r.leader.followers[id]
		if f == nil || f.leo < 0 {
			return // an ISR member has not reported in this epoch
		}
		hw = min(hw, f.leo)
	}
	if hw <= r.hw {
		return
	}
	r.setHW(hw)
	r.event(EventHWAdvanced, "hw %d", hw)
	r.completeProduces()
}

// minISR is the effective min.insync.replicas: the setting, capped at
// the replication factor, as Kafka has applied it to the acks=all
// refusal, the HW and the eligible leader replicas since 3.7
// (KAFKA-15583), so a topic with fewer replicas than the setting stays
// writable. Before the replica knows its assignment, the setting.
func (r *Replica) minISR() int {
	if len(r.replicas) == 0 {
		return r.cfg.MinInsyncReplicas
	}
	return min(r.cfg.MinInsyncReplicas, len(r.replicas))
}

func (r *Replica) maximalISR() []int32 {
	if r.leader.pending == nil {
		return r.isr
	}
	u := append(slices.Clone(r.isr), r.leader.pending.isr...)
	slices.Sort(u)
	return slices.Compact(u)
}

func (r *Replica) completeProduces() {
	n := 0
	for _, p := range r.leader.produces {
		if r.hw < p.required {
			r.leader.produces[n] = p
			n++
			continue
		}
		var err error
		if len(r.isr) < r.minISR() {
			err = kafka.ErrNotEnoughReplicasAfterAppend
		}
		r.release(p, err)
	}
	r.leader.produces = r.leader.produces[:n]
}

// failPending answers every parked produce with err. The records may still
// commit under the next leader, so callers must treat err as indefinite.
func (r *Replica) failPending(err error) {
	for _, p := range r.leader.produces {
		r.release(p, err)
	}
	r.leader.produces = nil
}

// expireProduces answers the parked produces whose deadline passed with
// REQUEST_TIMED_OUT: their records may still commit, so the client must
// treat the answer as unknown.
func (r *Replica) expireProduces(now int64) {
	n := 0
	for _, p := range r.leader.produces {
		if p.deadline == 0 || now < p.deadline {
			r.leader.produces[n] = p
			n++
			continue
		}
		r.release(p, kafka.ErrRequestTimedOut)
	}
	clear(r.leader.produces[n:])
	r.leader.produces = r.leader.produces[:n]
}
