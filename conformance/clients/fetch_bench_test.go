package clients

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkFetch measures a kgo consumer reading b.N records of 1 KiB
// from the start of a three-partition topic with replication factor 3, on
// the reference (three brokers in this process, reading its segment
// files) and on kfake, side by side. The records are produced first,
// outside the timer. It reports records/s and MB/s, and when both
// sub-benchmarks run logs the reference's throughput relative to kfake's
// (run with -v to see it).
func BenchmarkFetch(b *testing.B) {
	ref, fake := sideBySide(b, benchFetch)
	if ref > 0 && fake > 0 {
		b.Logf("reference/kfake: fetch throughput %.2fx", ref/fake)
	}
}

const fetchTopic = "bench-fetch"

func benchFetch(b *testing.B, seeds []string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pr, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(fetchTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(b, err)
	defer pr.Close()
	createTopic(b, pr, fetchTopic, benchPartitions)
	value := make([]byte, benchRecordSize)
	_, _ = rand.NewChaCha8([32]byte{2}).Read(value)
	var errOnce sync.Once
	var firstErr error
	for range b.N {
		pr.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				errOnce.Do(func() { firstErr = err })
			}
		})
	}
	require.NoError(b, pr.Flush(ctx))
	require.NoError(b, firstErr)

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(fetchTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(b, err)
	defer cl.Close()
	b.SetBytes(benchRecordSize)
	b.ResetTimer()
	start := time.Now()
	for got := 0; got < b.N; {
		fetches := cl.PollFetches(ctx)
		require.NoError(b, ctx.Err())
		for _, fe := range fetches.Errors() {
			require.NoError(b, fe.Err, "fetch %s-%d", fe.Topic, fe.Partition)
		}
		got += fetches.NumRecords()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(rate*benchRecordSize/1e6, "MB/s")
	return rate
}
