package clients

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	benchTopic      = "bench"
	benchPartitions = 3
	benchRecordSize = 1 << 10
	// benchInFlight bounds the records produced but not yet acknowledged,
	// below kgo's MaxBufferedRecords, so that Produce never blocks inside
	// the measured latency on kgo's own buffer.
	benchInFlight = 4096
)

// BenchmarkProduce measures an idempotent acks=all kgo producer writing
// 1 KiB records to a three-partition topic with replication factor 3, on
// the reference (three brokers in this process, real TCP, real files) and
// on kfake (franz-go's in-memory fake, three brokers), with kgo's default
// batching and linger. It reports records/s, MB/s and the p50/p99 latency
// from Produce to the record's promise.
//
// Values are random and compression is off, so that MB/s counts bytes
// carried, replicated and stored rather than snappy's ratio on zeros.
//
// When both sub-benchmarks run, it logs the reference's throughput and
// latency relative to kfake's (run with -v to see it).
func BenchmarkProduce(b *testing.B) {
	ref, fake := sideBySide(b, benchProduce)
	if ref.recordsPerSec > 0 && fake.recordsPerSec > 0 {
		b.Logf("reference/kfake: throughput %.2fx, p50 latency %.2fx, p99 latency %.2fx",
			ref.recordsPerSec/fake.recordsPerSec, ref.p50/fake.p50, ref.p99/fake.p99)
	}
}

// sideBySide runs bench on the reference (three brokers in this process)
// and on kfake (three brokers), as sub-benchmarks, and returns the last
// result of each (zero for one that did not run).
func sideBySide[R any](b *testing.B, bench func(b *testing.B, seeds []string) R) (ref, fake R) {
	b.Run("reference", func(b *testing.B) {
		lc := startCluster(b)
		ref = bench(b, lc.Bootstrap())
	})
	b.Run("kfake", func(b *testing.B) {
		c, err := kfake.NewCluster(kfake.NumBrokers(brokers))
		require.NoError(b, err)
		defer c.Close()
		fake = bench(b, c.ListenAddrs())
	})
	return ref, fake
}

// produceResult is one sub-benchmark's last run, for the ratio.
type produceResult struct {
	recordsPerSec float64
	p50, p99      float64 // milliseconds
}

func benchProduce(b *testing.B, seeds []string) produceResult {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(benchTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(time.Minute),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	require.NoError(b, err)
	defer cl.Close()
	createTopic(b, cl, benchTopic, benchPartitions)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Warm up: connections, producer id, metadata.
	require.NoError(b, cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, benchRecordSize)}).FirstErr())

	value := make([]byte, benchRecordSize)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(value)
	lat := make([]time.Duration, b.N)
	sem := make(chan struct{}, benchInFlight)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	b.SetBytes(benchRecordSize)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		sem <- struct{}{}
		wg.Add(1)
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(sent)
			if err != nil {
				errOnce.Do(func() { firstErr = err })
			}
			<-sem
			wg.Done()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	require.NoError(b, firstErr)

	slices.Sort(lat)
	res := produceResult{
		recordsPerSec: float64(b.N) / elapsed.Seconds(),
		p50:           ms(percentile(lat, 0.50)),
		p99:           ms(percentile(lat, 0.99)),
	}
	b.ReportMetric(res.recordsPerSec, "records/s")
	b.ReportMetric(res.recordsPerSec*benchRecordSize/1e6, "MB/s")
	b.ReportMetric(res.p50, "p50-ms")
	b.ReportMetric(res.p99, "p99-ms")
	return res
}

// percentile is the q-quantile of sorted latencies (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
