package kitclient

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMurmur2KafkaVectors checks the hash against the values the Java
// client's own test pins.
// Reference: Kafka UtilsTest.testMurmur2.
func TestMurmur2KafkaVectors(t *testing.T) {
	for key, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		assert.Equal(t, want, Murmur2([]byte(key)), "murmur2(%q)", key)
	}
}

// TestKeyPartitionMasksTheSignBit checks that a negative hash is made
// positive with & 0x7fffffff (Utils.toPositive), not by negation: the two
// give different partitions for "21".
// Reference: Kafka BuiltInPartitioner.partitionForKey.
func TestKeyPartitionMasksTheSignBit(t *testing.T) {
	h := Murmur2([]byte("21"))
	require.Negative(t, h)
	assert.Equal(t, (h&0x7fffffff)%1000, KeyPartition([]byte("21"), 1000))
	assert.NotEqual(t, (-h)%1000, KeyPartition([]byte("21"), 1000))
}

// TestKeyPartitionMatchesFranzGo compares key placement with an independent
// implementation of Kafka's default partitioner, franz-go's, on random keys
// of every length class (the 4-byte body and each tail length) and partition
// counts.
func TestKeyPartitionMatchesFranzGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for i := range 100_000 {
		key := make([]byte, rng.IntN(65))
		for j := range key {
			key[j] = byte(rng.UintN(256))
		}
		n := 1 + rng.IntN(100)
		want := tp.Partition(&kgo.Record{Key: key}, n)
		if got := KeyPartition(key, n); int(got) != want {
			t.Fatalf("case %d: key %x over %d partitions: got %d, franz-go %d", i, key, n, got, want)
		}
	}
}

// TestPartitionerExplicitPartitionWins checks rule 1: an explicit
// partition is used as given, key or not.
func TestPartitionerExplicitPartitionWins(t *testing.T) {
	p := NewPartitioner(rand.New(rand.NewPCG(1, 1)))
	assert.Equal(t, int32(7), p.Partition("t", 7, []byte("k"), 10, nil))
	assert.Equal(t, int32(3), p.Partition("t", 3, nil, 10, []int32{0}))
}

// TestPartitionerKeyIgnoresAvailability checks rule 2: a keyed record goes
// to its hash partition even when that partition has no leader, so a key
// never moves.
func TestPartitionerKeyIgnoresAvailability(t *testing.T) {
	p := NewPartitioner(rand.New(rand.NewPCG(1, 1)))
	key := []byte("order-42")
	want := KeyPartition(key, 12)
	for range 5 {
		assert.Equal(t, want, p.Partition("t", -1, key, 12, []int32{(want + 1) % 12}))
	}
}

// TestPartitionerEmptyKeyIsHashed checks that only a nil key is spread:
// Kafka hashes an empty (non-null) key like any other.
func TestPartitionerEmptyKeyIsHashed(t *testing.T) {
	p := NewPartitioner(rand.New(rand.NewPCG(1, 1)))
	want := KeyPartition([]byte{}, 10)
	seen := map[int32]bool{}
	for range 10 {
		assert.Equal(t, want, p.Partition("t", -1, []byte{}, 10, nil))
		seen[p.Partition("t", -1, nil, 10, nil)] = true
	}
	assert.Len(t, seen, 10, "nil keys go round-robin over all 10 partitions")
}

// TestPartitionerRoundRobin checks rule 3: a random start drawn from the
// caller's rng on a topic's first record, then +1 per record, modulo the
// available partitions, or all of them when none is available; each topic
// counts on its own.
func TestPartitionerRoundRobin(t *testing.T) {
	for seed := range uint64(20) {
		start := rand.New(rand.NewPCG(seed, 0)).Uint32()
		p := NewPartitioner(rand.New(rand.NewPCG(seed, 0)))
		avail := []int32{1, 4, 6}
		for i := range uint32(7) {
			assert.Equal(t, avail[(start+i)%3], p.Partition("a", -1, nil, 8, avail), "seed %d call %d", seed, i)
		}
		// No partition available: spread over all 8 instead; the counter
		// carries on.
		assert.Equal(t, int32((start+7)%8), p.Partition("a", -1, nil, 8, nil))
		// Another topic draws its own start.
		other := NewPartitioner(rand.New(rand.NewPCG(seed, 0)))
		other.Partition("a", -1, nil, 8, nil)
		p2 := rand.New(rand.NewPCG(seed, 0))
		p2.Uint32()
		assert.Equal(t, int32(p2.Uint32()%5), other.Partition("b", -1, nil, 5, nil))
	}
}
