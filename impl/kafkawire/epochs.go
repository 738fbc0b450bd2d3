package kafkawire

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// offsetForLeaderEpochAPI serves OffsetForLeaderEpoch v2-4: v0 and v1 went
// with Kafka 4.0.
var offsetForLeaderEpochAPI = api{key: int16(kmsg.OffsetForLeaderEpoch), min: 2, max: 4, serve: withBody((*handler).offsetForLeaderEpoch)}

// offsetForLeaderEpoch answers OffsetForLeaderEpoch v2-4 (v0 and v1 went
// with Kafka 4.0, KIP-896): for each partition, the largest leader epoch
// the leader holds at or below the one asked, and where it ended; a
// current leader epoch other than the leader's is fenced (KIP-320).
// Consumers ask it after a leader change to check their position for a
// truncation, and clients that can ask it trust the leader epochs in
// metadata, which is what lets them follow a NOT_LEADER_OR_FOLLOWER's
// leader hint (KIP-951) without a metadata round trip.
func (h *handler) offsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	type slot struct{ t, p int }
	pending := map[uint64]slot{}
	want := map[uint64]bool{}
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			tp := kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			corr := h.send(h.s.Backend.NodeID(), func(corr uint64) kafka.Message {
				return broker.EpochEndRequest{Correlation: corr, TopicPartition: tp, LeaderEpoch: p.LeaderEpoch, CurrentLeaderEpoch: p.CurrentLeaderEpoch}
			})
			pending[corr], want[corr] = slot{ti, len(rt.Partitions) - 1}, true
		}
		resp.Topics = append(resp.Topics, rt)
	}
	err := h.collect(ctx, want, time.Now().Add(backendTimeout), func(corr uint64, msg kafka.Message) bool {
		a, ok := msg.(broker.EpochEndResponse)
		if !ok {
			return false
		}
		s := pending[corr]
		rp := &resp.Topics[s.t].Partitions[s.p]
		rp.ErrorCode = kafka.CodeOf(a.Err)
		if a.Err == nil {
			rp.LeaderEpoch, rp.EndOffset = a.LeaderEpoch, a.EndOffset
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	for corr := range want {
		s := pending[corr]
		resp.Topics[s.t].Partitions[s.p].ErrorCode = kerr.RequestTimedOut.Code
	}
	return resp, nil
}
