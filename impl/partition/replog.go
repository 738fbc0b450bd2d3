package partition

import (
	"fmt"
	"math"

	"github.com/watermarkhq/watermark/impl/record"
)

// Log is a replica's stored log as the replica reads it: the broker's
// storage, which the replica never writes (its writes go out in Ready).
// A replica built on a Log (NewOnLog) keeps no batch in memory but those
// it appended since the last Ready, so its memory does not grow with what
// the partition holds.
//
// The contract: the caller applies each Ready to the Log before the next
// input reaches the replica, so at every input the Log holds exactly the
// replica's batches.
type Log interface {
	// LEO is the offset after the Log's last batch.
	LEO() int64
	// StartOffset is the offset of the Log's first batch (its LEO when it
	// is empty): the caller deletes old batches by retention, below the
	// replica's HW, without telling it.
	StartOffset() int64
	// Read returns consecutive whole batches from the one holding offset,
	// as many as fit in maxBytes (by record.Batch.Size) but at least one;
	// none at or past LEO.
	Read(offset int64, maxBytes int) ([]record.Batch, error)
}

// replicaLog is where a Replica's batches are: all in memory (New: the
// tests, the explorer, the protocol model's trace validation), or in a
// Log with those appended since the last Ready (NewOnLog: the broker).
type replicaLog struct {
	mem      []record.Batch
	memStart int64 // where mem starts when it is empty (a reset)
	store    Log
	// err is the first read failure: the Log's storage broke. The replica
	// goes on as if the read found nothing, and Ready hands err over.
	err error
}

// readChunk bounds what one read of a Log decodes while a replica scans it.
const readChunk = 4 << 20

// storeEnd is where the stored log ends for the replica: the Log's LEO,
// or a truncation or reset still to apply.
func (r *Replica) storeEnd() int64 {
	if r.ready.StartAt >= 0 {
		return r.ready.StartAt
	}
	end := r.log.store.LEO()
	if t := r.ready.Truncate; t >= 0 && t < end {
		end = t
	}
	return end
}

// logStart is the offset of the replica's first record (its LEO if it
// has none): retention moves it on a Log, a reset anywhere.
func (r *Replica) logStart() int64 {
	switch {
	case r.ready.StartAt >= 0:
		return r.ready.StartAt
	case r.log.store != nil:
		return r.log.store.StartOffset()
	case len(r.log.mem) > 0:
		return r.log.mem[0].BaseOffset
	}
	return r.log.memStart
}

// resetLog empties the log and starts it at offset.
func (r *Replica) resetLog(offset int64) {
	r.ready.Append, r.ready.Truncate, r.ready.StartAt = nil, -1, offset
	if r.log.store == nil {
		r.log.mem, r.log.memStart = nil, offset
	}
}

func (r *Replica) leo() int64 {
	if r.log.store == nil {
		if len(r.log.mem) == 0 {
			return r.log.memStart
		}
		return r.log.mem[len(r.log.mem)-1].NextOffset()
	}
	if n := len(r.ready.Append); n > 0 {
		return r.ready.Append[n-1].NextOffset()
	}
	return r.storeEnd()
}

// readStore reads the Log, recording a failure.
func (r *Replica) readStore(offset int64, maxBytes int) []record.Batch {
	got, err := r.log.store.Read(offset, maxBytes)
	if err != nil {
		if r.log.err == nil {
			r.log.err = fmt.Errorf("read %s at offset %d: %w", r.tp, offset, err)
		}
		return nil
	}
	return got
}

// read returns whole batches from the one holding offset, up to maxBytes but
// at least one, and none at or past limit.
func (r *Replica) read(offset, limit int64, maxBytes int) []record.Batch {
	offset = max(offset, r.logStart())
	if r.log.store == nil {
		return readBatches(r.log.mem, offset, limit, maxBytes)
	}
	var out []record.Batch
	size := 0
	if end := r.storeEnd(); offset < end {
		for _, b := range r.readStore(offset, maxBytes) {
			if b.NextOffset() > min(limit, end) {
				break
			}
			s := b.Size()
			if len(out) > 0 && size+s > maxBytes {
				return out
			}
			out = append(out, b)
			size += s
		}
		if len(out) == 0 || out[len(out)-1].NextOffset() < end {
			return out // the stored log had more than fits, or a read failed
		}
		offset = end
	}
	for _, b := range readBatches(r.ready.Append, offset, limit, maxBytes) {
		s := b.Size()
		if len(out) > 0 && size+s > maxBytes {
			break
		}
		out = append(out, b)
		size += s
	}
	return out
}

// readBatches is read over batches in memory.
func readBatches(log []record.Batch, offset, limit int64, maxBytes int) []record.Batch {
	var out []record.Batch
	size := 0
	for i := record.Search(log, offset); i < len(log) && log[i].NextOffset() <= limit; i++ {
		s := log[i].Size()
		if len(out) > 0 && size+s > maxBytes {
			break
		}
		out = append(out, log[i])
		size += s
	}
	return out
}

// each calls fn with every batch from the one holding offset on, in
// order, reading a Log a chunk at a time.
func (r *Replica) each(offset int64, fn func(b *record.Batch)) {
	offset = max(offset, r.logStart())
	if r.log.store == nil {
		for _, b := range readBatches(r.log.mem, offset, math.MaxInt64, math.MaxInt) {
			fn(&b)
		}
		return
	}
	for end := r.storeEnd(); offset < end; {
		got := r.readStore(offset, readChunk)
		if len(got) == 0 {
			break
		}
		next := offset
		for i := range got {
			if got[i].BaseOffset >= end {
				break
			}
			fn(&got[i])
			next = got[i].NextOffset()
		}
		if next == offset {
			break
		}
		// Batches the Log holds past a truncation still to apply are not
		// the replica's: what follows end is in Ready.Append.
		offset = min(next, end)
	}
	for _, b := range readBatches(r.ready.Append, offset, math.MaxInt64, math.MaxInt) {
		fn(&b)
	}
}

// batchStart is the base offset of the batch holding offset (< LEO).
func (r *Replica) batchStart(offset int64) int64 {
	got := r.read(offset, math.MaxInt64, 0)
	if len(got) == 0 {
		return offset // a failed read, which Ready reports
	}
	return got[0].BaseOffset
}

// Log returns the replica's batches. Callers must not modify them. On a
// Log this reads all of it: for checkers and tests.
func (r *Replica) Log() []record.Batch {
	if r.log.store == nil {
		return r.log.mem
	}
	var out []record.Batch
	if m, ok := r.log.store.(mirrored); ok && r.ready.Truncate < 0 && r.ready.StartAt < 0 {
		if all, ok := m.Mirrored(); ok {
			if len(r.ready.Append) == 0 {
				return all
			}
			return append(append(out, all...), r.ready.Append...)
		}
	}
	r.each(0, func(b *record.Batch) { out = append(out, *b) })
	return out
}

// mirrored is a Log that keeps a copy of its batches in memory for
// checkers (storage.LogConfig's Mirror).
type mirrored interface {
	Mirrored() ([]record.Batch, bool)
}

// truncateLog drops every batch holding an offset >= offset (the batch
// holding offset goes whole) and returns the new LEO.
func (r *Replica) truncateLog(offset int64) int64 {
	if r.log.store == nil {
		i := len(r.log.mem)
		for i > 0 && r.log.mem[i-1].LastOffset() >= offset {
			i--
		}
		r.log.mem = r.log.mem[:i:i]
		return r.leo()
	}
	leo := r.batchStart(offset)
	if r.ready.Truncate < 0 || leo < r.ready.Truncate {
		r.ready.Truncate = leo
	}
	return leo
}

// appendLog adds b at the LEO. On a Log it waits in Ready.Append, where
// reads find it until the caller has stored it.
func (r *Replica) appendLog(b record.Batch) {
	if r.log.store == nil {
		r.log.mem = append(r.log.mem, b)
	}
	r.ready.Append = append(r.ready.Append, b)
}
