// Package record holds the unit of replication: a batch of records, as the
// leader assigns it offsets and as every replica stores it byte for byte.
//
// A batch is atomic: storage keeps or drops it whole, followers copy it whole,
// and truncation removes whole batches. This mirrors Kafka's RecordBatch (the
// producer's batch is the unit of CRC, of idempotent sequencing and of
// replication), so every offset boundary that the protocol talks about (LEO,
// HW, an epoch's start) is a batch boundary on every replica.
package record

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
// Invariants:
//  1. len(Records) >= 1.
//  2. BaseOffset >= 0 once the leader has assigned it.
//  3. ProducerID == NoProducerID  <=>  BaseSequence == NoSequence.
type Batch struct {
	BaseOffset    int64
	LeaderEpoch   int32 // epoch of the leader that appended the batch
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Records       []Record
}

// NextOffset is the offset just past the batch's last record.
func (b *Batch) NextOffset() int64 { return b.BaseOffset + int64(len(b.Records)) }

// LastOffset is the offset of the batch's last record.
func (b *Batch) LastOffset() int64 { return b.BaseOffset + int64(len(b.Records)) - 1 }

// LastSequence is the sequence number of the batch's last record, or
// NoSequence for a non-idempotent batch.
func (b *Batch) LastSequence() int32 {
	if b.BaseSequence == NoSequence {
		return NoSequence
	}
	return b.BaseSequence + int32(len(b.Records)) - 1
}

// Size estimates the batch's encoded size in bytes; fetch byte limits and
// fetch.min.bytes are measured with it.
func (b *Batch) Size() int {
	n := 61 // Kafka's record batch header
	for i := range b.Records {
		r := &b.Records[i]
		n += 8 + len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			n += 4 + len(h.Key) + len(h.Value)
		}
	}
	return n
}

// Clone returns a deep copy, so that a replica never shares record memory with
// another replica's log (a simulated network must not alias state).
func (b *Batch) Clone() Batch {
	c := *b
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
