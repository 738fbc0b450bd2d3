package record

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A batch of three records at base 10 holds offsets 10, 11 and 12, and
// sequences 5 to 7 when it carries them (Kafka's lastOffset and
// lastSequence).
func TestBatchOffsetsAndSequences(t *testing.T) {
	b := Batch{BaseOffset: 10, ProducerID: 3, BaseSequence: 5, Records: []Record{{}, {}, {}}}
	assert.Equal(t, int64(12), b.LastOffset())
	assert.Equal(t, int64(13), b.NextOffset())
	assert.Equal(t, int32(7), b.LastSequence())
	one := Batch{BaseOffset: 4, ProducerID: NoProducerID, BaseSequence: NoSequence, Records: []Record{{}}}
	assert.Equal(t, one.BaseOffset, one.LastOffset(), "a batch of one ends where it starts")
	assert.Equal(t, NoSequence, one.LastSequence(), "no sequence without a producer")
}

// Clone shares no memory with the original and keeps nil and empty apart.
func TestBatchCloneIsDeep(t *testing.T) {
	b := Batch{Records: []Record{{Key: nil, Value: []byte{}, Headers: []Header{{Key: "h", Value: []byte("v")}}}, {Key: []byte("k"), Value: []byte("v")}}}
	c := b.Clone()
	assert.Equal(t, b, c)
	assert.Nil(t, c.Records[0].Key)
	assert.NotNil(t, c.Records[0].Value)
	c.Records[1].Value[0] = 'x'
	c.Records[0].Headers[0].Value[0] = 'x'
	assert.Equal(t, "v", string(b.Records[1].Value))
	assert.Equal(t, "v", string(b.Records[0].Headers[0].Value))
}

// Size is the batch's size as a v2 batch: the header, then per record a
// length, attributes, two deltas, key, value and headers, varint-framed.
func TestBatchSize(t *testing.T) {
	b := Batch{Records: []Record{{Key: []byte("ab"), Value: []byte("cde"), Headers: []Header{{Key: "h", Value: []byte("v")}}}}}
	assert.Equal(t, 61+1+(1+1+1+(1+2)+(1+3)+1+(1+1+1+1)), b.Size())
	assert.Equal(t, len(Encode(nil, &b)), b.Size())
}

// Search finds the batch holding an offset, or the first after it.
func TestSearch(t *testing.T) {
	log := []Batch{{BaseOffset: 0, Records: []Record{{}, {}}}, {BaseOffset: 2, Records: []Record{{}}}, {BaseOffset: 5, Records: []Record{{}, {}, {}}}}
	for offset, want := range map[int64]int{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 2, 7: 2, 8: 3} {
		assert.Equal(t, want, Search(log, offset), "offset %d", offset)
	}
	assert.Zero(t, Search(nil, 4))
}
