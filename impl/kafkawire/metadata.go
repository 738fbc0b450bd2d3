package kafkawire

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

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

// validTopicName is Kafka's rule: 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
func validTopicName(name string) bool {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// createTopics forwards each topic to the controller. Partitions -1 means
// 1 and replication factor -1 means min(3, live brokers). Explicit replica
// assignments are refused (the controller assigns replicas itself). Of
// the topic configs, max.message.bytes, min.insync.replicas and
// unclean.leader.election.enable are the topic's own (malformed:
// INVALID_CONFIG); the others are accepted and ignored (those settings
// are broker-wide here). ValidateOnly checks the
// arguments against the local metadata.
func (h *handler) createTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrCreateTopicsResponse()
	m, err := h.brokerMetadata(ctx)
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	for _, p := range m.Partitions {
		exists[p.Topic] = true
	}
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	wait := time.Duration(max(req.TimeoutMillis, 1000))*time.Millisecond + time.Second
	pending := map[uint64]int{} // correlation -> index in resp.Topics
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
		partitions, rf := t.NumPartitions, int(t.ReplicationFactor)
		if partitions == -1 {
			partitions = 1
		}
		if rf == -1 {
			rf = min(3, len(m.LiveBrokers))
		}
		cfg, cfgErr := topicConfig(t.Configs)
		var code *kerr.Error
		var msg string
		switch {
		case cfgErr != "":
			code, msg = kerr.InvalidConfig, cfgErr
		case count[t.Topic] > 1:
			code, msg = kerr.InvalidRequest, "topic named more than once in the request"
		case !validTopicName(t.Topic):
			code, msg = kerr.InvalidTopicException, "topic names are 1 to 249 of [a-zA-Z0-9._-], not . or .."
		case len(t.ReplicaAssignment) > 0:
			code, msg = kerr.InvalidRequest, "explicit replica assignment is not supported: the controller assigns replicas"
		case partitions <= 0:
			code, msg = kerr.InvalidPartitions, fmt.Sprintf("%d partitions", t.NumPartitions)
		case rf <= 0 || rf > len(m.LiveBrokers):
			code, msg = kerr.InvalidReplicationFactor, fmt.Sprintf("replication factor %d with %d live brokers", rf, len(m.LiveBrokers))
		case exists[t.Topic]:
			code, msg = kerr.TopicAlreadyExists, "topic already exists"
		}
		if code != nil {
			rt.ErrorCode, rt.ErrorMessage = code.Code, kmsg.StringPtr(msg)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.NumPartitions, rt.ReplicationFactor = partitions, int16(rf)
		resp.Topics = append(resp.Topics, rt)
		if req.ValidateOnly {
			continue
		}
		name := t.Topic
		corr := h.send(broker.ControllerID, func(corr uint64) kafka.Message {
			return broker.CreateTopic{Correlation: corr, Name: name, Partitions: partitions, ReplicationFactor: rf, Config: cfg}
		})
		pending[corr] = len(resp.Topics) - 1
	}
	want := map[uint64]bool{}
	for corr := range pending {
		want[corr] = true
	}
	err = h.collect(ctx, want, time.Now().Add(wait), func(corr uint64, msg kafka.Message) bool {
		if a, ok := msg.(broker.CreateTopicResponse); ok && a.Err != nil {
			rt := &resp.Topics[pending[corr]]
			rt.ErrorCode, rt.ErrorMessage = kafka.CodeOf(a.Err), errorMessage(a.Err)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	for corr := range want { // no answer in time
		rt := &resp.Topics[pending[corr]]
		rt.ErrorCode, rt.ErrorMessage = kerr.RequestTimedOut.Code, errorMessage(errTimedOut)
	}
	return resp, nil
}

// topicConfig reads the topic configs the reference keeps per topic
// (max.message.bytes, min.insync.replicas, unclean.leader.election.enable);
// a message saying what is wrong when one is malformed.
func topicConfig(configs []kmsg.CreateTopicsRequestTopicConfig) (kafka.TopicConfig, string) {
	var cfg kafka.TopicConfig
	for _, c := range configs {
		if c.Value == nil {
			continue
		}
		switch c.Name {
		case "max.message.bytes":
			n, err := strconv.ParseInt(*c.Value, 10, 32)
			if err != nil || n <= 0 {
				return cfg, fmt.Sprintf("max.message.bytes %q: want a positive number of bytes (Kafka's default is %d)", *c.Value, broker.DefaultMessageMaxBytes)
			}
			cfg.MaxMessageBytes = int32(n)
		case "min.insync.replicas":
			n, err := strconv.ParseInt(*c.Value, 10, 32)
			if err != nil || n <= 0 {
				return cfg, fmt.Sprintf("min.insync.replicas %q: want a number of replicas >= 1 (Kafka's default is 1)", *c.Value)
			}
			cfg.MinInsyncReplicas = int32(n)
		case "unclean.leader.election.enable":
			v, err := strconv.ParseBool(*c.Value)
			if err != nil {
				return cfg, fmt.Sprintf("unclean.leader.election.enable %q: want true or false (Kafka's default is false)", *c.Value)
			}
			cfg.UncleanLeaderElection = &v
		}
	}
	return cfg, ""
}

// initProducerID hands out a producer id for an idempotent producer.
// Transactions are not supported: a transactional id gets INVALID_REQUEST,
// which clients report as a request error rather than retry. A v3+ request
// carrying its current producer id (an epoch bump after an error, KIP-360)
// gets a new producer id, which is a new producer identity.
func (h *handler) initProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	answer, err := h.ask(ctx, h.s.Backend.NodeID(), backendTimeout, func(corr uint64) kafka.Message {
		return broker.InitProducerIDRequest{Correlation: corr}
	})
	if err != nil {
		return nil, err
	}
	a, ok := answer.(broker.InitProducerIDResponse)
	switch {
	case !ok:
		resp.ErrorCode = kerr.RequestTimedOut.Code
	case a.Err != nil:
		resp.ErrorCode = kafka.CodeOf(a.Err)
	default:
		resp.ProducerID, resp.ProducerEpoch = a.ProducerID, a.ProducerEpoch
	}
	return resp, nil
}
