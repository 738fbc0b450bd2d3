package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/record"
)

func TestFrameRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for i := range 200 {
		b := genBatch(rng, int64(i)*10, int32(i))
		frame, err := appendFrame(nil, &b)
		require.NoError(t, err)
		got, n, err := decodeFrame(frame)
		require.NoError(t, err)
		assert.Equal(t, len(frame), n)
		assert.Nil(t, got.Records, "a frame decodes to its bytes, records untouched")
		assert.Equal(t, frame, got.Wire)
		require.NoError(t, got.Decode(nil))
		assert.Equal(t, stored(t, b), got)
		// appendFrame sizes its buffer with frameSize: an estimate off by
		// a byte would cost a reallocation of the whole frame.
		assert.Equal(t, len(frame), frameSize(&b))
	}
}

// TestFrameKeepsProducedBytes checks that a batch that arrived as bytes is
// stored as those bytes, with only the base offset and leader epoch the
// leader assigned written in, and still passes its CRC.
func TestFrameKeepsProducedBytes(t *testing.T) {
	b := genBatch(rand.New(rand.NewPCG(1, 9)), 0, 0)
	produced, err := record.Parse(record.Encode(nil, &b))
	require.NoError(t, err)
	produced.BaseOffset, produced.LeaderEpoch = 77, 4
	frame, err := appendFrame(nil, &produced)
	require.NoError(t, err)
	assert.Equal(t, b.Size(), len(frame))
	assert.Equal(t, produced.Wire[16:], frame[16:], "every byte from the magic on is the producer's")
	got, _, err := decodeFrame(frame)
	require.NoError(t, err)
	assert.Equal(t, int64(77), got.BaseOffset)
	assert.Equal(t, int32(4), got.LeaderEpoch)
}

func TestFrameRejects(t *testing.T) {
	b := genBatch(rand.New(rand.NewPCG(2, 9)), 0, 0)
	good, err := appendFrame(nil, &b)
	require.NoError(t, err)
	mod := func(f func([]byte)) []byte {
		c := append([]byte(nil), good...)
		f(c)
		return c
	}
	tests := map[string]struct {
		data []byte
		want error
	}{
		"torn":             {good[:len(good)-1], errTornFrame},
		"no length":        {good[:11], errTornFrame},
		"length too big":   {mod(func(c []byte) { c[8] = 0x7f }), errBadLength},
		"length too small": {mod(func(c []byte) { c[8], c[9], c[10], c[11] = 0, 0, 0, 3 }), errBadLength},
		"crc":              {mod(func(c []byte) { c[len(c)-1] ^= 1 }), errBadCRC},
		"magic":            {mod(func(c []byte) { c[16] = 1 }), errBadPayload},
		"negative offset":  {mod(func(c []byte) { c[0] = 0x80 }), errBadPayload},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := decodeFrame(tt.data)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestAppendFrameRejectsHugeBatch(t *testing.T) {
	b := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
		Records: []record.Record{{Value: make([]byte, maxFrameSize)}}}
	_, err := appendFrame(nil, &b)
	require.ErrorIs(t, err, ErrInvalidBatch)
}
