package kafkawire

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// createTopic creates a topic through the client and waits until the
// broker's metadata names a leader for every partition.
func createTopic(t *testing.T, cl *kgo.Client, name string, partitions int32, configs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := createTopicRequest(t, cl, name, partitions, configs...)
	require.Zero(t, resp.ErrorCode, "create %s: %v", name, resp.ErrorMessage)

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

// createTopicRequest sends CreateTopics for one topic with configs (name,
// value, name, value, ...) and returns the topic's answer.
func createTopicRequest(t *testing.T, cl *kgo.Client, name string, partitions int32, configs ...string) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10_000
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	return resp.Topics[0]
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
	w := startFetchWatch(t, c)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("longpoll"))
	require.NoError(t, err)
	defer cl.Close()
	fc, err := kgo.NewClient(kgo.SeedBrokers(w.addr))
	require.NoError(t, err)
	defer fc.Close()
	createTopic(t, cl, "longpoll", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// An empty partition and a short wait: the answer is empty, no error.
	empty := fetchRequest("longpoll", 0, 300)
	resp, err := empty.RequestWith(ctx, cl.Broker(int(testBrokerID)))
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Empty(t, resp.Topics[0].Partitions[0].RecordBatches)

	// A max wait far longer than the test may take: answered before half
	// of it, the fetch was woken by the produce, not by its expiry.
	const maxWait = 60_000
	done := make(chan fetchResult, 1)
	go func() {
		resp, err := fetchRequest("longpoll", 0, maxWait).RequestWith(ctx, fc.SeedBrokers()[0])
		done <- fetchResult{resp, err}
	}()
	// Once the server has sent the broker the fetch to hold, the broker
	// takes it before the produce below: it can only answer it with the
	// record if it held it. Had it answered at once, the answer is empty.
	held := w.nextHeld(t)
	require.Equal(t, kafka.TopicPartition{Topic: "longpoll", Partition: 0}, held.tp)
	requireNotAnswered(t, done, "before anything was produced: the broker did not hold it")
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("wake up")}).FirstErr())
	r := awaitFetch(t, done, maxWait*time.Millisecond/2)
	require.NoError(t, r.err)
	require.True(t, w.answered(held), "the server answered without the broker's answer to the held fetch")
	p := r.resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	require.Equal(t, int64(1), p.HighWatermark, "the held fetch was answered before the produce")
	var batch kmsg.RecordBatch
	require.NoError(t, batch.ReadFrom(p.RecordBatches), "the held fetch was answered without the produced record")
	require.Equal(t, int32(1), batch.NumRecords)

	// One record is less than MinBytes: the fetch is held for its max wait
	// and then answered with what there is. Only a lower bound is checked,
	// which a slow machine cannot break.
	big := fetchRequest("longpoll", 0, 1500)
	big.MinBytes = 1 << 20
	start := time.Now()
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
	w := startFetchWatch(t, c)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("two"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	fc, err := kgo.NewClient(kgo.SeedBrokers(w.addr))
	require.NoError(t, err)
	defer fc.Close()
	createTopic(t, cl, "two", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const maxWait = 60_000 // see TestFetchLongPoll
	req := fetchRequest("two", 0, maxWait)
	p1 := req.Topics[0].Partitions[0]
	p1.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	done := make(chan fetchResult, 1)
	go func() {
		resp, err := req.RequestWith(ctx, fc.SeedBrokers()[0])
		done <- fetchResult{resp, err}
	}()
	// The fetch, both partitions in one request, is held at the broker
	// before partition 1 gets its record (see TestFetchLongPoll): one
	// long poll for the whole response.
	held := w.nextHeld(t)
	require.Equal(t, "two", held.tp.Topic)
	require.Equal(t, 2, held.partitions, "one held fetch for both partitions")
	requireNotAnswered(t, done, "before anything was produced: the broker did not hold it")
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("one")}).FirstErr())
	r := awaitFetch(t, done, maxWait*time.Millisecond/2)
	require.NoError(t, r.err)
	require.True(t, w.answered(held), "the server answered without the broker's answer to the held fetch")
	ps := r.resp.Topics[0].Partitions
	require.Len(t, ps, 2)
	require.Empty(t, ps[0].RecordBatches)
	require.Equal(t, int64(0), ps[0].HighWatermark)
	require.NotEmpty(t, ps[1].RecordBatches, "the held fetch was answered before the produce")
	require.Equal(t, int64(1), ps[1].HighWatermark)
}

type fetchResult struct {
	resp *kmsg.FetchResponse
	err  error
}

// requireNotAnswered fails if the fetch has already been answered.
func requireNotAnswered(t *testing.T, done <-chan fetchResult, why string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("the fetch was answered %s (err %v)", why, r.err)
	default:
	}
}

// awaitFetch waits for the fetch's answer for at most limit, far less than
// its max wait.
func awaitFetch(t *testing.T, done <-chan fetchResult, limit time.Duration) fetchResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		t.Fatalf("the fetch was still held %v after the produce: it waits for its max wait instead", limit)
		return fetchResult{}
	}
}

// fetchWatch is a second wire server in front of a test cluster that
// reports the fetches its connections ask the broker to hold: each one
// sent with a wait, once it is in the broker's queue (the backend's Send
// returned, so the broker takes it before anything sent after it), and
// whether the server has received the broker's answer to it.
type fetchWatch struct {
	addr string
	held chan heldFetch

	mu      sync.Mutex
	answers map[heldFetch]bool
}

// heldFetch is one fetch the server sent the broker with a wait: its
// first partition and how many it reads.
type heldFetch struct {
	session    broker.NodeID
	corr       uint64
	tp         kafka.TopicPartition
	partitions int
}

func startFetchWatch(t *testing.T, c *testCluster) *fetchWatch {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	w := &fetchWatch{addr: ln.Addr().String(), held: make(chan heldFetch, 64), answers: map[heldFetch]bool{}}
	srv := &Server{Backend: watchedBackend{c, w}, Logf: t.Logf}
	serveForTest(t, ln, srv)
	return w
}

// nextHeld waits for the next fetch the server asks the broker to hold.
func (w *fetchWatch) nextHeld(t *testing.T) heldFetch {
	t.Helper()
	select {
	case h := <-w.held:
		return h
	case <-time.After(30 * time.Second):
		t.Fatal("the server never asked the broker to hold the fetch")
		return heldFetch{}
	}
}

// answered reports whether the server has received the broker's answer
// to h.
func (w *fetchWatch) answered(h heldFetch) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answers[h]
}

type watchedBackend struct {
	Backend
	w *fetchWatch
}

func (b watchedBackend) Open() Session { return watchedSession{b.Backend.Open(), b.w} }

type watchedSession struct {
	Session
	w *fetchWatch
}

func (s watchedSession) Send(to broker.NodeID, msg kafka.Message) {
	s.Session.Send(to, msg)
	if f, ok := msg.(broker.FetchManyRequest); ok && f.MaxWaitMs > 0 && len(f.Partitions) > 0 {
		select {
		case s.w.held <- heldFetch{s.ID(), f.Correlation, f.Partitions[0].TopicPartition, len(f.Partitions)}:
		default: // more than any test waits for
		}
	}
}

func (s watchedSession) Recv(ctx context.Context) (broker.Envelope, error) {
	env, err := s.Session.Recv(ctx)
	if f, ok := env.Msg.(broker.FetchManyResponse); ok && err == nil && len(f.Partitions) > 0 {
		s.w.mu.Lock()
		s.w.answers[heldFetch{s.ID(), f.Correlation, f.Partitions[0].TopicPartition, len(f.Partitions)}] = true
		s.w.mu.Unlock()
	}
	return env, err
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
