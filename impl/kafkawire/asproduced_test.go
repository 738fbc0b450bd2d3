package kafkawire

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/wireformat"
)

// A batch is stored and served as its producer sent it: a fetch returns
// the produced bytes, codec, attributes and CRC, with only the base offset
// and leader epoch the leader assigned written in.
func TestBatchesAreServedAsProduced(t *testing.T) {
	cl := producerOnNewTopic(t, "asproduced")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An offset to move the next batch's base off 0.
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr())

	b := testBatch()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = -1, 0, -1
	for name, tc := range map[string]struct {
		codec    int
		compress func([]byte) []byte
	}{
		"zstd": {wireformat.CodecZstd, kgoCompress(t, kgo.ZstdCompression())},
		"lz4":  {wireformat.CodecLz4, kgoCompress(t, kgo.Lz4Compression())},
	} {
		t.Run(name, func(t *testing.T) {
			produced := recompress(t, appendBatch(nil, &b), tc.codec, tc.compress)
			req := produceRequest(9, -1, "asproduced", produced)
			resp, err := req.RequestWith(ctx, cl)
			require.NoError(t, err)
			p := resp.Topics[0].Partitions[0]
			require.Zero(t, p.ErrorCode)

			fr, err := fetchRequest("asproduced", p.BaseOffset, 0).RequestWith(ctx, cl)
			require.NoError(t, err)
			got := fr.Topics[0].Partitions[0].RecordBatches
			require.Len(t, got, len(produced), "one batch, its produced size")
			require.Equal(t, p.BaseOffset, int64(binary.BigEndian.Uint64(got)))
			require.Equal(t, produced[8:12], got[8:12])
			require.Equal(t, produced[16:], got[16:], "magic, CRC, attributes, records: the producer's")

			var kb kmsg.RecordBatch
			require.NoError(t, kb.ReadFrom(got))
			require.Equal(t, int16(tc.codec), kb.Attributes&7)
			recs, err := wireformat.DecodeFetched(got)
			require.NoError(t, err)
			require.Equal(t, b.Records, recs[0].Records)
		})
	}
}
