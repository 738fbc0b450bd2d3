package kafkawire

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

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

// createTopicsAPI serves CreateTopics v0-7.
var createTopicsAPI = api{key: int16(kmsg.CreateTopics), min: 0, max: 7, serve: withBody((*handler).createTopics)}

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
