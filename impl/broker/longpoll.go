package broker

import (
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

// The long poll: fetches that found too little wait here, as in Kafka's
// fetch purgatory (ReplicaManager, not Partition). A consumer's fetch
// waits for fetch.min.bytes until its max wait; it is read again when its
// partition's HW moves (apply) and at every tick. A follower's fetch that
// found nothing new waits until the leader's LEO moves or
// replica.fetch.wait.max.ms passes, checked after every message and tick,
// and is then run again through the replica, so that the follower's
// progress is recorded at the time of the answer. Every read goes through
// the replica's Ready (refs.go's ask): a read that fails crashes the
// broker before anything answers as if the log held nothing there.

// parkedFetch is a consumer fetch held for fetch.min.bytes / max wait.
type parkedFetch struct {
	from     NodeID
	req      FetchRequest
	deadline int64
}

// parkedReplicaFetch is a follower's fetch that found nothing new, held
// until the leader's LEO moves or replica.fetch.wait.max.ms passes.
type parkedReplicaFetch struct {
	from     NodeID
	req      partition.FetchRequest
	leo      int64
	deadline int64
}

func (b *Broker) handleFetch(from NodeID, m FetchRequest) error {
	h, ok := b.parts[m.TopicPartition]
	if !ok {
		b.send(from, FetchResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, HW: -1, LEO: -1, LogStart: -1, Err: b.unknownOrNotLeader(m.TopicPartition)})
		return nil
	}
	// A read that failed (a batch failing its checks) crashes the broker
	// in apply, before anything answers as if the log held nothing there.
	res, err := ask[partition.ReadResult](b, h, func(ref uint64) { h.replica.Read(ref, m.read()) })
	if err != nil {
		return err
	}
	if res.Err == nil && m.MaxWaitMs > 0 && size(res.Batches, m.Offset) < max(m.MinBytes, 1) {
		b.fetches = append(b.fetches, &parkedFetch{from: from, req: m, deadline: b.now + m.MaxWaitMs})
		return nil
	}
	b.answerFetch(from, m, res)
	return nil
}

// read is the replica's part of a consumer fetch.
func (m FetchRequest) read() partition.ReadRequest {
	return partition.ReadRequest{Offset: m.Offset, MaxBytes: m.MaxBytes, CurrentLeaderEpoch: m.CurrentLeaderEpoch}
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

func (b *Broker) answerFetch(to NodeID, m FetchRequest, res partition.ReadResult) {
	b.send(to, FetchResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition,
		Batches: res.Batches, HW: res.HW, LEO: res.LEO, LogStart: res.LogStart, Err: res.Err})
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
			b.replicaFets = append(b.replicaFets, &parkedReplicaFetch{from: from, req: m, leo: resp.LEO, deadline: b.now + wait})
			return nil
		}
		b.send(from, resp)
		return nil
	})
	h.replica.ReplicaFetch(ref, m, b.now)
	return b.apply(h)
}

// retryFetches re-reads held consumer fetches on tp (all partitions when
// tp is nil-like and all is set) and answers the ones that are satisfied or
// expired.
func (b *Broker) retryFetches(tp kafka.TopicPartition, all bool) error {
	n := 0
	for i, f := range b.fetches {
		if !all && f.req.TopicPartition != tp {
			b.fetches[n] = f
			n++
			continue
		}
		h, ok := b.parts[f.req.TopicPartition]
		res := partition.ReadResult{Err: kafka.ErrUnknownTopicOrPartition, HW: -1, LEO: -1}
		if ok {
			var err error
			// A read that failed is not answered as if the log held
			// nothing there: the broker crashes here.
			if res, err = ask[partition.ReadResult](b, h, func(ref uint64) { h.replica.Read(ref, f.req.read()) }); err != nil {
				// Keep the fetches not yet looked at: the error may be
				// a failpoint that does not stop the broker.
				n += copy(b.fetches[n:], b.fetches[i:])
				clear(b.fetches[n:])
				b.fetches = b.fetches[:n]
				return err
			}
		}
		if res.Err == nil && b.now < f.deadline && size(res.Batches, f.req.Offset) < max(f.req.MinBytes, 1) {
			b.fetches[n] = f
			n++
			continue
		}
		b.answerFetch(f.from, f.req, res)
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
	var due []*parkedReplicaFetch
	for _, f := range b.replicaFets {
		h, ok := b.parts[f.req.TopicPartition]
		if ok && h.replica.LEO() == f.leo && h.replica.Role() == partition.RoleLeader && b.now < f.deadline {
			b.replicaFets[n] = f
			n++
			continue
		}
		due = append(due, f)
	}
	clear(b.replicaFets[n:])
	b.replicaFets = b.replicaFets[:n]
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
