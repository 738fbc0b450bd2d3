package kafkawire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermarkhq/watermark/impl/wireformat"
)

// A valid record of 65 MiB that zstd squeezes into a few KB passes
// message.max.bytes on the wire, and the log keeps the batch as it came,
// compressed: Kafka takes it, and so does the broker (it used to exit on
// it, then to refuse it, when the log held batches decompressed).
func TestHugeCompressibleRecordIsStoredCompressed(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MB")
	}
	cl := producerOnNewTopic(t, "huge", kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(100<<20), kgo.MaxBufferedBytes(200<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	huge := bytes.Repeat([]byte("watermark"), (65<<20)/9+1)
	res := cl.ProduceSync(ctx, &kgo.Record{Value: huge})
	require.NoError(t, res.FirstErr())
	require.Equal(t, int64(0), res[0].Record.Offset)

	res = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("small")})
	require.NoError(t, res.FirstErr(), "the broker must still take records")
	require.Equal(t, int64(1), res[0].Record.Offset)
}

// A batch over message.max.bytes as it comes on the wire is refused with
// MESSAGE_TOO_LARGE, as Kafka does.
func TestBatchOverMessageMaxBytesIsRefused(t *testing.T) {
	cl := producerOnNewTopic(t, "big", kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(4<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 2<<20)}).FirstErr()
	require.True(t, errors.Is(err, kerr.MessageTooLarge), "want MESSAGE_TOO_LARGE, got %v", err)
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 512<<10)}).FirstErr(), "under the limit")
}

// A topic's max.message.bytes replaces the broker's message.max.bytes for
// that topic, up or down, as in Kafka; a malformed one is INVALID_CONFIG.
func TestTopicMaxMessageBytes(t *testing.T) {
	c := startTestCluster(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer admin.Close()
	createTopic(t, admin, "roomy", 1, "max.message.bytes", fmt.Sprint(3<<20), "cleanup.policy", "delete")
	createTopic(t, admin, "tight", 1, "max.message.bytes", "100000")
	for _, v := range []string{"0", "-5", "lots", "99999999999"} {
		rt := createTopicRequest(t, admin, "bad", 1, "max.message.bytes", v)
		require.Equal(t, kerr.InvalidConfig.Code, rt.ErrorCode, "max.message.bytes %s", v)
		require.Contains(t, *rt.ErrorMessage, "max.message.bytes")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(topic string, size int) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(2),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(4<<20))
		require.NoError(t, err)
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, size)}).FirstErr()
	}
	require.NoError(t, produce("roomy", 2<<20), "over message.max.bytes, under the topic's")
	require.ErrorIs(t, produce("roomy", 3<<20+1000), kerr.MessageTooLarge)
	require.ErrorIs(t, produce("tight", 200_000), kerr.MessageTooLarge, "under message.max.bytes, over the topic's")
	require.NoError(t, produce("tight", 50_000))
}

// producerOnNewTopic starts a test cluster with one topic and returns a
// franz-go producer to it, with opts, that tries each record 3 times.
func producerOnNewTopic(t *testing.T, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	c := startTestCluster(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer admin.Close()
	createTopic(t, admin, topic, 1)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addr), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(2)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// A declared frame costs what arrived of it, not what it declared: 20
// frames of 100 MiB declared, 10 bytes each sent, allocate a few MB in
// all (they used to allocate 2 GB).
func TestDeclaredFrameIsNotAllocatedUpFront(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 20 {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.BigEndian, int32(100<<20))
		b.WriteString("0123456789")
		_, err := wireformat.ReadFrame(&b, 0)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	}
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "allocated for bytes that never came")

	// What does come is read whole, across many reads.
	want := bytes.Repeat([]byte("x"), 3*wireformat.FirstChunk+17)
	got, err := wireformat.ReadBounded(iotest.OneByteReader(bytes.NewReader(want)), len(want))
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// A connection that declares a request and sends no more of it is closed
// after the request read timeout, one that starts no request after the
// idle timeout; the server answers the next connection all the same.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	c := startTestCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveForTest(t, ln, &Server{Backend: c, Logf: t.Logf, IdleTimeout: 300 * time.Millisecond, RequestReadTimeout: 200 * time.Millisecond})

	closedWithin := func(conn net.Conn, d time.Duration) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(d))
		_, err := conn.Read(make([]byte, 1))
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open past %s", d)
		require.Error(t, err)
	}
	slow, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer slow.Close()
	_, err = slow.Write([]byte{0x06, 0x40, 0x00, 0x00, 'x'}) // 100 MiB declared, one byte sent
	require.NoError(t, err)
	closedWithin(slow, 5*time.Second)

	idle, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer idle.Close()
	closedWithin(idle, 5*time.Second)

	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.Ping(ctx))
}

// A topic's min.insync.replicas is capped at its replication factor, as
// in Kafka since 3.7: on one broker, a topic of one replica that asks for
// two in-sync replicas takes acks=all on its one copy, as does one
// without. Malformed topic configs the reference keeps are
// INVALID_CONFIG, naming the config.
// Reference: KAFKA-15583.
func TestTopicMinInsyncReplicas(t *testing.T) {
	c := startTestCluster(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer admin.Close()
	createTopic(t, admin, "strict", 1, "min.insync.replicas", "2", "unclean.leader.election.enable", "false")
	createTopic(t, admin, "plain", 1)
	for _, kv := range [][2]string{{"min.insync.replicas", "0"}, {"min.insync.replicas", "two"}, {"unclean.leader.election.enable", "maybe"}} {
		rt := createTopicRequest(t, admin, "bad", 1, kv[0], kv[1])
		require.Equal(t, kerr.InvalidConfig.Code, rt.ErrorCode, "%s=%s", kv[0], kv[1])
		require.Contains(t, *rt.ErrorMessage, kv[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(topic string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1), kgo.RequiredAcks(kgo.AllISRAcks()))
		require.NoError(t, err)
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	}
	require.NoError(t, produce("strict"), "min ISR 2 on one replica is min ISR 1")
	require.NoError(t, produce("plain"))
}
