package broker

import (
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// parkedProduce is an acks=all produce waiting for HW; the replica holds
// the offsets, the broker holds who to answer and the deadline.
type parkedProduce struct {
	from     NodeID
	corr     uint64
	tp       kafka.TopicPartition
	deadline int64
	// groupAppend, when not 0, marks the broker's own append of a group
	// coordinator's records (groups.go): its outcome goes to the
	// coordinator, not to a client.
	groupAppend uint64
}

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

func (b *Broker) handleProduce(from NodeID, m ProduceRequest) error {
	h, ok := b.parts[m.TopicPartition]
	if !ok {
		b.answerProduce(from, m, -1, b.unknownOrNotLeader(m.TopicPartition))
		return nil
	}
	if limit, name := b.maxMessageBytes(m.Topic); m.WireBytes > limit {
		b.answerProduce(from, m, -1, kafka.With(kafka.ErrMessageTooLarge, "a %d-byte batch, over %s %d", m.WireBytes, name, limit))
		return nil
	}
	if err := storage.BatchFits(&m.Batch); err != nil {
		// Refused before the log sees it: a log that cannot take a batch
		// fails its broker, and no client may be able to do that.
		b.answerProduce(from, m, -1, kafka.With(kafka.ErrMessageTooLarge, "%v", err))
		return nil
	}
	b.nextProduce++
	id := b.nextProduce
	res := h.replica.Produce(partition.ProduceRequest{ID: id, Acks: m.Acks, Batch: m.Batch}, b.now)
	if res.Parked {
		b.produces[id] = &parkedProduce{from: from, corr: m.Correlation, tp: m.TopicPartition, deadline: b.now + m.TimeoutMs}
	}
	if err := b.apply(h); err != nil {
		return err
	}
	if res.Parked {
		return nil
	}
	if res.Err == nil && m.Acks != partition.AcksNone {
		if err := b.failpoint(FPBeforeProduceResp); err != nil {
			return err
		}
	}
	b.answerProduce(from, m, res.BaseOffset, res.Err)
	return nil
}

func (b *Broker) answerProduce(from NodeID, m ProduceRequest, base int64, err error) {
	if m.Acks == partition.AcksNone {
		return
	}
	b.send(from, b.produceResponse(m.Correlation, m.TopicPartition, base, err))
}

// produceResponse answers a produce; one refused because this broker does
// not lead names the leader it knows (KIP-951).
func (b *Broker) produceResponse(corr uint64, tp kafka.TopicPartition, base int64, err error) ProduceResponse {
	r := ProduceResponse{Correlation: corr, TopicPartition: tp, BaseOffset: base, Err: err, Leader: LeaderHint{ID: -1, Epoch: -1}}
	if kafka.CodeOf(err) != kafka.CodeOf(kafka.ErrNotLeader) {
		return r
	}
	if s, ok := b.metadata[tp]; ok && s.Leader >= 0 && s.Leader != int32(b.cfg.ID) {
		r.Leader = LeaderHint{ID: s.Leader, Epoch: s.LeaderEpoch, Address: b.addresses[s.Leader]}
	}
	return r
}

// completeProduce answers a parked produce the replica finished.
func (b *Broker) completeProduce(c partition.Completion) error {
	p, ok := b.produces[c.ID]
	if !ok {
		return nil
	}
	delete(b.produces, c.ID)
	if p.groupAppend != 0 {
		b.groupAppendDone(p, c.Err)
		return nil
	}
	if c.Err == nil {
		if err := b.failpoint(FPBeforeProduceResp); err != nil {
			return err
		}
	}
	b.send(p.from, b.produceResponse(p.corr, p.tp, c.BaseOffset, c.Err))
	return nil
}

func (b *Broker) handleFetch(from NodeID, m FetchRequest) error {
	h, ok := b.parts[m.TopicPartition]
	if !ok {
		b.send(from, FetchResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, HW: -1, LEO: -1, LogStart: -1, Err: b.unknownOrNotLeader(m.TopicPartition)})
		return nil
	}
	res := h.replica.Read(m.Offset, m.MaxBytes, m.CurrentLeaderEpoch)
	// A read that failed (a batch failing its checks) crashes the broker
	// here, before anything answers as if the log held nothing there.
	if err := b.apply(h); err != nil {
		return err
	}
	if res.Err == nil && m.MaxWaitMs > 0 && size(res.Batches, m.Offset) < max(m.MinBytes, 1) {
		b.fetches = append(b.fetches, &parkedFetch{from: from, req: m, deadline: b.now + m.MaxWaitMs})
		return nil
	}
	b.answerFetch(from, m, res)
	return nil
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
	resp := h.replica.ReplicaFetch(m, b.now)
	if err := b.apply(h); err != nil {
		return err
	}
	wait := b.cfg.ReplicaFetchWaitMaxMs
	// A divergence is answered at once, as Kafka does: the follower
	// truncates before it can catch up.
	if resp.Err == nil && !resp.Diverging && len(resp.Batches) == 0 && wait > 0 {
		b.replicaFets = append(b.replicaFets, &parkedReplicaFetch{from: from, req: m, leo: resp.LEO, deadline: b.now + wait})
		return nil
	}
	b.send(from, resp)
	return nil
}

// retryFetches re-reads held consumer fetches on tp (all partitions when
// tp is nil-like and all is set) and answers the ones that are satisfied or
// expired.
func (b *Broker) retryFetches(tp kafka.TopicPartition, all bool) {
	n := 0
	for _, f := range b.fetches {
		if !all && f.req.TopicPartition != tp {
			b.fetches[n] = f
			n++
			continue
		}
		h, ok := b.parts[f.req.TopicPartition]
		var res partition.ReadResult
		if ok {
			res = h.replica.Read(f.req.Offset, f.req.MaxBytes, f.req.CurrentLeaderEpoch)
		} else {
			res = partition.ReadResult{Err: kafka.ErrUnknownTopicOrPartition, HW: -1, LEO: -1}
		}
		// A read that failed is not answered as if the log held nothing
		// there: the broker crashes at the replica's next Ready.
		if ok && h.replica.ReadFailed() || res.Err == nil && b.now < f.deadline && size(res.Batches, f.req.Offset) < max(f.req.MinBytes, 1) {
			b.fetches[n] = f
			n++
			continue
		}
		b.answerFetch(f.from, f.req, res)
	}
	clear(b.fetches[n:])
	b.fetches = b.fetches[:n]
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
		resp := h.replica.ReplicaFetch(f.req, b.now)
		if err := b.apply(h); err != nil {
			return err
		}
		b.send(f.from, resp)
	}
	return nil
}

// expireParked answers what waited too long: produces get a timeout (their
// records may still commit, so the client must treat it as unknown), held
// fetches get what there is.
func (b *Broker) expireParked() error {
	var expired []uint64
	for id, p := range b.produces {
		if b.now >= p.deadline {
			expired = append(expired, id)
		}
	}
	slices.Sort(expired)
	for _, id := range expired {
		p := b.produces[id]
		if h, ok := b.parts[p.tp]; ok && h.replica.ExpireProduce(id, kafka.ErrRequestTimedOut) {
			if err := b.apply(h); err != nil {
				return err
			}
			continue
		}
		delete(b.produces, id)
		if p.groupAppend != 0 {
			b.groupAppendDone(p, kafka.ErrRequestTimedOut)
			continue
		}
		b.send(p.from, ProduceResponse{Correlation: p.corr, TopicPartition: p.tp, BaseOffset: -1, Err: kafka.ErrRequestTimedOut})
	}
	b.retryFetches(kafka.TopicPartition{}, true)
	return b.releaseReplicaFetches()
}

// maxMessageBytes is the largest batch topic takes as produced, and the
// name of the setting that says so: the topic's max.message.bytes when it
// has one, else the broker's message.max.bytes.
func (b *Broker) maxMessageBytes(topic string) (int, string) {
	if cfg, ok := b.topicConfigs[topic]; ok && cfg.MaxMessageBytes > 0 {
		return int(cfg.MaxMessageBytes), "the topic's max.message.bytes"
	}
	return b.cfg.MessageMaxBytes, "message.max.bytes"
}
