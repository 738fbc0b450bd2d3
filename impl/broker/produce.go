package broker

import (
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// A produce, from request to acknowledgement. The broker refuses here
// what no replica may see (an unknown partition, a batch over the size
// limits); everything else goes to the replica under one ref (refs.go).
// The replica answers acks 0 and 1 and its own refusals at once, and
// parks an acks=all produce until HW passes it, its leadership ends or
// its deadline passes (partition/leader.go); whichever answer comes out
// of its Ready, apply delivers it after the Ready is persisted, to the
// function registered here, which passes the beforeProduceResponse
// failpoint and answers the client.

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
	ref := await(b, func(a partition.ProduceAnswer) error {
		if a.Err == nil && m.Acks != partition.AcksNone {
			if err := b.failpoint(FPBeforeProduceResp); err != nil {
				return err
			}
		}
		b.answerProduce(from, m, a.BaseOffset, a.Err)
		return nil
	})
	h.replica.Produce(ref, partition.ProduceRequest{Acks: m.Acks, Batch: m.Batch, Deadline: b.now + m.TimeoutMs}, b.now)
	return nil // the loop applies the replica's Ready
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

// maxMessageBytes is the largest batch topic takes as produced, and the
// name of the setting that says so: the topic's max.message.bytes when it
// has one, else the broker's message.max.bytes.
func (b *Broker) maxMessageBytes(topic string) (int, string) {
	if cfg, ok := b.topicConfigs[topic]; ok && cfg.MaxMessageBytes > 0 {
		return int(cfg.MaxMessageBytes), "the topic's max.message.bytes"
	}
	return b.cfg.MessageMaxBytes, "message.max.bytes"
}
