package storage

import "github.com/watermarkhq/watermark/impl/record"

// tailBytes bounds the newest frames a Log keeps in memory.
const tailBytes = 1 << 20

// tail holds copies of the newest frames appended, up to tailBytes of
// them, contiguous and ending at the LEO: followers and caught-up
// consumers read what was just appended, and serving it from here saves
// the index seek, the read of the file and its buffer (Kafka has the page
// cache and the OS's readahead for it). The frames were checked when they
// were appended; their bytes are never written to, so batches read from
// here share them.
//
// Invariants: frames[head:] are contiguous in offsets and the last ends at
// the Log's LEO; bytes is the sum of their Wire lengths.
type tail struct {
	frames []record.Batch
	head   int
	bytes  int
}

// add appends b, whose Wire the tail now owns, and drops the oldest
// frames past tailBytes (keeping at least b).
func (t *tail) add(b record.Batch) {
	t.frames = append(t.frames, b)
	t.bytes += len(b.Wire)
	for t.bytes > tailBytes && len(t.frames)-t.head > 1 {
		t.bytes -= len(t.frames[t.head].Wire)
		t.frames[t.head] = record.Batch{}
		t.head++
	}
	if t.head > 64 && t.head > len(t.frames)/2 {
		n := copy(t.frames, t.frames[t.head:])
		clear(t.frames[n:])
		t.frames, t.head = t.frames[:n], 0
	}
}

// cut drops the frames holding an offset at or past leo, the LEO after a
// truncation.
func (t *tail) cut(leo int64) {
	for len(t.frames) > t.head && t.frames[len(t.frames)-1].NextOffset() > leo {
		t.bytes -= len(t.frames[len(t.frames)-1].Wire)
		t.frames[len(t.frames)-1] = record.Batch{}
		t.frames = t.frames[:len(t.frames)-1]
	}
}

func (t *tail) reset() { *t = tail{} }

// read is Log.Read from the tail: ok false when offset is before its
// first frame.
func (t *tail) read(offset int64, maxBytes int) ([]record.Batch, bool) {
	live := t.frames[t.head:]
	if len(live) == 0 || offset < live[0].BaseOffset {
		return nil, false
	}
	var out []record.Batch
	total := 0
	for i := record.Search(live, offset); i < len(live); i++ {
		size := live[i].Size()
		if len(out) > 0 && total+size > maxBytes {
			break
		}
		out = append(out, live[i])
		total += size
	}
	return out, true
}
