package kafkawire

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// listOffsetsAPI serves ListOffsets v1-7.
var listOffsetsAPI = api{key: int16(kmsg.ListOffsets), min: 1, max: 7, serve: withBody((*handler).listOffsets)}

// listOffsets answers the earliest (-2) and latest (-1) offsets; latest is
// the HW, the end of what consumers can read. Searching by timestamp is not
// supported: such a partition is answered with offset -1 and timestamp -1,
// which Kafka gives when no record is that recent.
func (h *handler) listOffsets(ctx context.Context, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrListOffsetsResponse()
	type slot struct {
		t, p  int
		epoch int32
	}
	pending := map[uint64]slot{}
	want := map[uint64]bool{}
	for ti, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Offset, rp.Timestamp, rp.LeaderEpoch = p.Partition, -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			if p.Timestamp != -1 && p.Timestamp != -2 {
				continue
			}
			epoch := int32(-1)
			if req.Version >= 4 {
				epoch = p.CurrentLeaderEpoch
			}
			tp := kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			latest := p.Timestamp == -1
			corr := h.send(h.s.Backend.NodeID(), func(corr uint64) kafka.Message {
				return broker.ListOffsetsRequest{Correlation: corr, TopicPartition: tp, Latest: latest}
			})
			pending[corr], want[corr] = slot{ti, len(rt.Partitions) - 1, epoch}, true
		}
		resp.Topics = append(resp.Topics, rt)
	}
	err := h.collect(ctx, want, time.Now().Add(backendTimeout), func(corr uint64, msg kafka.Message) bool {
		a, ok := msg.(broker.ListOffsetsResponse)
		if !ok {
			return false
		}
		s := pending[corr]
		rp := &resp.Topics[s.t].Partitions[s.p]
		switch {
		case a.Err != nil:
			rp.ErrorCode = kafka.CodeOf(a.Err)
		case s.epoch >= 0 && s.epoch < a.LeaderEpoch: // KIP-320
			rp.ErrorCode = kerr.FencedLeaderEpoch.Code
		case s.epoch > a.LeaderEpoch:
			rp.ErrorCode = kerr.UnknownLeaderEpoch.Code
		default:
			rp.Offset, rp.LeaderEpoch = a.Offset, a.LeaderEpoch
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
