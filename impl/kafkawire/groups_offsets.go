package kafkawire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// offsetCommitAPI serves OffsetCommit v0-8.
var offsetCommitAPI = api{key: int16(kmsg.OffsetCommit), min: 0, max: 8, serve: withBody((*handler).offsetCommit)}

// offsetCommit forwards an OffsetCommit (v0 is a simple commit: no member,
// generation -1) and answers per partition, in the request's shape. The
// committed leader epoch (v6+) and retention (v2-v4) are not kept.
func (h *handler) offsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	c := group.CommitRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	if req.Version < 1 {
		c.MemberID, c.Generation = "", -1
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			o := group.OffsetToCommit{TopicPartition: kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}, Offset: p.Offset}
			if p.Metadata != nil {
				o.Metadata = *p.Metadata
			}
			c.Offsets = append(c.Offsets, o)
		}
	}
	answers, err := h.askGroup(ctx, backendTimeout, c)
	if err != nil {
		return nil, err
	}
	a := answers[0].(group.CommitResponse)
	byTP := make(map[kafka.TopicPartition]error, len(a.Partitions))
	for _, p := range a.Partitions {
		byTP[p.TopicPartition] = p.Err
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			tp := kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			code, ok := byTP[tp]
			if i < len(a.Partitions) && a.Partitions[i].TopicPartition == tp {
				code, ok = a.Partitions[i].Err, true
			}
			if !ok {
				// The coordinator left the partition out: the commit's
				// fate is unknown to the client, which retries.
				code = kafka.ErrCoordinatorNotAvailable
			}
			i++
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kafka.CodeOf(code)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// offsetFetchAPI serves OffsetFetch v0-8.
var offsetFetchAPI = api{key: int16(kmsg.OffsetFetch), min: 0, max: 8, serve: withBody((*handler).offsetFetch)}

// offsetFetch forwards an OffsetFetch: one group before v8, several from
// v8 (asked at once, answered each). A nil topic list asks for every
// partition the group has an offset for. Before v2 there is no top-level
// error code: a group-level error goes in each requested partition, as
// Kafka answers those versions. RequireStable (v7+) is met trivially: there
// are no transactional offsets. Leader epochs are not kept (-1).
func (h *handler) offsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	var reqs []group.Request
	if req.Version < 8 {
		f := group.FetchOffsetsRequest{Group: req.Group}
		if req.Topics != nil || req.Version < 2 {
			f.Partitions = []kafka.TopicPartition{}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					f.Partitions = append(f.Partitions, kafka.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
		}
		reqs = append(reqs, f)
	} else {
		for _, g := range req.Groups {
			f := group.FetchOffsetsRequest{Group: g.Group}
			if g.Topics != nil {
				f.Partitions = []kafka.TopicPartition{}
				for _, t := range g.Topics {
					for _, p := range t.Partitions {
						f.Partitions = append(f.Partitions, kafka.TopicPartition{Topic: t.Topic, Partition: p})
					}
				}
			}
			reqs = append(reqs, f)
		}
	}
	answers, err := h.askGroup(ctx, backendTimeout, reqs...)
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	if req.Version >= 8 {
		for i, g := range req.Groups {
			a := answers[i].(group.FetchOffsetsResponse)
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kafka.CodeOf(a.Err)
			for _, t := range fetchedTopics(reqs[i].(group.FetchOffsetsRequest), a, false) {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	a := answers[0].(group.FetchOffsetsResponse)
	resp.ErrorCode = kafka.CodeOf(a.Err)
	resp.Topics = fetchedTopics(reqs[0].(group.FetchOffsetsRequest), a, req.Version < 2)
	return resp, nil
}

// fetchedTopics groups a's partitions by topic, in the order topics first
// appear. With a group-level error and perPartition, every requested
// partition carries the error instead (OffsetFetch v0-v1).
func fetchedTopics(f group.FetchOffsetsRequest, a group.FetchOffsetsResponse, perPartition bool) []kmsg.OffsetFetchResponseTopic {
	parts := a.Partitions
	if a.Err != nil {
		parts = nil
		if perPartition {
			for _, tp := range f.Partitions {
				parts = append(parts, group.FetchedOffset{TopicPartition: tp, Offset: -1})
			}
		}
	}
	var out []kmsg.OffsetFetchResponseTopic
	index := map[string]int{}
	for _, p := range parts {
		i, ok := index[p.Topic]
		if !ok {
			i = len(out)
			index[p.Topic] = i
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = p.Topic
			out = append(out, rt)
		}
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p.Partition, p.Offset, -1, kafka.CodeOf(a.Err)
		rp.Metadata = kmsg.StringPtr(p.Metadata)
		out[i].Partitions = append(out[i].Partitions, rp)
	}
	return out
}
