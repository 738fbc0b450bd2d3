// Package record holds the unit of replication: a batch of records, as the
// leader assigns it offsets and as every replica stores it byte for byte.
//
// A batch is atomic: storage keeps or drops it whole, followers copy it whole,
// and truncation removes whole batches. This mirrors Kafka's RecordBatch (the
// producer's batch is the unit of CRC, of idempotent sequencing and of
// replication), so every offset boundary that the protocol talks about (LEO,
// HW, an epoch's start) is a batch boundary on every replica.
package record

import "encoding/binary"

// NoProducerID marks a batch written without the idempotent producer.
const NoProducerID int64 = -1

// NoSequence marks a batch that carries no producer sequence.
const NoSequence int32 = -1

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one key/value in a batch. Its offset is the batch's base offset
// plus its index in the batch.
type Record struct {
	Key       []byte
	Value     []byte
	Timestamp int64 // milliseconds, as the producer set it
	Headers   []Header
}

// Batch is a run of records with consecutive offsets written by one produce
// request to one partition.
//
// A batch has one of two forms. A batch built in memory (by a simulated
// client, the group coordinator, a test) has Records and no Wire. A batch
// that came off the wire or out of a segment file has Wire, Kafka's v2
// record batch exactly as the producer sent it (its codec, its CRC), and
// Records only once someone has decoded them (Decode): the broker stores and
// serves Wire as it is and looks inside only where it must.
//
// Invariants:
//  1. Len() >= 1.
//  2. BaseOffset >= 0 once the leader has assigned it.
//  3. ProducerID == NoProducerID  <=>  BaseSequence == NoSequence.
//  4. With Wire, the producer fields and the record count are Wire's, and
//     Records, when set, are Wire's records decoded. BaseOffset and
//     LeaderEpoch are the struct's: the leader assigns them after the
//     producer has sent the bytes, and Encode writes them into the copy it
//     makes (the CRC does not cover them, so the bytes stay valid).
type Batch struct {
	BaseOffset    int64
	LeaderEpoch   int32 // epoch of the leader that appended the batch
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Records       []Record
	Wire          []byte
}

// Len is the number of records in the batch.
func (b *Batch) Len() int {
	if b.Wire != nil {
		return int(int32(binary.BigEndian.Uint32(b.Wire[offCount:])))
	}
	return len(b.Records)
}

// NextOffset is the offset just past the batch's last record.
func (b *Batch) NextOffset() int64 { return b.BaseOffset + int64(b.Len()) }

// LastOffset is the offset of the batch's last record.
func (b *Batch) LastOffset() int64 { return b.BaseOffset + int64(b.Len()) - 1 }

// LastSequence is the sequence number of the batch's last record, or
// NoSequence for a non-idempotent batch.
func (b *Batch) LastSequence() int32 {
	if b.BaseSequence == NoSequence {
		return NoSequence
	}
	return b.BaseSequence + int32(b.Len()) - 1
}

// Size is the batch's size as a v2 record batch, the bytes a fetch carries
// for it; fetch byte limits and fetch.min.bytes are measured with it.
func (b *Batch) Size() int {
	if b.Wire != nil {
		return len(b.Wire)
	}
	n := HeaderLen
	first := b.firstTimestamp()
	for i := range b.Records {
		body := recordBodyLen(&b.Records[i], i, first)
		n += varintLen(int64(body)) + body
	}
	return n
}

// Clone returns a deep copy, so that a replica never shares record memory with
// another replica's log (a simulated network must not alias state).
func (b *Batch) Clone() Batch {
	c := *b
	if b.Wire != nil {
		c.Wire = append([]byte(nil), b.Wire...)
	}
	if b.Records == nil {
		return c
	}
	c.Records = make([]Record, len(b.Records))
	for i, r := range b.Records {
		c.Records[i] = Record{
			Key:       cloneBytes(r.Key),
			Value:     cloneBytes(r.Value),
			Timestamp: r.Timestamp,
		}
		if r.Headers != nil {
			c.Records[i].Headers = make([]Header, len(r.Headers))
			for j, h := range r.Headers {
				c.Records[i].Headers[j] = Header{Key: h.Key, Value: cloneBytes(h.Value)}
			}
		}
	}
	return c
}

// cloneBytes keeps nil and empty apart: Kafka does (a null key is spread
// over partitions, an empty one is hashed; a null value is a tombstone).
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Search returns the index in log, a run of batches in offset order, of
// the batch holding offset, or of the first after it (len(log) if none).
func Search(log []Batch, offset int64) int {
	lo, hi := 0, len(log)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if log[m].LastOffset() < offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
