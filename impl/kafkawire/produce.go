package kafkawire

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// answerMargin is how long past a client's own timeout the server waits for
// the broker, whose parked requests expire on its ticks.
const answerMargin = 2 * time.Second

// produceAPI serves Produce v3-11: v3 is the first with record batches
// (magic 2).
var produceAPI = api{key: int16(kmsg.Produce), min: 3, max: 11, serve: withBody((*handler).produce)}

// produce sends each partition's batch to the broker as one ProduceRequest
// and waits for all answers. A partition whose records do not decode is
// answered at once (CORRUPT_MESSAGE, INVALID_RECORD) and not sent. With
// acks=0 nothing is answered, as in Kafka, and a partition refused here
// closes the connection, also as in Kafka.
func (h *handler) produce(ctx context.Context, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrProduceResponse()
	var acks partition.Acks
	acksOK := true
	switch req.Acks {
	case -1:
		acks = partition.AcksAll
	case 1:
		acks = partition.AcksLeader
	case 0:
		acks = partition.AcksNone
	default:
		acksOK = false
	}
	type slot struct{ t, p int }
	pending := map[uint64]slot{}
	var refused error // the first partition answered without the broker
	for ti, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = p.Partition, -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			if !acksOK {
				rp := &rt.Partitions[len(rt.Partitions)-1]
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
				continue
			}
			// The broker bounds the batch by its size as sent
			// (WireBytes: message.max.bytes, or the topic's
			// max.message.bytes); decoding is bounded on its own.
			pb, err := decodeProduce(p.Records, h.s.decomp)
			if err != nil {
				rp := &rt.Partitions[len(rt.Partitions)-1]
				rp.ErrorCode, rp.ErrorMessage = kafka.CodeOf(err), errorMessage(err)
				if refused == nil {
					refused = fmt.Errorf("produce to %s-%d: %w", t.Topic, p.Partition, err)
				}
				continue
			}
			tp := kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			corr := h.send(h.s.Backend.NodeID(), func(corr uint64) kafka.Message {
				return broker.ProduceRequest{
					Correlation:    corr,
					TopicPartition: tp,
					Acks:           acks,
					Batch:          pb,
					TimeoutMs:      int64(max(req.TimeoutMillis, 0)),
					WireBytes:      len(p.Records),
				}
			})
			pending[corr] = slot{ti, len(rt.Partitions) - 1}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if acks == partition.AcksNone && acksOK {
		if refused != nil {
			// Kafka closes the connection when an acks=0 produce fails,
			// the only way to tell a client that reads no answer.
			return nil, fmt.Errorf("acks=0 %w", refused)
		}
		return nil, nil
	}
	want := make(map[uint64]bool, len(pending))
	for corr := range pending {
		want[corr] = true
	}
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond + answerMargin)
	err := h.collect(ctx, want, deadline, func(corr uint64, msg kafka.Message) bool {
		a, ok := msg.(broker.ProduceResponse)
		if !ok {
			return false
		}
		s := pending[corr]
		rp := &resp.Topics[s.t].Partitions[s.p]
		rp.ErrorCode, rp.ErrorMessage = kafka.CodeOf(a.Err), errorMessage(a.Err)
		if a.Err == nil {
			rp.BaseOffset = a.BaseOffset
		}
		if req.Version >= 10 && a.Leader.ID >= 0 {
			leaderHint(resp, rp, a.Leader)
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	for corr := range want {
		s := pending[corr]
		rp := &resp.Topics[s.t].Partitions[s.p]
		rp.ErrorCode, rp.ErrorMessage = kerr.RequestTimedOut.Code, errorMessage(errTimedOut)
	}
	return resp, nil
}

// leaderHint tells a client refused with NOT_LEADER_OR_FOLLOWER who leads
// now (KIP-951, Produce v10+: the partition's CurrentLeader and the
// response's NodeEndpoints), so that it moves there without a metadata
// round trip, as it does with Kafka since 3.7. A leader whose address is
// unknown is named without an endpoint, which clients ignore.
func leaderHint(resp *kmsg.ProduceResponse, rp *kmsg.ProduceResponseTopicPartition, l broker.LeaderHint) {
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = l.ID, l.Epoch
	host, port, err := net.SplitHostPort(l.Address)
	n, perr := strconv.ParseInt(port, 10, 32)
	if err != nil || perr != nil {
		return
	}
	for _, b := range resp.Brokers {
		if b.NodeID == l.ID {
			return
		}
	}
	nb := kmsg.NewProduceResponseBroker()
	nb.NodeID, nb.Host, nb.Port = l.ID, host, int32(n)
	resp.Brokers = append(resp.Brokers, nb)
}
