package kafkawire

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A valid record of 65 MiB that zstd squeezes into a few KB passes
// message.max.bytes on the wire, and is more than the log keeps in one
// batch: a stock franz-go producer gets MESSAGE_TOO_LARGE, and the broker
// lives on to take the next record (it used to exit on it).
func TestHugeCompressibleRecordIsRefusedNotFatal(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MB")
	}
	c := startTestCluster(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer admin.Close()
	createTopic(t, admin, "huge", 1)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.DefaultProduceTopic("huge"),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(100<<20), kgo.MaxBufferedBytes(200<<20),
		kgo.RecordRetries(2))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	huge := bytes.Repeat([]byte("watermark"), (65<<20)/9+1)
	err = cl.ProduceSync(ctx, &kgo.Record{Value: huge}).FirstErr()
	require.True(t, errors.Is(err, kerr.MessageTooLarge), "want MESSAGE_TOO_LARGE, got %v", err)

	res := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("small")})
	require.NoError(t, res.FirstErr(), "the broker must still take records")
	require.Equal(t, int64(0), res[0].Record.Offset, "the huge record was not written")
}

// A batch over message.max.bytes as it comes on the wire is refused with
// MESSAGE_TOO_LARGE, as Kafka does.
func TestBatchOverMessageMaxBytesIsRefused(t *testing.T) {
	c := startTestCluster(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer admin.Close()
	createTopic(t, admin, "big", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.DefaultProduceTopic("big"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordRetries(2))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 2<<20)}).FirstErr()
	require.True(t, errors.Is(err, kerr.MessageTooLarge), "want MESSAGE_TOO_LARGE, got %v", err)
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 512<<10)}).FirstErr(), "under the limit")
}
