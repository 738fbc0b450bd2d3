package kafkawire

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// ClusterID is what Metadata reports as the cluster id.
const ClusterID = "watermark"

// brokerMetadata asks the local broker for the partition states it knows.
func (h *handler) brokerMetadata(ctx context.Context) (broker.MetadataResponse, error) {
	answer, err := h.ask(ctx, h.s.Backend.NodeID(), backendTimeout, func(corr uint64) kafka.Message {
		return broker.MetadataRequest{Correlation: corr}
	})
	if err != nil {
		return broker.MetadataResponse{}, err
	}
	m, ok := answer.(broker.MetadataResponse)
	if !ok {
		// Metadata has no error code to carry this: the client
		// reconnects and asks again.
		return m, fmt.Errorf("metadata: %w", errTimedOut)
	}
	return m, nil
}

// metadataAPI serves Metadata v1-12.
var metadataAPI = api{key: int16(kmsg.Metadata), min: 1, max: 12, serve: withBody((*handler).metadata)}

// metadata answers Metadata from the local broker's view. There is no
// controller broker in this cluster (the controller is a separate node), so
// ControllerID names the lowest live broker listed (one clients can reach),
// which is as good as any for the admin requests clients send there. Topics
// are never auto-created.
func (h *handler) metadata(ctx context.Context, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	m, err := h.brokerMetadata(ctx)
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.ClusterID = kmsg.StringPtr(ClusterID)
	resp.ControllerID = -1
	live := slices.Sorted(slices.Values(m.LiveBrokers))
	for _, id := range live {
		host, port, ok := splitAddress(m.Addresses[id])
		if !ok {
			continue // not reachable by clients: leave it out
		}
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = id, host, port
		resp.Brokers = append(resp.Brokers, b)
		if resp.ControllerID == -1 {
			resp.ControllerID = id
		}
	}
	byTopic := map[string][]kafka.PartitionState{}
	var names []string
	for _, p := range m.Partitions {
		if _, ok := byTopic[p.Topic]; !ok {
			names = append(names, p.Topic)
		}
		byTopic[p.Topic] = append(byTopic[p.Topic], p)
	}
	if req.Topics != nil { // nil asks for all topics
		names = names[:0]
		for _, t := range req.Topics {
			if t.Topic == nil {
				rt := kmsg.NewMetadataResponseTopic()
				rt.TopicID = t.TopicID
				rt.ErrorCode = kerr.UnknownTopicID.Code // topic ids are not kept
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.IsInternal = name == broker.OffsetsTopic
		parts, ok := byTopic[name]
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		for _, p := range parts {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
			rp.Replicas = slices.Clone(p.Replicas)
			rp.ISR = slices.Clone(p.ISR)
			for _, r := range p.Replicas {
				if !slices.Contains(live, r) {
					rp.OfflineReplicas = append(rp.OfflineReplicas, r)
				}
			}
			if p.Leader == kafka.NoLeader {
				rp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// splitAddress splits an advertised "host:port".
func splitAddress(addr string) (string, int32, bool) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return "", 0, false
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, false
	}
	return host, int32(port), true
}
