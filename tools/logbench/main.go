// Command logbench measures what a broker's logs cost it as they grow, on a
// real local cluster (one `watermark serve` process per node, real files):
// each broker's resident memory while a volume of records is written and
// read back, produce and fetch throughput with one franz-go client, and how
// long a broker takes, killed and restarted, to answer again with all of
// that on its disk.
//
//	go run ./tools/logbench --binary bin/watermark-plain --bytes 2GiB
//
// Run it with --binary of two builds to compare them. It prints one table;
// it is a measurement, not a test, and asserts nothing.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/run"
)

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "logbench:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	fs := pflag.NewFlagSet("logbench", pflag.ContinueOnError)
	binary := fs.String("binary", "", "the watermark executable that runs the nodes (required), e.g. bin/watermark-plain")
	size := fs.String("bytes", "2GiB", "how much to write, in record values: a number with an optional KiB, MiB or GiB")
	record := fs.Int("record", 1024, "bytes per record value")
	brokers := fs.Int("brokers", 3, "brokers; the topic has one partition per broker, replicated to every broker")
	segment := fs.String("segment-bytes", "1GiB", "log.segment.bytes of the brokers (Kafka's default, 1 GiB): a SIGKILL restart scans the active segment, so smaller ones show what the recovery point saves")
	dir := fs.String("dir", "", "where the nodes keep their data (default: a new temporary directory, removed at the end)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		return err
	}
	total, err := parseBytes(*size)
	if err != nil {
		return fmt.Errorf("--bytes %q: %w", *size, err)
	}
	segBytes, err := parseBytes(*segment)
	if err != nil {
		return fmt.Errorf("--segment-bytes %q: %w", *segment, err)
	}
	if *binary == "" {
		return errors.New("--binary is required: the watermark executable to measure (go build -o bin/watermark-plain ./tools/watermark)")
	}
	if *record <= 0 {
		return fmt.Errorf("--record %d: want a positive size", *record)
	}
	bin, err := filepath.Abs(*binary)
	if err != nil {
		return err
	}
	keep := *dir != ""
	if !keep {
		if *dir, err = os.MkdirTemp("", "logbench-*"); err != nil {
			return err
		}
		defer os.RemoveAll(*dir)
	}
	ctx := context.Background()
	settings := run.KafkaSettings()
	settings.Broker.LogSegmentBytes = segBytes
	c, err := cluster.Start(ctx, cluster.Options{Binary: bin, Brokers: *brokers, Dir: *dir, Settings: settings, StartTimeout: 2 * time.Minute})
	if err != nil {
		return err
	}
	defer c.Stop()

	b := &bench{c: c, brokers: *brokers, record: *record, count: total / int64(*record)}
	fmt.Printf("%s: %d brokers, %d records of %d bytes (%s) to a topic of %d partitions, replication factor %d, acks=all, %s segments\n",
		bin, *brokers, b.count, *record, human(b.count*int64(*record)), *brokers, *brokers, human(segBytes))
	return b.run(ctx)
}

type bench struct {
	c       *cluster.Cluster
	brokers int
	record  int
	count   int64
}

const topic = "logbench"

func (b *bench) run(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.c.Bootstrap()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(5*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, int32(b.brokers), int16(b.brokers)); err != nil {
		return err
	}
	fmt.Printf("%-28s %10s %12s %10s   %s\n", "phase", "seconds", "records/s", "MB/s", "peak RSS per broker (MiB)")

	rss := b.sample()
	start := time.Now()
	if err := b.produce(ctx, cl); err != nil {
		return err
	}
	b.report("produce", time.Since(start), rss.stop())

	rss = b.sample()
	start = time.Now()
	if err := b.consume(ctx); err != nil {
		return err
	}
	b.report("fetch from the start", time.Since(start), rss.stop())

	// A crash and a restart with everything on disk: the time until the
	// broker answers again is the time it takes to open its logs.
	if err := b.c.Kill(1); err != nil {
		return err
	}
	start = time.Now()
	if err := b.c.Restart(ctx, 1); err != nil {
		return err
	}
	if err := answered(ctx, b.c.Addr(1)); err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("%-28s %10.2f   RSS after %s MiB\n", "restart broker 1 (SIGKILL)", took.Seconds(), mib(rssOf(b.c.PID(1))))
	return nil
}

func (b *bench) report(phase string, took time.Duration, peaks []int64) {
	var cols []string
	for _, p := range peaks {
		cols = append(cols, mib(p))
	}
	rate := float64(b.count) / took.Seconds()
	fmt.Printf("%-28s %10.2f %12.0f %10.1f   %s\n", phase, took.Seconds(), rate, rate*float64(b.record)/1e6, strings.Join(cols, " "))
}

func (b *bench) produce(ctx context.Context, cl *kgo.Client) error {
	value := make([]byte, b.record)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(value)
	sem := make(chan struct{}, 8192)
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	for range b.count {
		if p := first.Load(); p != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				first.CompareAndSwap(nil, &err)
			}
			<-sem
			wg.Done()
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return fmt.Errorf("produce: %w", *p)
	}
	return nil
}

func (b *bench) consume(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.c.Bootstrap()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	for got := int64(0); got < b.count; {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("fetch: %d of %d records read: %w", got, b.count, err)
		}
		for _, fe := range fetches.Errors() {
			return fmt.Errorf("fetch %s-%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		got += int64(fetches.NumRecords())
	}
	return nil
}

// sampler records each broker's peak RSS until stopped.
type sampler struct {
	stopc chan struct{}
	done  chan []int64
}

func (b *bench) sample() *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan []int64, 1)}
	go func() {
		peaks := make([]int64, b.brokers)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			for id := 1; id <= b.brokers; id++ {
				peaks[id-1] = max(peaks[id-1], rssOf(b.c.PID(id)))
			}
			select {
			case <-s.stopc:
				s.done <- peaks
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() []int64 {
	close(s.stopc)
	return <-s.done
}

// rssOf is a process's resident set in bytes, from /proc (0 if unknown).
func rssOf(pid int) int64 {
	if pid == 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func createTopic(ctx context.Context, cl *kgo.Client, partitions int32, rf int16) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, partitions, rf
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30_000
	for try := 0; ; try++ {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 {
			code := resp.Topics[0].ErrorCode
			if code == 0 || code == 36 { // TOPIC_ALREADY_EXISTS: an earlier try landed
				return nil
			}
			err = fmt.Errorf("error code %d", code)
		}
		if try == 20 {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// answered waits until the broker at addr answers a Metadata request.
func answered(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for {
		req := kmsg.NewPtrMetadataRequest()
		if _, err := req.RequestWith(ctx, cl); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("broker at %s did not answer after its restart: %w", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if rest, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = rest, m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive number of bytes, with an optional KiB, MiB or GiB")
	}
	return n * mult, nil
}

func mib(n int64) string { return strconv.FormatInt(n>>20, 10) }

func human(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
