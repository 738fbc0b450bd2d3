package clients

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// An operator's schedule that once lost every acknowledged record, on
// `watermark cluster` processes with its defaults (Kafka's timeouts, min
// ISR 2): 3000 records acknowledged with acks=all over three partitions;
// brokers 2 and 3 stopped with SIGTERM one after the other; 15 s later
// broker 1, alone in every ISR, stopped with SIGTERM too; 8 bytes flipped
// in the middle of each of broker 1's logs (franz-go batches them: one
// batch of about 12 KB each, so the damage looks like a torn tail);
// broker 1 started, then 2 and 3 six seconds later. Every acknowledged
// record must be read back within a minute of the last return: broker 1
// stopped cleanly, so the cut is lost data and it leads nothing it lost,
// and broker 3 (and 2 where eligible) stopped cleanly with every
// committed record, so it keeps its place among the eligible leader
// replicas and leads.
// Reference: spec/SEMANTICS.md, Controlled shutdown and clean restarts;
// KIP-966.
func TestCleanStopsThenDamageLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes for about a minute and a half; run without -short")
	}
	bin, cleanup, err := cluster.TestBinary()
	require.NoError(t, err)
	defer cleanup()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var logs strings.Builder
	c, err := cluster.Start(ctx, cluster.Options{Binary: bin, Brokers: 3, Dir: t.TempDir(), Settings: run.KafkaSettings(),
		Logf: func(f string, a ...any) { fmt.Fprintf(&logs, f+"\n", a...) }})
	require.NoError(t, err)
	defer func() { _ = c.Stop() }()
	describe := func() string {
		var b strings.Builder
		c.Describe(&b)
		return logs.String() + b.String()
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic("t"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	createTopic(t, cl, "t", 3)
	const n = 3000
	var records []*kgo.Record
	for i := range n {
		records = append(records, &kgo.Record{Partition: int32(i % 3), Value: fmt.Appendf(nil, "%d", i)})
	}
	require.NoError(t, cl.ProduceSync(ctx, records...).FirstErr(), "every record acknowledged with acks=all")
	cl.Close()

	require.NoError(t, c.Terminate(2, time.Minute), describe())
	require.NoError(t, c.Terminate(3, time.Minute), describe())
	time.Sleep(15 * time.Second)
	require.NoError(t, c.Terminate(1, time.Minute), describe())
	tps := []kafka.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}
	damaged, err := c.DamageLog(1, tps, 8, nil, true)
	require.NoError(t, err)
	require.Len(t, damaged, 3, "each of broker 1's logs damaged")

	require.NoError(t, c.Restart(ctx, 1))
	time.Sleep(6 * time.Second)
	require.NoError(t, c.Restart(ctx, 2))
	require.NoError(t, c.Restart(ctx, 3))
	back := time.Now()

	// Read every partition from its start until all n are seen.
	seen := map[string]bool{}
	reader, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	require.NoError(t, err)
	defer reader.Close()
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	for len(seen) < n && rctx.Err() == nil {
		fs := reader.PollFetches(rctx)
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	require.Len(t, seen, n, "every acknowledged record readable within a minute of the last broker's return (%s after it)\n%s",
		time.Since(back).Round(time.Second), describe())
	for _, tp := range tps {
		require.GreaterOrEqual(t, leaderOf(t, reader, tp.Topic, tp.Partition), 1, "%s led again", tp)
	}
	log1, err := os.ReadFile(c.LogPath(1))
	require.NoError(t, err)
	require.Contains(t, string(log1), "LOST COMMITTED DATA", "broker 1 says what it lost")
}
