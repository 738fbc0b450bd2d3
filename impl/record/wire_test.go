package record

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample() Batch {
	return Batch{BaseOffset: 7, LeaderEpoch: 3, ProducerID: 42, ProducerEpoch: 2, BaseSequence: 10,
		Records: []Record{
			{Key: nil, Value: []byte("v0"), Timestamp: 1000},
			{Key: []byte{}, Value: nil, Timestamp: 990, Headers: []Header{{Key: "h", Value: nil}, {Key: "i", Value: []byte{}}}},
			{Key: []byte("k"), Value: []byte{}, Timestamp: 1500},
		}}
}

// fixCRC recomputes a batch's CRC after a test changed a covered byte.
func fixCRC(w []byte) {
	binary.BigEndian.PutUint32(w[offCRC:], crc32.Checksum(w[offAttrs:], castagnoli))
}

// A batch encodes to v2 bytes that parse back to its header fields and
// decode back to its records, nil and empty apart.
func TestEncodeParseDecode(t *testing.T) {
	b := sample()
	w := Encode(nil, &b)
	require.Len(t, w, b.Size())
	p, err := Parse(w)
	require.NoError(t, err)
	assert.Nil(t, p.Records, "Parse leaves the records alone")
	assert.Equal(t, 3, p.Len())
	assert.Equal(t, int64(10), p.NextOffset())
	assert.Equal(t, b.LastSequence(), p.LastSequence())
	assert.Equal(t, int64(1000), p.FirstTimestamp())
	assert.Equal(t, int64(1500), p.MaxTimestamp())
	assert.Equal(t, b.MaxTimestamp(), p.MaxTimestamp())
	require.NoError(t, p.Decode(nil))
	want := b
	want.Wire = w
	assert.Equal(t, want, p)

	// Kafka's non-idempotent batch carries -1 in all three producer fields.
	plain := Batch{ProducerID: NoProducerID, BaseSequence: NoSequence, Records: b.Records[:1]}
	w = Encode(nil, &plain)
	assert.Equal(t, uint16(0xffff), binary.BigEndian.Uint16(w[offPEpoch:]))
	p, err = Parse(w)
	require.NoError(t, err)
	assert.Equal(t, NoProducerID, p.ProducerID)
	assert.Equal(t, int16(0), p.ProducerEpoch)
	assert.Equal(t, NoSequence, p.BaseSequence)
}

// Encoding a batch that has its bytes copies them, writing in only the
// base offset and leader epoch, which the CRC does not cover.
func TestEncodeKeepsTheBytes(t *testing.T) {
	b := sample()
	p, err := Parse(Encode(nil, &b))
	require.NoError(t, err)
	produced := append([]byte(nil), p.Wire...)
	p.BaseOffset, p.LeaderEpoch = 1<<40, 9
	out := Encode([]byte("prefix"), &p)
	require.Equal(t, "prefix", string(out[:6]))
	out = out[6:]
	assert.Equal(t, produced[8:12], out[8:12])
	assert.Equal(t, produced[16:], out[16:])
	assert.Equal(t, produced, p.Wire, "the batch's own bytes are not written to")
	q, err := Parse(out)
	require.NoError(t, err, "still passes its CRC")
	assert.Equal(t, int64(1<<40), q.BaseOffset)
	assert.Equal(t, int32(9), q.LeaderEpoch)
}

func TestParseRejects(t *testing.T) {
	b := sample()
	good := Encode(nil, &b)
	mod := func(f func([]byte), crc bool) []byte {
		c := append([]byte(nil), good...)
		f(c)
		if crc {
			fixCRC(c)
		}
		return c
	}
	tests := map[string]struct {
		data []byte
		want error
	}{
		"no length":     {good[:11], ErrTruncated},
		"torn":          {good[:len(good)-1], ErrTruncated},
		"short length":  {mod(func(c []byte) { binary.BigEndian.PutUint32(c[8:], 10) }, false), ErrCorrupt},
		"crc":           {mod(func(c []byte) { c[len(c)-1] ^= 1 }, false), ErrCorrupt},
		"magic":         {mod(func(c []byte) { c[offMagic] = 1 }, false), ErrInvalid},
		"zero records":  {mod(func(c []byte) { binary.BigEndian.PutUint32(c[offCount:], 0) }, true), ErrInvalid},
		"delta":         {mod(func(c []byte) { binary.BigEndian.PutUint32(c[offLastDelta:], 5) }, true), ErrInvalid},
		"longer length": {mod(func(c []byte) { binary.BigEndian.PutUint32(c[8:], uint32(len(c))) }, false), ErrTruncated},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tt.data)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	b := sample()
	good := Encode(nil, &b)
	decode := func(f func([]byte)) error {
		c := append([]byte(nil), good...)
		f(c)
		fixCRC(c)
		p, err := Parse(c)
		require.NoError(t, err)
		return p.Decode(nil)
	}
	assert.ErrorIs(t, decode(func(c []byte) { c[HeaderLen+3] = 5 }), ErrInvalid, "offset delta of record 0")
	assert.ErrorIs(t, decode(func(c []byte) { c[HeaderLen] = 0x7f }), ErrCorrupt, "record length past the end")
	assert.ErrorIs(t, decode(func(c []byte) {
		binary.BigEndian.PutUint32(c[offCount:], 1)
		binary.BigEndian.PutUint32(c[offLastDelta:], 0)
	}), ErrCorrupt, "bytes after the last record")
	assert.ErrorIs(t, decode(func(c []byte) { binary.BigEndian.PutUint16(c[offAttrs:], 1) }), ErrCompressed)
}

// A corrupt record count cannot size an allocation beyond the bytes.
func TestDecodeBoundsTheCount(t *testing.T) {
	b := sample()
	w := Encode(nil, &b)
	binary.BigEndian.PutUint32(w[offCount:], 1<<30)
	binary.BigEndian.PutUint32(w[offLastDelta:], 1<<30-1)
	fixCRC(w)
	p, err := Parse(w)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(10, func() {
		_, err := p.DecodeRecords(nil)
		require.ErrorIs(t, err, ErrCorrupt)
	})
	assert.Less(t, allocs, 10.0)
}

// A compressed batch decodes through the decompressor it is given.
func TestDecodeCompressed(t *testing.T) {
	b := sample()
	w := Encode(nil, &b)
	body := append([]byte(nil), w[HeaderLen:]...)
	for i := range body {
		body[i] ^= 0x5a // a "codec" that is its own inverse
	}
	w = append(w[:HeaderLen:HeaderLen], body...)
	binary.BigEndian.PutUint16(w[offAttrs:], 3)
	fixCRC(w)
	p, err := Parse(w)
	require.NoError(t, err)
	var seen int
	recs, err := p.DecodeRecords(func(codec int, src []byte) ([]byte, error) {
		seen = codec
		out := append([]byte(nil), src...)
		for i := range out {
			out[i] ^= 0x5a
		}
		return out, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, seen)
	assert.Equal(t, b.Records, recs)
	assert.Equal(t, len(w), p.Size(), "a batch's size is its bytes, compressed")
}
