package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// TestPartitionFor checks that a group lands on the partition a Kafka
// cluster would pick: Utils.abs(groupId.hashCode) % n, with Java's
// String.hashCode over UTF-16 code units (expected values computed
// independently from that definition).
// Reference: Kafka GroupMetadataManager.partitionFor.
func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"my-group", 50, 12},              // hashCode -1906497762
		{"test-consumer-group", 50, 31},   // hashCode -1793216381
		{"console-consumer-12345", 50, 6}, // hashCode 158455506
		{"g", 50, 3},                      // hashCode 103
		{"polygenelubricants", 50, 0},     // hashCode MinInt32: Utils.abs gives 0
		{"é😀x", 50, 42},                   // a surrogate pair counts as two units
		{"my-group", 7, 1},
		{"test-consumer-group", 7, 5},
	} {
		assert.Equal(t, tc.want, PartitionFor(tc.group, tc.n), "%q %% %d", tc.group, tc.n)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "orders.v1", Partition: 12}
	v := &OffsetValue{Offset: 42, Metadata: "m"}
	e, err := Decode(EncodeOffset("g", tp, v))
	require.NoError(t, err)
	assert.Equal(t, Entry{Kind: OffsetEntry, Group: "g", TopicPartition: tp, Offset: v}, e)

	e, err = Decode(EncodeOffset("g", tp, nil))
	require.NoError(t, err)
	assert.Nil(t, e.Offset, "tombstone")

	gm := &GroupMetadata{ProtocolType: "consumer", Generation: 3, Protocol: "range", Leader: "a",
		Members: []MemberMetadata{{MemberID: "a", ClientID: "c", SessionTimeoutMs: 10, RebalanceTimeoutMs: 20,
			Metadata: []byte{1}, Assignment: []byte{2, 3}}}}
	r := EncodeGroup("g", gm)
	assert.Equal(t, "g\x00g", string(r.Key))
	e, err = Decode(r)
	require.NoError(t, err)
	assert.Equal(t, Entry{Kind: GroupEntry, Group: "g", GroupValue: gm}, e)
	assert.True(t, e.IsGroup())
}

func TestDecodeRejectsGarbage(t *testing.T) {
	ok := EncodeOffset("g", kafka.TopicPartition{Topic: "t", Partition: 1}, &OffsetValue{Offset: 1})
	for name, r := range map[string]Record{
		"empty key":           {},
		"unknown prefix":      {Key: []byte("x\x00g")},
		"no topic":            {Key: []byte("o\x00g\x001"), Value: ok.Value},
		"empty topic":         {Key: []byte("o\x00g\x00\x001"), Value: ok.Value},
		"empty group":         {Key: []byte("o\x00\x00t\x001"), Value: ok.Value},
		"negative partition":  {Key: []byte("o\x00g\x00t\x00-1"), Value: ok.Value},
		"padded partition":    {Key: []byte("o\x00g\x00t\x0001"), Value: ok.Value},
		"huge partition":      {Key: []byte("o\x00g\x00t\x0099999999999"), Value: ok.Value},
		"value not object":    {Key: ok.Key, Value: []byte("null")},
		"unknown field":       {Key: ok.Key, Value: []byte(`{"offset":1,"x":2}`)},
		"trailing data":       {Key: ok.Key, Value: []byte(`{"offset":1}}`)},
		"empty group key":     {Key: []byte("g\x00"), Value: []byte(`{}`)},
		"negative generation": {Key: []byte("g\x00g"), Value: []byte(`{"generation":-1}`)},
		"repeated member": {Key: []byte("g\x00g"),
			Value: []byte(`{"generation":1,"protocol":"p","members":[{"memberId":"a"},{"memberId":"a"}]}`)},
		"members without protocol": {Key: []byte("g\x00g"), Value: []byte(`{"generation":1,"members":[{"memberId":"a"}]}`)},
	} {
		_, err := Decode(r)
		assert.ErrorIs(t, err, ErrBadRecord, name)
	}
}

// FuzzDecode checks that Decode never panics, and that whatever it accepts
// re-encodes to a record that decodes to the same entry.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("o\x00g\x00t\x001"), []byte(`{"offset":1,"metadata":"x"}`))
	f.Add([]byte("g\x00g"), []byte(`{"generation":2,"protocol":"range","leader":"a","members":[{"memberId":"a","assignment":"AAE="}]}`))
	f.Add([]byte("g\x00g"), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		e, err := Decode(Record{Key: key, Value: value})
		if err != nil {
			return
		}
		var r Record
		if e.IsGroup() {
			r = EncodeGroup(e.Group, e.GroupValue)
		} else {
			r = EncodeOffset(e.Group, e.TopicPartition, e.Offset)
		}
		again, err := Decode(r)
		require.NoError(t, err)
		require.Equal(t, e, again)
	})
}

// FuzzDecodeConsumerAssignment checks that the ConsumerProtocol decoder
// never panics on garbage, which CheckInvariants feeds it.
func FuzzDecodeConsumerAssignment(f *testing.F) {
	f.Add(EncodeConsumerAssignment(map[string][]int32{"t": {0, 1}}))
	f.Add(EncodeConsumerSubscription([]string{"a", "b"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if a, err := DecodeConsumerAssignment(data); err == nil {
			b, err := DecodeConsumerAssignment(EncodeConsumerAssignment(a))
			require.NoError(t, err)
			require.Equal(t, len(a), len(b))
		}
		_, _ = DecodeConsumerSubscription(data)
	})
}

func TestConsumerProtocolRoundTrip(t *testing.T) {
	topics, err := DecodeConsumerSubscription(EncodeConsumerSubscription([]string{"a", "b"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, topics)
	a := map[string][]int32{"a": {0, 2}, "b": {1}}
	got, err := DecodeConsumerAssignment(EncodeConsumerAssignment(a))
	require.NoError(t, err)
	assert.Equal(t, a, got)
	_, err = DecodeConsumerAssignment([]byte{0, 0, 0, 0, 0, 9})
	assert.Error(t, err)
}
