package kafkawire

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopic creates a topic through the client and waits until the
// broker's metadata names a leader for every partition.
func createTopic(t *testing.T, cl *kgo.Client, name string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10_000
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Zero(t, resp.Topics[0].ErrorCode, "create %s: %v", name, resp.Topics[0].ErrorMessage)

	require.Eventually(t, func() bool {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		mreq.Topics = append(mreq.Topics, mt)
		m, err := mreq.RequestWith(ctx, cl)
		if err != nil || len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) != int(partitions) {
			return false
		}
		for _, p := range m.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader != int32(testBrokerID) {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "topic %s never got leaders", name)
}

// TestKgoProduceConsumeEveryCodec runs an unmodified franz-go client
// against one broker: an idempotent acks=all producer writes 1000 records
// with each compression codec and a consumer reads them all back in order.
func TestKgoProduceConsumeEveryCodec(t *testing.T) {
	c := startTestCluster(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer admin.Close()

	codecs := map[string]kgo.CompressionCodec{
		"none":   kgo.NoCompression(),
		"gzip":   kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(),
		"lz4":    kgo.Lz4Compression(),
		"zstd":   kgo.ZstdCompression(),
	}
	const n = 1000
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "codec-" + name
			createTopic(t, admin, topic, 1)

			prod, err := kgo.NewClient(
				kgo.SeedBrokers(c.addr),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerBatchCompression(codec),
				kgo.DefaultProduceTopic(topic),
				kgo.ProducerLinger(5*time.Millisecond),
			)
			require.NoError(t, err)
			defer prod.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				errs []error
			)
			for i := range n {
				wg.Add(1)
				r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "value-%04d", i),
					Headers: []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}}}
				prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			require.Empty(t, errs)

			cons, err := kgo.NewClient(
				kgo.SeedBrokers(c.addr),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
				kgo.FetchMaxWait(500*time.Millisecond),
			)
			require.NoError(t, err)
			defer cons.Close()
			var got []*kgo.Record
			for len(got) < n && ctx.Err() == nil {
				fs := cons.PollFetches(ctx)
				if ctx.Err() != nil {
					break
				}
				require.Empty(t, fs.Errors())
				got = append(got, fs.Records()...)
			}
			require.Len(t, got, n)
			for i, r := range got {
				require.Equal(t, int64(i), r.Offset)
				require.Positive(t, r.ProducerID, "kgo produces idempotently by default")
				require.Equal(t, fmt.Sprintf("value-%04d", i), string(r.Value))
				require.Equal(t, fmt.Sprintf("k%d", i%7), string(r.Key))
				require.Len(t, r.Headers, 1)
				require.Equal(t, fmt.Sprint(i), string(r.Headers[0].Value))
			}
		})
	}
}

// TestFetchLongPoll checks that a fetch with MinBytes 1 is held while the
// partition is empty and answered soon after a produce lands, well before
// its max wait.
func TestFetchLongPoll(t *testing.T) {
	c := startTestCluster(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("longpoll"))
	require.NoError(t, err)
	defer cl.Close()
	createTopic(t, cl, "longpoll", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// An empty partition and a short wait: the answer is empty, no error.
	empty := fetchRequest("longpoll", 0, 300)
	resp, err := empty.RequestWith(ctx, cl.Broker(int(testBrokerID)))
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Empty(t, resp.Topics[0].Partitions[0].RecordBatches)

	const maxWait = 10_000
	type result struct {
		resp    *kmsg.FetchResponse
		err     error
		elapsed time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		resp, err := fetchRequest("longpoll", 0, maxWait).RequestWith(ctx, cl.Broker(int(testBrokerID)))
		done <- result{resp, err, time.Since(start)}
	}()
	time.Sleep(200 * time.Millisecond) // let the fetch park first; the assertion does not depend on it
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("wake up")}).FirstErr())
	r := <-done
	require.NoError(t, r.err)
	require.Less(t, r.elapsed, maxWait*time.Millisecond/2, "the fetch waited for its max wait instead of the produce")
	p := r.resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	require.Equal(t, int64(1), p.HighWatermark)
	var batch kmsg.RecordBatch
	require.NoError(t, batch.ReadFrom(p.RecordBatches))
	require.Equal(t, int32(1), batch.NumRecords)

	// One record is less than MinBytes: the fetch is held for its max wait
	// and then answered with what there is. Only a lower bound is checked,
	// which a slow machine cannot break.
	big := fetchRequest("longpoll", 0, 1500)
	big.MinBytes = 1 << 20
	start = time.Now()
	resp, err = big.RequestWith(ctx, cl.Broker(int(testBrokerID)))
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	require.NotEmpty(t, resp.Topics[0].Partitions[0].RecordBatches)
}

// TestFetchMinBytesOverTheWholeResponse checks that fetch.min.bytes counts
// the whole response: a fetch of two empty partitions is answered as soon
// as one of them gets data, while the other is still held at the broker.
func TestFetchMinBytesOverTheWholeResponse(t *testing.T) {
	c := startTestCluster(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("two"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	createTopic(t, cl, "two", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const maxWait = 10_000
	req := fetchRequest("two", 0, maxWait)
	p1 := req.Topics[0].Partitions[0]
	p1.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	done := make(chan *kmsg.FetchResponse, 1)
	start := time.Now()
	go func() {
		resp, err := req.RequestWith(ctx, cl.Broker(int(testBrokerID)))
		if err != nil {
			t.Errorf("fetch: %v", err)
		}
		done <- resp
	}()
	time.Sleep(200 * time.Millisecond) // let the fetch park first; the assertion does not depend on it
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("one")}).FirstErr())
	resp := <-done
	require.NotNil(t, resp)
	require.Less(t, time.Since(start), maxWait*time.Millisecond/2, "the fetch waited for its max wait instead of the produce")
	ps := resp.Topics[0].Partitions
	require.Len(t, ps, 2)
	require.Empty(t, ps[0].RecordBatches)
	require.Equal(t, int64(0), ps[0].HighWatermark)
	require.NotEmpty(t, ps[1].RecordBatches)
	require.Equal(t, int64(1), ps[1].HighWatermark)
}

func fetchRequest(topic string, offset int64, maxWaitMs int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWaitMs, 1, 1<<20
	req.SessionEpoch = -1 // no fetch session
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
