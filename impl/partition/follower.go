package partition

import (
	"errors"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// followerState exists while the replica follows.
//
// Invariants:
//  1. inflight != 0 <=> a fetch or epoch query is outstanding.
//  2. awaitingEpoch => the outstanding request (or the next one) is an epoch
//     query for queryEpoch; no fetch is sent until truncation is resolved.
type followerState struct {
	inflight      uint64
	sentAt        int64
	retryAt       int64 // when > 0 and nothing in flight, resend at this time
	awaitingEpoch bool
	queryEpoch    int32
	// matched: a fetch answer in this epoch came without a
	// divergence, so the log below the LEO is the leader's (the fetch
	// path's counterpart of !awaitingEpoch).
	matched bool
}

// becomeFollower starts fetching from the new leader. On the fetch path
// (TruncateToEpoch) the fetch itself finds any divergence; the other
// variants first settle it by their own rule.
func (r *Replica) becomeFollower(epoch, leader int32, now int64) {
	r.failPending(kafka.ErrLeaderChanged)
	if r.cfg.Truncation == TruncateToEpochNoBump && r.role == RoleFollower && r.leaderID == leader {
		// Kafka before KAFKA-7164's fix: the leader did not change, so the
		// follower keeps fetching in the new epoch without truncating.
		// Unsafe: it may have missed epochs in between in which the same
		// leader truncated the records this follower still holds.
		r.epoch = epoch
		r.follower = followerState{}
		r.event(EventBecameFollower, "follow %d in epoch %d (same leader: no truncation)", leader, epoch)
		r.sendFetch(now)
		return
	}
	r.role = RoleFollower
	r.epoch = epoch
	r.leaderID = leader
	r.leader = leaderState{}
	r.follower = followerState{}
	r.event(EventBecameFollower, "follow %d in epoch %d", leader, epoch)
	if r.cfg.Truncation == TruncateToHW {
		// Pre-0.11 Kafka: whatever is above our HW is suspect. Unsafe: our HW
		// lags the leader's, so this can drop committed records (KIP-101).
		r.truncate(r.hw)
		r.sendFetch(now)
		return
	}
	latest, ok := r.epochs.Latest()
	if !ok || r.cfg.Truncation.OnFetch() {
		// Kafka since KAFKA-10554: a replica with an epoch cache fetches
		// from its LEO at once (ReplicaManager's initial fetch offset) and
		// learns of a divergence from the answer. Without epochs there is
		// nothing to compare; the log is empty too, since the cache is
		// rebuilt from the batches' epochs on load.
		r.sendFetch(now)
		return
	}
	r.sendEpochQuery(latest, now)
}

func (r *Replica) nextID() uint64 {
	r.requestID++
	return r.requestID
}

func (r *Replica) sendEpochQuery(epoch int32, now int64) {
	r.follower.awaitingEpoch = true
	r.follower.queryEpoch = epoch
	r.follower.inflight = r.nextID()
	r.follower.sentAt = now
	r.follower.retryAt = 0
	r.ready.Messages = append(r.ready.Messages, EpochEndRequest{
		TopicPartition:     r.tp,
		ID:                 r.follower.inflight,
		ReplicaID:          r.cfg.BrokerID,
		To:                 r.leaderID,
		Epoch:              epoch,
		CurrentLeaderEpoch: r.epoch,
	})
}

func (r *Replica) sendFetch(now int64) {
	r.follower.awaitingEpoch = false
	r.follower.inflight = r.nextID()
	r.follower.sentAt = now
	r.follower.retryAt = 0
	last := noEpoch
	if e, ok := r.epochs.Latest(); ok && r.cfg.Truncation.OnFetch() {
		last = e
	}
	r.ready.Messages = append(r.ready.Messages, FetchRequest{
		TopicPartition:     r.tp,
		ID:                 r.follower.inflight,
		ReplicaID:          r.cfg.BrokerID,
		ReplicaIncarnation: r.cfg.Incarnation,
		To:                 r.leaderID,
		FetchOffset:        r.leo(),
		CurrentLeaderEpoch: r.epoch,
		LastFetchedEpoch:   last,
		MaxBytes:           r.cfg.ReplicaFetchMaxBytes,
	})
}

// resend repeats whatever the follower was waiting on.
func (r *Replica) resend(now int64) {
	if r.follower.awaitingEpoch {
		r.sendEpochQuery(r.follower.queryEpoch, now)
		return
	}
	r.sendFetch(now)
}

func (r *Replica) tickFollower(now int64) {
	f := &r.follower
	switch {
	case f.inflight != 0 && now-f.sentAt >= r.cfg.RequestTimeoutMs:
		r.resend(now)
	case f.inflight == 0 && f.retryAt > 0 && now >= f.retryAt:
		r.resend(now)
	}
}

// backoff waits before asking again: the leader is not ready for us, or we
// are behind the controller and a newer partition state is on its way.
func (r *Replica) backoff(err error, now int64) {
	r.follower.retryAt = now + r.cfg.RetryBackoffMs
	if errors.Is(err, kafka.ErrFencedLeaderEpoch) {
		r.event(EventFenced, "leader %d fenced epoch %d", r.leaderID, r.epoch)
	}
}

// HandleEpochEndResponse truncates by KIP-279's rule: truncate to the
// smaller of the leader's and our own end offset for the largest epoch both
// logs hold; if we do not hold the epoch the leader answered with, ask again
// about our largest epoch below it.
func (r *Replica) HandleEpochEndResponse(resp EpochEndResponse, now int64) {
	if r.role != RoleFollower || !r.follower.awaitingEpoch || resp.ID != r.follower.inflight {
		return
	}
	r.follower.inflight = 0
	if resp.Err != nil {
		r.backoff(resp.Err, now)
		return
	}
	if r.cfg.Truncation == TruncateToEpochKIP101 {
		// Kafka 0.11, KIP-101 without KIP-279 (KAFKA-6361): trust the
		// leader's end offset, with no epoch to check it against; with no
		// answer fall back to the high watermark. Unsafe: the offset can
		// lie past the point where the two logs diverge.
		if resp.EndOffset < 0 {
			r.truncate(r.hw)
		} else {
			r.truncate(min(resp.EndOffset, r.leo()))
		}
		r.sendFetch(now)
		return
	}
	if resp.Epoch < 0 {
		// The leader holds no epoch at or below ours: no record of ours can
		// be in its log.
		r.truncate(0)
		r.sendFetch(now)
		return
	}
	mine, myEnd := r.epochs.EndOffsetFor(resp.Epoch, r.leo())
	switch {
	case mine == resp.Epoch:
		r.truncate(min(resp.EndOffset, myEnd))
		r.sendFetch(now)
	case mine < 0:
		r.truncate(0)
		r.sendFetch(now)
	default:
		r.sendEpochQuery(mine, now)
	}
}

// HandleFetchResponse appends what the leader sent and takes
// HW = min(leader HW, own LEO), or, on a DivergingEpoch answer, truncates
// and takes nothing (truncateOnDivergence). The next fetch goes out in the
// same Ready, after the append or truncation, so it acknowledges only what
// is written.
func (r *Replica) HandleFetchResponse(resp FetchResponse, now int64) {
	if r.role != RoleFollower || r.follower.awaitingEpoch || resp.ID != r.follower.inflight {
		return
	}
	r.follower.inflight = 0
	if resp.Err != nil {
		if errors.Is(resp.Err, kafka.ErrOffsetOutOfRange) && resp.LogStart > r.leo() {
			// Our log ends below the leader's log start: what we lack is
			// deleted there, so start again at it.
			r.resetTo(resp.LogStart)
			r.sendFetch(now)
			return
		}
		if errors.Is(resp.Err, kafka.ErrOffsetOutOfRange) && resp.LEO >= 0 {
			// Our log runs past the leader's, or (on the fetch path) the
			// leader holds no epoch at or below our last one.
			e, ok := r.epochs.Latest()
			switch {
			case r.cfg.Truncation == TruncateToHW:
				r.truncate(resp.LEO)
			case ok && !r.cfg.Truncation.OnFetch():
				r.sendEpochQuery(e, now)
				return
			default:
				// No epoch to compare, or none of ours the leader
				// knows: no record of ours is known to be in its log.
				r.truncate(0)
			}
			r.sendFetch(now)
			return
		}
		r.backoff(resp.Err, now)
		return
	}
	if resp.Diverging {
		r.truncateOnDivergence(resp.DivergingEpoch, resp.DivergingEndOffset)
		r.sendFetch(now)
		return
	}
	for _, b := range resp.Batches {
		leo := r.leo()
		if b.NextOffset() <= leo {
			continue
		}
		if b.BaseOffset < leo {
			// Our tail splits one of the leader's batches: it diverged, and
			// batches are atomic, so give way to the leader's.
			leo = r.truncate(b.BaseOffset)
		}
		if b.BaseOffset != leo {
			r.backoff(errUnexpectedBatch, now)
			return
		}
		r.append(b)
	}
	if resp.HW >= 0 {
		r.setHW(min(resp.HW, r.leo()))
	}
	r.follower.matched = true
	r.sendFetch(now)
}

// truncateOnDivergence truncates by a fetch answer's DivergingEpoch, the
// leader's largest epoch at or below our LastFetchedEpoch and where it
// ends in the leader's log, by KIP-279's rule as Kafka's fetcher applies it
// (AbstractFetcherThread.getOffsetTruncationState): if we hold that epoch,
// to the smaller of its two ends; if not, to the end of our largest epoch
// below it, and the next fetch names that epoch. The answer's records (it
// has none) and HW are not taken. The epoch cache is cut at the target
// even when the log ends below it, as Kafka's truncateTo does: an epoch
// with no records at our cache's end (we led it and appended nothing)
// would otherwise be named again by every fetch.
func (r *Replica) truncateOnDivergence(epoch int32, end int64) {
	mine, myEnd := r.epochs.EndOffsetFor(epoch, r.leo())
	to := myEnd
	switch {
	case mine < 0:
		// We hold no epoch at or below the leader's: its end is all there
		// is to go by (Kafka does the same).
		to = end
	case mine == epoch:
		to = min(end, myEnd)
	}
	to = max(min(to, r.leo()), 0)
	r.truncate(to)
	before := len(r.epochs.Entries())
	r.epochs.TruncateFromEnd(to)
	if len(r.epochs.Entries()) != before {
		r.ready.EpochsChanged = true
	}
}
