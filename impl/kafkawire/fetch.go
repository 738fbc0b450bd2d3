package kafkawire

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// fetchSlot is one partition of a fetch and its latest answer.
type fetchSlot struct {
	t, p   int // index in the response
	req    broker.FetchRequest
	answer *broker.FetchResponse
}

// bytes counts what the answer holds at or after the fetch offset, as the
// broker measures fetch.min.bytes.
func (s *fetchSlot) bytes() int {
	if s.answer == nil {
		return 0
	}
	n := 0
	for i := range s.answer.Batches {
		if b := &s.answer.Batches[i]; b.NextOffset() > s.req.Offset {
			n += b.Size()
		}
	}
	return n
}

// fetchAPI serves Fetch v4-12: v4 is the first with record batches.
var fetchAPI = api{key: int16(kmsg.Fetch), min: 4, max: 12, serve: withBody((*handler).fetch)}

// fetch reads every partition of the request from the broker. Kafka's
// fetch.min.bytes and max wait apply to the whole response, while the broker
// holds each partition on its own, so the server asks twice: every
// partition without waiting, and, if that is not enough, every partition
// again with the remaining wait, held until it has more than the first
// round found, answering as soon as the response holds MinBytes or every
// partition answered. Fetch sessions
// (KIP-227) are not kept: the answer's session id is 0, so clients send
// full requests.
func (h *handler) fetch(ctx context.Context, req *kmsg.FetchRequest) (kmsg.Response, error) {
	start := time.Now()
	resp := kmsg.NewPtrFetchResponse()
	if req.SessionID > 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code // never handed out
		return resp, nil
	}
	var slots []*fetchSlot
	for ti, t := range req.Topics {
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
			slots = append(slots, &fetchSlot{t: ti, p: len(rt.Partitions) - 1, req: broker.FetchRequest{
				TopicPartition:     kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition},
				Offset:             p.FetchOffset,
				MaxBytes:           int(max(p.PartitionMaxBytes, 0)),
				CurrentLeaderEpoch: epoch,
			}})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	minBytes := int(max(req.MinBytes, 1))
	total := func() int {
		n := 0
		for _, s := range slots {
			n += s.bytes()
		}
		return n
	}
	if err := h.fetchRound(ctx, slots, 0, minBytes, total); err != nil {
		return nil, err
	}
	wait := time.Duration(req.MaxWaitMillis)*time.Millisecond - time.Since(start)
	if wait > 0 && total() < minBytes && !anyFetchError(slots) {
		if err := h.fetchRound(ctx, slots, wait, minBytes, total); err != nil {
			return nil, err
		}
	}
	h.fillFetch(resp, req, slots)
	return resp, nil
}

// fetchRound sends every slot's request with the given wait and collects
// the answers until all came, the response holds minBytes (only when
// waiting) or the wait plus a margin passed.
func (h *handler) fetchRound(ctx context.Context, slots []*fetchSlot, wait time.Duration, minBytes int, total func() int) error {
	bySlot := map[uint64]*fetchSlot{}
	want := map[uint64]bool{}
	for _, s := range slots {
		r := s.req
		if wait > 0 {
			// Hold each partition until it has more than round one
			// found: only growth can bring the total to minBytes.
			r.MinBytes, r.MaxWaitMs = s.bytes()+1, max(wait.Milliseconds(), 1)
		}
		corr := h.send(h.s.Backend.NodeID(), func(corr uint64) kafka.Message {
			r.Correlation = corr
			return r
		})
		bySlot[corr], want[corr] = s, true
	}
	deadline := time.Now().Add(wait + answerMargin)
	if wait == 0 {
		deadline = time.Now().Add(backendTimeout)
	}
	return h.collect(ctx, want, deadline, func(corr uint64, msg kafka.Message) bool {
		a, ok := msg.(broker.FetchResponse)
		if !ok {
			return false
		}
		s := bySlot[corr]
		if wait > 0 && a.Err == nil && len(a.Batches) == 0 && s.answer != nil {
			s.answer.HW, s.answer.LEO = a.HW, a.LEO // keep what round one found
		} else {
			s.answer = &a
		}
		return wait > 0 && total() >= minBytes
	})
}

func anyFetchError(slots []*fetchSlot) bool {
	for _, s := range slots {
		if s.answer != nil && s.answer.Err != nil {
			return true
		}
	}
	return false
}

// fillFetch encodes the answers into resp, stopping adding records once
// the response's MaxBytes is reached (the first batch always goes in, so a
// large batch cannot stall the consumer).
func (h *handler) fillFetch(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, slots []*fetchSlot) {
	limit := int(req.MaxBytes)
	if limit <= 0 {
		limit = 1 << 30
	}
	size := 0
	for _, s := range slots {
		rp := &resp.Topics[s.t].Partitions[s.p]
		// Empty, never null, as Kafka answers: sarama (Fetch v4-v11)
		// fails to decode a null record set.
		rp.RecordBatches = []byte{}
		rp.LogStartOffset = -1
		rp.HighWatermark, rp.LastStableOffset = -1, -1
		switch {
		case s.answer == nil:
			rp.ErrorCode = kerr.RequestTimedOut.Code
			continue
		case s.answer.Err != nil:
			rp.ErrorCode = kafka.CodeOf(s.answer.Err)
			rp.LogStartOffset = -1
			continue
		}
		rp.HighWatermark, rp.LastStableOffset = s.answer.HW, s.answer.HW
		rp.LogStartOffset = s.answer.LogStart
		records := []byte{}
		for i := range s.answer.Batches {
			b := &s.answer.Batches[i]
			if size > 0 && size+b.Size() > limit {
				break
			}
			records = appendBatch(records, b)
			size += b.Size()
		}
		rp.RecordBatches = records
	}
}
