package clients

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/node"
)

// Settings of every reference cluster here: the simulator's live defaults
// (conformance/sim), so that a failover completes within a few seconds.
const (
	brokers           = 3
	replicationFactor = 3
	minInsyncReplicas = 2
	sessionTimeoutMs  = 1500
)

// startCluster starts a fresh reference cluster of three brokers and a
// controller in this process and stops it when the test ends.
func startCluster(tb testing.TB) *node.LocalCluster {
	tb.Helper()
	lc, err := node.StartLocalCluster(node.LocalOptions{
		Brokers: brokers,
		Dir:     tb.TempDir(),
		Broker: func(id int) broker.Config {
			cfg := broker.Config{Settings: run.DefaultSettings().Broker, ID: broker.NodeID(id)}
			cfg.MinInsyncReplicas = minInsyncReplicas
			return cfg
		},
		Controller: controller.Config{SessionTimeoutMs: sessionTimeoutMs},
		Logf:       func(string, ...any) {},
	})
	require.NoError(tb, err)
	tb.Cleanup(lc.Close)
	return lc
}

// createTopic creates topic through cl with a raw CreateTopics request
// (kadm is a module of its own) and waits until every partition has a
// leader and a full ISR.
func createTopic(tb testing.TB, cl *kgo.Client, topic string, partitions int32) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, replicationFactor
	// Ignored by the reference (its partition settings are broker-wide),
	// honoured by kfake and Kafka.
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "min.insync.replicas", kmsg.StringPtr(fmt.Sprint(minInsyncReplicas))
	rt.Configs = append(rt.Configs, c)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10_000
	// The reference's wire server checks the replication factor against
	// its own broker's view of the live brokers, which trails the
	// controller's: right after start it answered INVALID_REPLICATION_FACTOR
	// ("3 with 2 live brokers") in about one loaded run in twenty-five.
	// StartLocalCluster now waits for every broker's view; the retry stays,
	// as a client's would. TOPIC_ALREADY_EXISTS on a retry means an earlier
	// try landed.
	for try, deadline := 0, time.Now().Add(20*time.Second); ; try++ {
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(tb, err, "create %s", topic)
		require.Len(tb, resp.Topics, 1)
		code := resp.Topics[0].ErrorCode
		if code == 0 || code == kerr.TopicAlreadyExists.Code && try > 0 {
			break
		}
		if code != kerr.InvalidReplicationFactor.Code || time.Now().After(deadline) {
			var msg string
			if m := resp.Topics[0].ErrorMessage; m != nil {
				msg = *m
			}
			require.Zero(tb, code, "create %s (try %d): %v: %s", topic, try, kerr.ErrorForCode(code), msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Eventually(tb, func() bool {
		m, err := topicMetadata(ctx, cl, topic)
		if err != nil || len(m.Partitions) != int(partitions) {
			return false
		}
		for _, p := range m.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != replicationFactor {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "topic %s never got leaders and full ISRs", topic)
}

// topicMetadata asks any broker for topic's metadata.
func topicMetadata(ctx context.Context, cl *kgo.Client, topic string) (kmsg.MetadataResponseTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.MetadataResponseTopic{}, err
	}
	if len(resp.Topics) != 1 {
		return kmsg.MetadataResponseTopic{}, fmt.Errorf("metadata for %s: %d topics", topic, len(resp.Topics))
	}
	if ec := resp.Topics[0].ErrorCode; ec != 0 {
		return kmsg.MetadataResponseTopic{}, fmt.Errorf("metadata for %s: error code %d", topic, ec)
	}
	return resp.Topics[0], nil
}

// leaderOf is the broker leading topic's partition p.
func leaderOf(tb testing.TB, cl *kgo.Client, topic string, p int32) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := topicMetadata(ctx, cl, topic)
	require.NoError(tb, err)
	for _, mp := range m.Partitions {
		if mp.Partition == p {
			require.Zero(tb, mp.ErrorCode)
			require.Positive(tb, mp.Leader)
			return int(mp.Leader)
		}
	}
	require.FailNow(tb, "no such partition", "%s/%d", topic, p)
	return 0
}
