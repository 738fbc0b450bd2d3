package kafkawire

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/wireformat"
)

func testBatch() record.Batch {
	b := record.Batch{BaseOffset: 0, LeaderEpoch: 4, ProducerID: 1 << 20, ProducerEpoch: 2, BaseSequence: 10}
	for i := range 50 {
		r := record.Record{Value: bytes.Repeat([]byte{byte('a' + i%26)}, 10+i), Timestamp: 1_700_000_000_000 + int64(i%5)}
		if i%3 != 0 {
			r.Key = []byte{byte(i)}
		}
		if i%4 == 0 {
			r.Headers = []record.Header{{Key: "h", Value: []byte("v")}, {Key: "nil"}}
		}
		b.Records = append(b.Records, r)
	}
	b.Records[7].Value = nil // a tombstone stays null
	b.Records[8].Value = []byte{}
	return b
}

// recompress rewrites an uncompressed batch with its records section
// compressed by codec, fixing length, attributes and CRC.
func recompress(t *testing.T, raw []byte, codec int, compress func([]byte) []byte) []byte {
	t.Helper()
	out := append([]byte(nil), raw[:batchHeaderLen]...)
	out = append(out, compress(raw[batchHeaderLen:])...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint16(out[21:], uint16(codec))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[crcStart:], castagnoli))
	return out
}

func kgoCompress(t *testing.T, codec kgo.CompressionCodec) func([]byte) []byte {
	c, err := kgo.DefaultCompressor(codec)
	require.NoError(t, err)
	return func(src []byte) []byte {
		out, _ := c.Compress(new(bytes.Buffer), src)
		return append([]byte(nil), out...)
	}
}

// xerial frames src the way snappy-java (the Java client) does.
func xerial(src []byte) []byte {
	out := append([]byte(nil), wireformat.XerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(src) > 0 {
		n := min(len(src), 100)
		block := snappy.Encode(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		src = src[n:]
	}
	return out
}

// TestBatchRoundTripEveryCodec encodes a batch as the fetch path does,
// compresses it with each codec as a producer would, and takes it as the
// produce path does: the producer fields come back unchanged, the batch
// keeps the producer's bytes (codec and all) and decodes to the records.
func TestBatchRoundTripEveryCodec(t *testing.T) {
	b := testBatch()
	raw := appendBatch(nil, &b)

	// kmsg reads what we write, and the CRC is the Kafka one.
	var kb kmsg.RecordBatch
	require.NoError(t, kb.ReadFrom(raw))
	require.Equal(t, int32(len(raw)-12), kb.Length)
	require.Equal(t, int32(crc32.Checksum(raw[crcStart:], castagnoli)), kb.CRC)
	require.Equal(t, int32(len(b.Records)), kb.NumRecords)
	require.Equal(t, b.LeaderEpoch, kb.PartitionLeaderEpoch)

	d := &wireformat.Decompressor{Limit: 1 << 20}
	for name, tc := range map[string]struct {
		codec    int
		compress func([]byte) []byte
	}{
		"none":          {wireformat.CodecNone, func(b []byte) []byte { return b }},
		"gzip":          {wireformat.CodecGzip, kgoCompress(t, kgo.GzipCompression())},
		"snappy":        {wireformat.CodecSnappy, kgoCompress(t, kgo.SnappyCompression())},
		"snappy-xerial": {wireformat.CodecSnappy, xerial},
		"lz4":           {wireformat.CodecLz4, kgoCompress(t, kgo.Lz4Compression())},
		"zstd":          {wireformat.CodecZstd, kgoCompress(t, kgo.ZstdCompression())},
	} {
		t.Run(name, func(t *testing.T) {
			in := recompress(t, raw, tc.codec, tc.compress)
			pb, err := decodeProduce(in, d)
			require.NoError(t, err)
			require.Equal(t, b.ProducerID, pb.ProducerID)
			require.Equal(t, b.ProducerEpoch, pb.ProducerEpoch)
			require.Equal(t, b.BaseSequence, pb.BaseSequence)
			require.Nil(t, pb.Records, "checked, not kept")
			require.Equal(t, in, pb.Wire, "the bytes as produced")
			require.Equal(t, in, appendBatch(nil, &pb), "served as produced")
			recs, err := pb.DecodeRecords(d.Decompress)
			require.NoError(t, err)
			require.Equal(t, b.Records, recs)

			// The zero decompressor (kafkaclient.Client's) has the default bound.
			got, err := wireformat.DecodeFetched(in)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, b.Records, got[0].Records)
		})
	}
}

// TestDecodeProduceRejects checks the answers to batches the broker must
// not take: corruption is CORRUPT_MESSAGE, well-formed batches it cannot
// take as one ProduceRequest are INVALID_RECORD.
func TestDecodeProduceRejects(t *testing.T) {
	b := testBatch()
	raw := appendBatch(nil, &b)
	d := &wireformat.Decompressor{Limit: 1 << 20}
	code := func(in []byte) int16 {
		_, err := decodeProduce(in, d)
		require.Error(t, err)
		return kafka.CodeOf(err)
	}
	flipped := bytes.Clone(raw)
	flipped[len(flipped)-1] ^= 1
	require.Equal(t, int16(2), code(flipped), "CRC mismatch")
	require.Equal(t, int16(2), code(raw[:len(raw)-1]), "truncated batch")
	require.Equal(t, int16(2), code(raw[:40]), "truncated header")
	require.Equal(t, int16(87), code(append(bytes.Clone(raw), raw...)), "two batches for one partition")
	old := bytes.Clone(raw)
	old[16] = 1
	require.Equal(t, int16(87), code(old), "magic 1")
	txn := bytes.Clone(raw)
	binary.BigEndian.PutUint16(txn[21:], attrTransactional)
	binary.BigEndian.PutUint32(txn[17:], crc32.Checksum(txn[crcStart:], castagnoli))
	require.Equal(t, int16(87), code(txn), "transactional batch")
	bad := recompress(t, raw, 7, func(b []byte) []byte { return b })
	require.Equal(t, int16(76), code(bad), "codec 7")
	garbage := recompress(t, raw, wireformat.CodecGzip, func(b []byte) []byte { return b })
	require.Equal(t, int16(2), code(garbage), "gzip codec over plain bytes")
	small := &wireformat.Decompressor{Limit: 100}
	// Past the decompression bound: MESSAGE_TOO_LARGE, with every codec.
	for _, c := range []struct {
		name  string
		codec int
		f     func([]byte) []byte
	}{
		{"zstd", wireformat.CodecZstd, kgoCompress(t, kgo.ZstdCompression())},
		{"gzip", wireformat.CodecGzip, kgoCompress(t, kgo.GzipCompression())},
		{"lz4", wireformat.CodecLz4, kgoCompress(t, kgo.Lz4Compression())},
		{"snappy", wireformat.CodecSnappy, kgoCompress(t, kgo.SnappyCompression())},
		{"xerial snappy", wireformat.CodecSnappy, xerial},
	} {
		_, err := decodeProduce(recompress(t, raw, c.codec, c.f), small)
		require.Equal(t, kerr.MessageTooLarge.Code, kafka.CodeOf(err), "%s over the decompression limit: %v", c.name, err)
	}
}
