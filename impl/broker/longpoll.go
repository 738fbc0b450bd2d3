package broker

import (
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

// The long poll: fetches that found too little wait here, as in Kafka's
// fetch purgatory (ReplicaManager, not Partition). A consumer's fetch, of
// one partition (FetchRequest) or of several answered as one
// (FetchManyRequest, Kafka's Fetch as the wire server passes it on),
// waits until its partitions together hold fetch.min.bytes, one of them
// fails, or its max wait passes; it is read again when one of its
// partitions' HW moves (apply) and at every tick. There is no other wait:
// the wire server sends one request and waits for its one answer. A follower's fetch that
// found nothing new waits until the leader's LEO moves or
// replica.fetch.wait.max.ms passes, checked after every message and tick,
// and is then run again through the replica, so that the follower's
// progress is recorded at the time of the answer. Every read goes through
// the replica's Ready (refs.go's ask): a read that fails crashes the
// broker before anything answers as if the log held nothing there.

// heldFetch is a consumer fetch in the long poll: a FetchRequest (one
// partition) or a FetchManyRequest (several, answered as one), waiting
// until its partitions together hold MinBytes or its deadline passes.
type heldFetch struct {
	from     NodeID
	corr     uint64
	parts    []FetchPartition
	minBytes int
	deadline int64
	many     bool // answer with a FetchManyResponse
}

// heldReplicaFetch is a follower's fetch that found nothing new, held
// until the leader's LEO moves or replica.fetch.wait.max.ms passes.
type heldReplicaFetch struct {
	from     NodeID
	req      partition.FetchRequest
	leo      int64
	deadline int64
}

func (b *Broker) handleFetch(from NodeID, m FetchRequest) error {
	return b.fetch(&heldFetch{from: from, corr: m.Correlation, parts: []FetchPartition{fetchPartition(m)}, minBytes: m.MinBytes}, m.MaxWaitMs)
}

func (b *Broker) handleFetchMany(from NodeID, m FetchManyRequest) error {
	return b.fetch(&heldFetch{from: from, corr: m.Correlation, parts: m.Partitions, minBytes: m.MinBytes, many: true}, m.MaxWaitMs)
}

// fetch reads f's partitions and answers at once when they hold enough,
// one failed or f may not wait; otherwise f waits in the long poll.
func (b *Broker) fetch(f *heldFetch, maxWaitMs int64) error {
	res, enough, err := b.readHeld(f)
	if err != nil {
		return err
	}
	if !enough && maxWaitMs > 0 {
		f.deadline = b.now + maxWaitMs
		b.fetches = append(b.fetches, f)
		return nil
	}
	b.answerFetch(f, res)
	return nil
}

// readHeld reads every partition of f through its replica and reports
// whether the answer is enough to send: MinBytes (at least one byte)
// readable over all of them, or an error on one (Kafka's DelayedFetch
// completes then too).
func (b *Broker) readHeld(f *heldFetch) ([]FetchResponse, bool, error) {
	out := make([]FetchResponse, len(f.parts))
	total, failed := 0, false
	for i, p := range f.parts {
		r := FetchResponse{Correlation: f.corr, TopicPartition: p.TopicPartition, HW: -1, LEO: -1, LogStart: -1}
		h, ok := b.parts[p.TopicPartition]
		if !ok {
			r.Err = b.unknownOrNotLeader(p.TopicPartition)
		} else {
			res, err := ask[partition.ReadResult](b, h, func(ref uint64) { h.replica.Read(ref, readOf(p)) })
			if err != nil {
				return nil, false, err
			}
			r.Batches, r.HW, r.LEO, r.LogStart, r.Err = res.Batches, res.HW, res.LEO, res.LogStart, res.Err
		}
		failed = failed || r.Err != nil
		total += size(r.Batches, p.Offset)
		out[i] = r
	}
	return out, failed || total >= max(f.minBytes, 1), nil
}

// fetchPartition is the one partition a FetchRequest reads.
func fetchPartition(m FetchRequest) FetchPartition {
	return FetchPartition{TopicPartition: m.TopicPartition, Offset: m.Offset, MaxBytes: m.MaxBytes, CurrentLeaderEpoch: m.CurrentLeaderEpoch}
}

// readOf is the replica's part of a consumer fetch.
func readOf(p FetchPartition) partition.ReadRequest {
	return partition.ReadRequest{Offset: p.Offset, MaxBytes: p.MaxBytes, CurrentLeaderEpoch: p.CurrentLeaderEpoch}
}

// size counts the bytes of records at or after offset.
func size(batches []record.Batch, offset int64) int {
	n := 0
	for i := range batches {
		if batches[i].NextOffset() > offset {
			n += batches[i].Size()
		}
	}
	return n
}

func (b *Broker) answerFetch(f *heldFetch, res []FetchResponse) {
	if f.many {
		b.send(f.from, FetchManyResponse{Correlation: f.corr, Partitions: res})
		return
	}
	b.send(f.from, res[0])
}

// reads reports whether f reads tp.
func (f *heldFetch) reads(tp kafka.TopicPartition) bool {
	for _, p := range f.parts {
		if p.TopicPartition == tp {
			return true
		}
	}
	return false
}

func (b *Broker) handleReplicaFetch(from NodeID, m partition.FetchRequest) error {
	h, ok := b.parts[m.TopicPartition]
	if !ok {
		b.send(from, partition.FetchResponse{TopicPartition: m.TopicPartition, ID: m.ID, Err: kafka.ErrNotLeader, HW: -1, LEO: -1})
		return nil
	}
	ref := await(b, func(resp partition.FetchResponse) error {
		wait := b.cfg.ReplicaFetchWaitMaxMs
		// A divergence is answered at once, as Kafka does: the follower
		// truncates before it can catch up.
		if resp.Err == nil && !resp.Diverging && len(resp.Batches) == 0 && wait > 0 {
			b.heldReplicas = append(b.heldReplicas, &heldReplicaFetch{from: from, req: m, leo: resp.LEO, deadline: b.now + wait})
			return nil
		}
		b.send(from, resp)
		return nil
	})
	h.replica.ReplicaFetch(ref, m, b.now)
	return nil // the loop applies the replica's Ready
}

// retryFetches re-reads held consumer fetches on tp (all partitions when
// tp is nil-like and all is set) and answers the ones that are satisfied or
// expired.
func (b *Broker) retryFetches(tp kafka.TopicPartition, all bool) error {
	n := 0
	for i, f := range b.fetches {
		if !all && !f.reads(tp) {
			b.fetches[n] = f
			n++
			continue
		}
		// A read that failed is not answered as if the log held nothing
		// there: the broker crashes here.
		res, enough, err := b.readHeld(f)
		if err != nil {
			// Keep the fetches not yet looked at: the error may be a
			// failpoint that does not stop the broker.
			n += copy(b.fetches[n:], b.fetches[i:])
			clear(b.fetches[n:])
			b.fetches = b.fetches[:n]
			return err
		}
		if !enough && b.now < f.deadline {
			b.fetches[n] = f
			n++
			continue
		}
		b.answerFetch(f, res)
	}
	clear(b.fetches[n:])
	b.fetches = b.fetches[:n]
	return nil
}

// releaseReplicaFetches answers held follower fetches whose leader LEO moved
// or whose wait is over, re-running them through the replica so that the
// follower's progress is recorded at the time of the answer.
func (b *Broker) releaseReplicaFetches() error {
	n := 0
	var due []*heldReplicaFetch
	for _, f := range b.heldReplicas {
		h, ok := b.parts[f.req.TopicPartition]
		if ok && h.replica.LEO() == f.leo && h.replica.Role() == partition.RoleLeader && b.now < f.deadline {
			b.heldReplicas[n] = f
			n++
			continue
		}
		due = append(due, f)
	}
	clear(b.heldReplicas[n:])
	b.heldReplicas = b.heldReplicas[:n]
	for _, f := range due {
		h, ok := b.parts[f.req.TopicPartition]
		if !ok {
			continue
		}
		ref := await(b, func(resp partition.FetchResponse) error { b.send(f.from, resp); return nil })
		h.replica.ReplicaFetch(ref, f.req, b.now)
		if err := b.apply(h); err != nil {
			return err
		}
	}
	return nil
}

// expireParked answers the held fetches whose wait is over with what
// there is (produces expire in their replica's Tick).
func (b *Broker) expireParked() error {
	if err := b.retryFetches(kafka.TopicPartition{}, true); err != nil {
		return err
	}
	return b.releaseReplicaFetches()
}
