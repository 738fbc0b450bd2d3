package kafkawire

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// fetchAPI serves Fetch v4-12: v4 is the first with record batches.
var fetchAPI = api{key: int16(kmsg.Fetch), min: 4, max: 12, serve: withBody((*handler).fetch)}

// fetch asks the broker once for every partition of the request: the
// broker's long poll holds the fetch until the partitions together hold
// fetch.min.bytes, one fails, or the max wait passes (broker.FetchManyRequest),
// so the wait is kept in one place. Fetch sessions (KIP-227) are not kept:
// the answer's session id is 0, so clients send full requests.
func (h *handler) fetch(ctx context.Context, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrFetchResponse()
	if req.SessionID > 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code // never handed out
		return resp, nil
	}
	m := broker.FetchManyRequest{MinBytes: int(max(req.MinBytes, 1)), MaxWaitMs: int64(max(req.MaxWaitMillis, 0))}
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			epoch := int32(-1)
			if req.Version >= 9 {
				epoch = p.CurrentLeaderEpoch
			}
			m.Partitions = append(m.Partitions, broker.FetchPartition{
				TopicPartition:     kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition},
				Offset:             p.FetchOffset,
				MaxBytes:           int(max(p.PartitionMaxBytes, 0)),
				CurrentLeaderEpoch: epoch,
			})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	var answers []broker.FetchResponse
	if len(m.Partitions) > 0 {
		wait := time.Duration(m.MaxWaitMs)*time.Millisecond + answerMargin
		answer, err := h.ask(ctx, h.s.Backend.NodeID(), max(wait, backendTimeout), func(corr uint64) kafka.Message {
			m.Correlation = corr
			return m
		})
		if err != nil {
			return nil, err
		}
		if a, ok := answer.(broker.FetchManyResponse); ok && len(a.Partitions) == len(m.Partitions) {
			answers = a.Partitions
		}
	}
	h.fillFetch(resp, req, answers)
	return resp, nil
}

// fillFetch encodes the answers into resp, stopping adding records once
// the response's MaxBytes is reached (the first batch always goes in, so a
// large batch cannot stall the consumer).
func (h *handler) fillFetch(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, answers []broker.FetchResponse) {
	limit := int(req.MaxBytes)
	if limit <= 0 {
		limit = 1 << 30
	}
	size, i := 0, 0
	for t := range resp.Topics {
		for p := range resp.Topics[t].Partitions {
			fillPartition(&resp.Topics[t].Partitions[p], answerAt(answers, i), limit, &size)
			i++
		}
	}
}

// answerAt is the broker's answer for the i-th partition, nil when none
// came in time.
func answerAt(answers []broker.FetchResponse, i int) *broker.FetchResponse {
	if i < len(answers) {
		return &answers[i]
	}
	return nil
}

// fillPartition encodes one partition's answer, adding records while the
// response stays within limit (size so far in *size).
func fillPartition(rp *kmsg.FetchResponseTopicPartition, a *broker.FetchResponse, limit int, size *int) {
	// Empty, never null, as Kafka answers: sarama (Fetch v4-v11) fails to
	// decode a null record set.
	rp.RecordBatches = []byte{}
	rp.LogStartOffset = -1
	rp.HighWatermark, rp.LastStableOffset = -1, -1
	switch {
	case a == nil:
		rp.ErrorCode = kerr.RequestTimedOut.Code
		return
	case a.Err != nil:
		rp.ErrorCode = kafka.CodeOf(a.Err)
		return
	}
	rp.HighWatermark, rp.LastStableOffset = a.HW, a.HW
	rp.LogStartOffset = a.LogStart
	records := []byte{}
	for i := range a.Batches {
		b := &a.Batches[i]
		if *size > 0 && *size+b.Size() > limit {
			break
		}
		records = appendBatch(records, b)
		*size += b.Size()
	}
	rp.RecordBatches = records
}
