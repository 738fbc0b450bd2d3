package storage

import (
	"encoding/binary"
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
		assert.Equal(t, b, got)
		// appendFrame sizes its buffer with frameSize: an estimate off by
		// a byte would cost a reallocation of the whole frame.
		assert.Equal(t, len(frame), frameSize(&b))
	}
}

// payloadWithCount returns a valid one-record payload whose record count (or,
// with headers set, the record's header count) is replaced by count.
func payloadWithCount(t *testing.T, count uint32, headers bool) []byte {
	b := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
		Records: []record.Record{{Headers: []record.Header{}}}}
	frame, err := appendFrame(nil, &b)
	require.NoError(t, err)
	p := frame[frameHeaderSize:]
	if headers {
		binary.BigEndian.PutUint32(p[len(p)-4:], count)
	} else {
		binary.BigEndian.PutUint32(p[batchHeaderSize-4:], count)
	}
	return p
}

// TestDecodeBoundsCounts checks that a corrupt count cannot make the decoder
// allocate more than the payload could hold.
func TestDecodeBoundsCounts(t *testing.T) {
	for _, headers := range []bool{false, true} {
		allocs := testing.AllocsPerRun(10, func() {
			_, err := decodePayload(payloadWithCount(t, 1<<30, headers))
			require.ErrorIs(t, err, errBadPayload)
		})
		assert.Less(t, allocs, 20.0)
	}
	_, err := decodePayload(payloadWithCount(t, 0, false))
	require.ErrorIs(t, err, errBadPayload, "trailing bytes after zero records")
}

func TestDecodeRejectsNonCanonical(t *testing.T) {
	b := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
		Records: []record.Record{{Key: []byte("k")}}}
	frame, err := appendFrame(nil, &b)
	require.NoError(t, err)
	p := frame[frameHeaderSize:]

	_, err = decodePayload(append(append([]byte(nil), p...), 0))
	require.ErrorIs(t, err, errBadPayload, "trailing byte")

	badVersion := append([]byte(nil), p...)
	badVersion[0] = 2
	_, err = decodePayload(badVersion)
	require.ErrorIs(t, err, errBadPayload, "unknown version")

	badLen := append([]byte(nil), p...)
	binary.BigEndian.PutUint32(badLen[batchHeaderSize+8:], uint32(0xfffffffe)) // key length -2
	_, err = decodePayload(badLen)
	require.ErrorIs(t, err, errBadPayload, "negative length other than -1")
}

func TestAppendFrameRejectsHugeBatch(t *testing.T) {
	b := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
		Records: []record.Record{{Value: make([]byte, maxFrameSize)}}}
	_, err := appendFrame(nil, &b)
	require.ErrorIs(t, err, ErrInvalidBatch)
}
