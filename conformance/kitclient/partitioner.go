package kitclient

import (
	"encoding/binary"
	"math/rand/v2"
)

// Murmur2 is the 32-bit MurmurHash2 of b with Kafka's seed, as the Java
// client's Utils.murmur2 computes it: keys hashed here land on the same
// partitions as keys a Java producer sends.
func Murmur2(b []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 4 {
		k := binary.LittleEndian.Uint32(b)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		b = b[4:]
	}
	// The tail cases fall through on purpose: three bytes mix in all three.
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KeyPartition is Kafka's default partition for a key: murmur2 made positive
// with & 0x7fffffff (Utils.toPositive, not Math.abs), modulo the partition
// count. partitions must be positive.
func KeyPartition(key []byte, partitions int) int32 {
	return (Murmur2(key) & 0x7fffffff) % int32(partitions)
}

// Partitioner picks a partition for each record (spec/SEMANTICS.md, Producer).
// It is not safe for concurrent use.
type Partitioner struct {
	rng *rand.Rand
	// next is the round-robin counter per topic. A topic's counter starts
	// at a random value so that producers started together do not all
	// hammer partition 0 first.
	next map[string]uint32
}

// NewPartitioner returns a partitioner drawing round-robin starts from rng.
func NewPartitioner(rng *rand.Rand) *Partitioner {
	return &Partitioner{rng: rng, next: map[string]uint32{}}
}

// Partition chooses the partition of a record of topic:
//  1. explicit (>= 0) is used as given;
//  2. else a non-nil key is hashed with KeyPartition over all partitions,
//     available or not, so a key always lands on the same partition; an
//     empty non-nil key is hashed too, as in Kafka, where only a null key is
//     spread;
//  3. else round-robin over available (the partitions that have a leader,
//     in the caller's order), or over all partitions when none is available.
//
// partitions must be positive.
func (p *Partitioner) Partition(topic string, explicit int32, key []byte, partitions int, available []int32) int32 {
	if explicit >= 0 {
		return explicit
	}
	if key != nil {
		return KeyPartition(key, partitions)
	}
	n, ok := p.next[topic]
	if !ok {
		n = p.rng.Uint32()
	}
	p.next[topic] = n + 1
	if len(available) > 0 {
		return available[n%uint32(len(available))]
	}
	return int32(n % uint32(partitions))
}
