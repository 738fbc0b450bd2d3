package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/watermarkhq/watermark/impl/record"
)

// frame is one decoded frame of a segment and where it lies.
type frame struct {
	batch record.Batch
	pos   int64
	size  int64
}

// readChunk is how much a read asks the Disk for at once; scanChunk, how
// much a scan of whole segments does.
const (
	readChunk = 64 << 10
	scanChunk = 1 << 20
)

// frameReader decodes a segment's frames in order from a position,
// reading the file a chunk at a time. Each chunk is a new buffer, so the
// batches it returns stay valid (they alias the chunk they came from).
type frameReader struct {
	l     *Log
	s     *segment
	name  string
	buf   []byte
	bufAt int64
	pos   int64
	prev  int64 // NextOffset of the last frame returned; -1 before one
	chunk int64
}

func (l *Log) frames(s *segment, pos int64) *frameReader {
	return &frameReader{l: l, s: s, name: SegmentName(l.dir, s.base), bufAt: pos, pos: pos, prev: -1, chunk: readChunk}
}

// next returns the next frame, ok false at the segment's end. A frame
// that does not decode or does not fit the segment (in order, no gaps,
// inside its offsets) is bad: why says how, and the caller decides what
// that means; err is an I/O failure.
func (fr *frameReader) next() (f frame, ok bool, why string, err error) {
	s := fr.s
	for fr.pos < s.size {
		have := fr.buf[fr.pos-fr.bufAt:]
		b, size, derr := decodeFrame(have)
		if errors.Is(derr, errTornFrame) && fr.bufAt+int64(len(fr.buf)) < s.size {
			// Read on: the chunk ends inside this frame.
			want := min(max(fr.chunk, int64(len(have))*2), s.size-fr.pos)
			chunk := make([]byte, want)
			got, err := fr.l.disk.ReadAt(fr.name, chunk, fr.pos)
			if err != nil && !errors.Is(err, io.EOF) {
				return f, false, "", fmt.Errorf("read %s: %w", fr.name, err)
			}
			if int64(got) < want {
				return f, false, fmt.Sprintf("file ends at byte %d, the log holds %d", fr.pos+int64(got), s.size), nil
			}
			fr.buf, fr.bufAt = chunk, fr.pos
			continue
		}
		switch {
		case derr != nil:
			why = derr.Error()
		case b.NextOffset() > s.next:
			why = fmt.Sprintf("batch holds offsets [%d, %d), past the segment's end %d", b.BaseOffset, b.NextOffset(), s.next)
		case fr.pos == 0 && b.BaseOffset != s.base:
			why = fmt.Sprintf("%v: first batch at offset %d, segment base %d", ErrNonContiguous, b.BaseOffset, s.base)
		case fr.prev >= 0 && b.BaseOffset != fr.prev:
			why = fmt.Sprintf("%v: batch at offset %d, want %d", ErrNonContiguous, b.BaseOffset, fr.prev)
		}
		if why != "" {
			return frame{pos: fr.pos}, false, why, nil
		}
		f = frame{batch: b, pos: fr.pos, size: int64(size)}
		fr.pos += int64(size)
		fr.prev = b.NextOffset()
		return f, true, "", nil
	}
	return f, false, "", nil
}

// readFrames decodes up to n frames of segment s from byte pos on (all to
// its end for n < 0). A bad frame fails the log with kafka.ErrStorage: the
// file changed under it.
func (l *Log) readFrames(s *segment, pos int64, n int) ([]frame, error) {
	fr := l.frames(s, pos)
	var out []frame
	for n < 0 || len(out) < n {
		f, ok, err := fr.must()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		out = append(out, f)
	}
	return out, nil
}

// must is next, with a bad frame failing the log.
func (fr *frameReader) must() (frame, bool, error) {
	f, ok, why, err := fr.next()
	if err == nil && why != "" {
		err = fr.l.fail("read", fr.name, fmt.Errorf("%w: frame at byte %d: %s", errIndexMismatch, f.pos, why))
	}
	return f, ok, err
}

// loadIndex returns s's sparse index: the one in memory for the active
// segment, else its file. A missing or bad index file gives none, so reads
// scan the segment from its start.
func (l *Log) loadIndex(s *segment) ([]indexEntry, error) {
	if s.index != nil {
		return s.index, nil
	}
	name := indexName(l.dir, s.base)
	data, err := l.disk.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	index, err := decodeIndex(data, s.base, s.size)
	if err != nil {
		return nil, nil
	}
	return index, nil
}

// batchAt finds, in segment i, the batch holding offset: its frame's
// position and its base offset.
func (l *Log) batchAt(i int, offset int64) (pos, base int64, err error) {
	s := l.segs[i]
	index, err := l.loadIndex(s)
	if err != nil {
		return 0, 0, err
	}
	fr := l.frames(s, seek(index, offset))
	for {
		f, ok, err := fr.must()
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			return s.size, s.next, nil
		}
		if f.batch.NextOffset() > offset {
			return f.pos, f.batch.BaseOffset, nil
		}
	}
}

// errIndexMismatch reports a segment file that no longer holds the frames
// its Log describes: something other than the Log changed it.
var errIndexMismatch = errors.New("log file does not match its index")

// Read returns consecutive batches starting with the one that holds offset,
// as many as fit in maxBytes (measured by Batch.Size), but at least one, so
// that a reader is never stuck behind a batch larger than its limit (Kafka
// does the same). The first batch may start before offset: batches are
// atomic. Read returns no batches and no error when offset is outside
// [StartOffset(), LEO()).
//
// Read seeks with the segment's sparse index and decodes only the frames
// from the index entry before offset to the last batch it returns, through
// Disk.ReadAt, unless offset is among the newest batches, which it keeps
// in memory (tail). Each batch is its stored bytes (record.Batch.Wire),
// its records not decoded, so that a fetch serves them as they are; the
// caller may change the Batch but must not write into its Wire, which a
// batch from memory shares. A frame that no longer
// matches the log (a file changed under it) fails the log with
// kafka.ErrStorage.
func (l *Log) Read(offset int64, maxBytes int) ([]record.Batch, error) {
	if l.failed != nil {
		return nil, l.failed // a file may no longer hold what the log says
	}
	if offset < l.start || offset >= l.LEO() {
		return nil, nil
	}
	if out, ok := l.tail.read(offset, maxBytes); ok {
		return out, nil
	}
	var out []record.Batch
	total := 0
	for i := l.segOf(offset); i < len(l.segs); i++ {
		s := l.segs[i]
		pos := int64(0)
		if i == l.segOf(offset) {
			var err error
			if pos, _, err = l.batchAt(i, offset); err != nil {
				return nil, err
			}
		}
		// Decode a frame at a time: a fetch of one small batch must not
		// decode the rest of a 1 GiB segment.
		fr := l.frames(s, pos)
		for {
			f, ok, err := fr.must()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			size := f.batch.Size()
			if len(out) > 0 && total+size > maxBytes {
				return out, nil
			}
			out = append(out, f.batch)
			total += size
		}
	}
	return out, nil
}

// ReadAll decodes every batch of the log, like Read from StartOffset()
// without a byte limit, and decodes the records of each uncompressed one
// (a compressed batch keeps only its Wire). It returns nil for an empty
// log.
func (l *Log) ReadAll() ([]record.Batch, error) {
	var out []record.Batch
	for _, s := range l.segs {
		fs, err := l.readFrames(s, 0, -1)
		if err != nil {
			return nil, err
		}
		for i := range fs {
			if err := decodeRecords(&fs[i].batch); err != nil {
				return nil, l.fail("read", SegmentName(l.dir, s.base), fmt.Errorf("%w: frame at byte %d: %v", errIndexMismatch, fs[i].pos, err))
			}
			out = append(out, fs[i].batch)
		}
	}
	return out, nil
}

// size is the log's bytes in all its segments.
func (l *Log) size() int64 {
	n := int64(0)
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// countIntactFrames counts the frames in buf that decode, following length
// fields for as long as they can be followed.
func countIntactFrames(buf []byte) int {
	count := 0
	for len(buf) > 0 {
		_, n, err := decodeFrame(buf)
		if n == 0 {
			break
		}
		if err == nil {
			count++
		}
		buf = buf[n:]
	}
	return count
}

// Batches decodes every batch of the log, as ReadAll does, and panics if
// ReadAll fails: for tests and tools that have no use for the error.
func (l *Log) Batches() []record.Batch {
	b, err := l.ReadAll()
	if err != nil {
		panic(fmt.Sprintf("storage: Log.Batches: %v", err))
	}
	return b
}
