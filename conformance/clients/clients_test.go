package clients

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Every failover test writes records 0..2*perHalf-1 over topicPartitions
// partitions, killing partition 0's leader between the two halves.
const (
	topicPartitions = 3
	perHalf         = 300
)

// consumed is what a consumer read from one partition: record values in
// offset order, and the partition's high watermark as the last fetch saw it.
type consumed struct {
	offsets []int64
	values  []int
	hw      int64
}

// position is where the producer was told a record went.
type position struct {
	partition int32
	offset    int64
}

// requireExactlyOnce checks that the partitions hold every value in
// 0..total-1 exactly once, that offsets are contiguous from 0 up to the
// high watermark (so nothing was read twice and nothing lies unread past
// the last record), that values grow within each partition (the
// producer's per-partition order survived its retries), and that each
// value sits where its acknowledgement said (acked[value]).
func requireExactlyOnce(t *testing.T, parts map[int32]*consumed, acked []position) {
	t.Helper()
	total := len(acked)
	seen := make(map[int]int32, total)
	for p, c := range parts {
		require.Equal(t, int64(len(c.values)), c.hw, "partition %d: records read vs high watermark", p)
		for i, v := range c.values {
			require.Equal(t, int64(i), c.offsets[i], "partition %d: offsets are not contiguous", p)
			if prev, dup := seen[v]; dup {
				require.Failf(t, "duplicate", "value %d is in partition %d and again in partition %d at offset %d", v, prev, p, c.offsets[i])
			}
			seen[v] = p
			require.Less(t, v, total, "partition %d offset %d: value %d was never produced", p, i, v)
			require.Equal(t, acked[v], position{p, c.offsets[i]}, "value %d is not where its acknowledgement put it", v)
			if i > 0 {
				require.Greater(t, v, c.values[i-1], "partition %d: value %d at offset %d after %d: out of order", p, v, i, c.values[i-1])
			}
		}
	}
	for v := range total {
		_, ok := seen[v]
		require.True(t, ok, "acknowledged value %d was never read", v)
	}
}

func recordValue(t *testing.T, b []byte) int {
	t.Helper()
	v, err := strconv.Atoi(string(b))
	require.NoError(t, err, "value %q", b)
	return v
}

// TestKgoIdempotentProduceAcrossLeaderCrash runs franz-go's kgo, unmodified
// and with its defaults (idempotent, acks=all), through a crash of a
// partition leader: records produced before the crash and during the
// failover are all acknowledged, and a fresh consumer reads each exactly
// once and in order, although the producer retried through the failover.
// Reference: KIP-98 (idempotent producer), KIP-679 (idempotence by default).
func TestKgoIdempotentProduceAcrossLeaderCrash(t *testing.T) {
	lc := startCluster(t)
	const topic = "kgo-failover"
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(lc.Bootstrap()...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	require.NoError(t, err)
	defer prod.Close()
	createTopic(t, prod, topic, topicPartitions)

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	acked := make([]position, 2*perHalf)
	produceHalf := func(from int) {
		recs := make([]*kgo.Record, 0, perHalf)
		for i := from; i < from+perHalf; i++ {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte(strconv.Itoa(i))})
		}
		res := prod.ProduceSync(ctx, recs...)
		require.NoError(t, res.FirstErr(), "records %d..%d", from, from+perHalf-1)
		for _, r := range res {
			acked[recordValue(t, r.Record.Value)] = position{r.Record.Partition, r.Record.Offset}
		}
	}
	produceHalf(0)
	leader := leaderOf(t, prod, topic, 0)
	require.NoError(t, lc.Kill(leader))
	produceHalf(perHalf)
	require.NotEqual(t, leader, leaderOf(t, prod, topic, 0), "the second half was acknowledged by a dead leader")
	require.NoError(t, lc.Restart(leader))

	offsets := map[int32]kgo.Offset{}
	for p := range int32(topicPartitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(lc.Bootstrap()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	require.NoError(t, err)
	defer cons.Close()
	parts := map[int32]*consumed{}
	for p := range int32(topicPartitions) {
		parts[p] = &consumed{}
	}
	for n := 0; n < 2*perHalf; {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", n, 2*perHalf)
		for _, e := range fs.Errors() {
			t.Logf("fetch %s/%d: %v (kgo retries)", e.Topic, e.Partition, e.Err)
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			c := parts[fp.Partition]
			c.hw = max(c.hw, fp.HighWatermark)
			for _, r := range fp.Records {
				c.offsets = append(c.offsets, r.Offset)
				c.values = append(c.values, recordValue(t, r.Value))
				n++
			}
		})
	}
	requireExactlyOnce(t, parts, acked)
}

// saramaConfig is an idempotent acks=all producer and a consumer at a
// Kafka version whose requests the reference serves (sarama 1.61 at 3.0.0:
// ApiVersions v3, Metadata v11, Produce v9, Fetch v12, InitProducerId v4).
// Retries are generous enough to outlast a failover (session timeout 1.5 s).
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.ClientID = "watermark-conformance"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 100
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Metadata.Retry.Max = 100
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Fetch.Default = 1 << 20
	cfg.Consumer.MaxWaitTime = 500 * time.Millisecond
	return cfg
}

// TestSaramaIdempotentProduceAcrossLeaderCrash is the kgo test with IBM's
// sarama, unmodified: a SyncProducer (idempotent, WaitForAll, one request
// in flight) through a leader crash, then ConsumePartition from the oldest
// offset of every partition.
// Reference: KIP-98 (idempotent producer).
func TestSaramaIdempotentProduceAcrossLeaderCrash(t *testing.T) {
	lc := startCluster(t)
	const topic = "sarama-failover"
	cfg := saramaConfig()
	admin, err := sarama.NewClusterAdmin(lc.Bootstrap(), cfg)
	require.NoError(t, err)
	defer func() { _ = admin.Close() }()
	minISR := strconv.Itoa(minInsyncReplicas)
	// Retried on INVALID_REPLICATION_FACTOR for the reason createTopic
	// gives.
	for try, deadline := 0, time.Now().Add(20*time.Second); ; try++ {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{
			NumPartitions:     topicPartitions,
			ReplicationFactor: replicationFactor,
			ConfigEntries:     map[string]*string{"min.insync.replicas": &minISR},
		}, false)
		if err == nil || errors.Is(err, sarama.ErrTopicAlreadyExists) && try > 0 {
			break
		}
		if !errors.Is(err, sarama.ErrInvalidReplicationFactor) || time.Now().After(deadline) {
			require.NoError(t, err, "create %s (try %d)", topic, try)
		}
		time.Sleep(100 * time.Millisecond)
	}

	client, err := sarama.NewClient(lc.Bootstrap(), cfg)
	require.NoError(t, err)
	defer func() { _ = client.Close() }()
	require.Eventually(t, func() bool {
		if client.RefreshMetadata(topic) != nil {
			return false
		}
		for p := range int32(topicPartitions) {
			isr, err := client.InSyncReplicas(topic, p)
			if err != nil || len(isr) != replicationFactor {
				return false
			}
			if _, err := client.Leader(topic, p); err != nil {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond, "topic %s never got leaders and full ISRs", topic)

	prod, err := sarama.NewSyncProducerFromClient(client)
	require.NoError(t, err)
	defer func() { _ = prod.Close() }()
	acked := make([]position, 2*perHalf)
	produceHalf := func(from int) {
		msgs := make([]*sarama.ProducerMessage, 0, perHalf)
		for i := from; i < from+perHalf; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint("k", i)), Value: sarama.StringEncoder(strconv.Itoa(i))})
		}
		require.NoError(t, prod.SendMessages(msgs), "records %d..%d", from, from+perHalf-1)
		for i, m := range msgs {
			acked[from+i] = position{m.Partition, m.Offset}
		}
	}
	produceHalf(0)
	leader, err := client.Leader(topic, 0)
	require.NoError(t, err)
	require.NoError(t, lc.Kill(int(leader.ID())))
	produceHalf(perHalf)
	newLeader, err := client.Leader(topic, 0)
	require.NoError(t, err)
	require.NotEqual(t, leader.ID(), newLeader.ID(), "the second half was acknowledged by a dead leader")
	require.NoError(t, lc.Restart(int(leader.ID())))

	cons, err := sarama.NewConsumer(lc.Bootstrap(), saramaConfig())
	require.NoError(t, err)
	defer func() { _ = cons.Close() }()
	parts := map[int32]*consumed{}
	var pcs []sarama.PartitionConsumer
	for p := range int32(topicPartitions) {
		parts[p] = &consumed{}
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		require.NoError(t, err, "partition %d", p)
		defer func() { _ = pc.Close() }()
		pcs = append(pcs, pc)
	}
	deadline := time.After(45 * time.Second)
	for n := 0; n < 2*perHalf; {
		// One partition consumer at a time: each keeps its own order.
		for p, pc := range pcs {
			c := parts[int32(p)]
		drain:
			for {
				select {
				case m := <-pc.Messages():
					c.offsets = append(c.offsets, m.Offset)
					c.values = append(c.values, recordValue(t, m.Value))
					n++
				case e := <-pc.Errors():
					t.Logf("consume %s/%d: %v (sarama retries)", e.Topic, e.Partition, e.Err)
				case <-deadline:
					require.FailNow(t, "timeout", "consumed %d of %d records", n, 2*perHalf)
				case <-time.After(50 * time.Millisecond):
					break drain
				}
			}
		}
	}
	for p, pc := range pcs {
		parts[int32(p)].hw = pc.HighWaterMarkOffset()
	}
	requireExactlyOnce(t, parts, acked)
}
