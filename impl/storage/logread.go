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

// readChunk is how much a read asks the Disk for at once.
const readChunk = 64 << 10

// readFrames decodes up to n frames of segment s from byte pos on (all to
// its end for n < 0), checking each against the segment: in order, with no
// gaps, inside its offsets. A frame that does not decode or does not fit
// fails the log with kafka.ErrStorage: the file changed under it.
func (l *Log) readFrames(s *segment, pos int64, n int) ([]frame, error) {
	name := SegmentName(l.dir, s.base)
	var out []frame
	var buf []byte
	bufAt := pos
	for pos < s.size && (n < 0 || len(out) < n) {
		have := buf[pos-bufAt:]
		b, size, err := decodeFrame(have)
		if errors.Is(err, errTornFrame) && bufAt+int64(len(buf)) < s.size {
			// Read on: the chunk ends inside this frame.
			want := max(int64(readChunk), int64(len(have))*2)
			want = min(want, s.size-pos)
			next := make([]byte, want)
			got, err := l.disk.ReadAt(name, next, pos)
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("read %s: %w", name, err)
			}
			if int64(got) < want {
				return nil, l.fail("read", name, fmt.Errorf("%w: file ends at byte %d, the log holds %d", errIndexMismatch, pos+int64(got), s.size))
			}
			buf, bufAt = next, pos
			continue
		}
		if err == nil {
			prevNext := s.base
			if len(out) > 0 {
				prevNext = out[len(out)-1].batch.NextOffset()
			}
			switch {
			case b.NextOffset() > s.next:
				err = fmt.Errorf("batch holds offsets [%d, %d), past the segment's end %d", b.BaseOffset, b.NextOffset(), s.next)
			case pos == 0 && b.BaseOffset != s.base:
				err = fmt.Errorf("first batch at offset %d, segment base %d", b.BaseOffset, s.base)
			case len(out) > 0 && b.BaseOffset != prevNext:
				err = fmt.Errorf("%w: batch at offset %d, want %d", ErrNonContiguous, b.BaseOffset, prevNext)
			}
		}
		if err != nil {
			return nil, l.fail("read", name, fmt.Errorf("%w: frame at byte %d: %w", errIndexMismatch, pos, err))
		}
		out = append(out, frame{batch: b, pos: pos, size: int64(size)})
		pos += int64(size)
	}
	return out, nil
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
	for pos = seek(index, offset); ; {
		f, err := l.readFrames(s, pos, 1)
		if err != nil {
			return 0, 0, err
		}
		if len(f) == 0 {
			return s.size, s.next, nil
		}
		if f[0].batch.NextOffset() > offset {
			return f[0].pos, f[0].batch.BaseOffset, nil
		}
		pos += f[0].size
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
// Disk.ReadAt. The batches belong to the caller and read back exactly as
// appended (nil and empty byte slices stay apart). A frame that no longer
// matches the log (a file changed under it) fails the log with
// kafka.ErrStorage.
func (l *Log) Read(offset int64, maxBytes int) ([]record.Batch, error) {
	if offset < l.start || offset >= l.LEO() {
		return nil, nil
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
		for pos < s.size {
			f, err := l.readFrames(s, pos, 1)
			if err != nil {
				return nil, err
			}
			size := f[0].batch.Size()
			if len(out) > 0 && total+size > maxBytes {
				return out, nil
			}
			out = append(out, f[0].batch)
			total += size
			pos += f[0].size
		}
	}
	return out, nil
}

// ReadAll decodes every batch of the log, like Read from StartOffset()
// without a byte limit. It returns nil for an empty log.
func (l *Log) ReadAll() ([]record.Batch, error) {
	var out []record.Batch
	for _, s := range l.segs {
		fs, err := l.readFrames(s, 0, -1)
		if err != nil {
			return nil, err
		}
		for i := range fs {
			out = append(out, fs[i].batch)
		}
	}
	return out, nil
}

// Load decodes every batch of the log, to build a replica's state on
// startup. Unlike ReadAll it treats damage as recovery does: OpenLog
// trusted the segments below the recovery point without reading them, so
// a frame there that fails its CRC or breaks the offsets is found here,
// and the log is cut before it (the segment truncated and synced, the
// later ones removed), as if recovery had stopped there. Recovery then
// reports it.
func (l *Log) Load() ([]record.Batch, error) {
	var out []record.Batch
	for i := 0; i < len(l.segs); i++ {
		s := l.segs[i]
		name := SegmentName(l.dir, s.base)
		data, err := l.disk.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		frames, stop := scanSegment(data, s.base)
		if i > 0 && s.base != l.segs[i-1].next {
			// Nothing of it joins the log: cut where the one before ends.
			return nil, fmt.Errorf("load %s: %w: segment %s starts at offset %d, the one before ends at %d",
				l.dir, errIndexMismatch, name, s.base, l.segs[i-1].next)
		}
		for j := range frames {
			out = append(out, frames[j].batch)
		}
		last := s.base
		if len(frames) > 0 {
			last = frames[len(frames)-1].batch.NextOffset()
		}
		if stop == "" && int64(len(data)) == s.size && last == s.next {
			continue
		}
		if stop == "" {
			stop = fmt.Sprintf("segment ends at offset %d (byte %d), want %d (byte %d)", last, len(data), s.next, s.size)
		}
		kept := framesEnd(frames)
		if err := l.cutAt(i, frames, data, fmt.Sprintf("%s at byte %d: %s", name, kept, stop)); err != nil {
			return nil, err
		}
		break
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// scanSegment decodes the frames of a segment file from its start, for
// as long as they are valid: each decodes, passes its CRC, and starts
// where the one before ended (the first at base). stop says why it
// stopped before the end ("" if it did not).
func scanSegment(data []byte, base int64) ([]frame, string) {
	var out []frame
	pos, next := 0, base
	for pos < len(data) {
		b, n, err := decodeFrame(data[pos:])
		if err == nil && b.BaseOffset != next {
			err = fmt.Errorf("%w: batch at offset %d, want %d", ErrNonContiguous, b.BaseOffset, next)
		}
		if err != nil {
			return out, err.Error()
		}
		out = append(out, frame{batch: b, pos: int64(pos), size: int64(n)})
		pos += n
		next = b.NextOffset()
	}
	return out, ""
}

// framesEnd is the byte just past the last of frames (0 for none).
func framesEnd(frames []frame) int64 {
	if len(frames) == 0 {
		return 0
	}
	f := frames[len(frames)-1]
	return f.pos + f.size
}

// cutAt ends the log after frames, the valid prefix of segment i, whose
// file holds data: recovery's cut. The segments after i go; segment i is
// truncated, its index rebuilt from frames (it is removed if none are
// valid); the cut is synced and the recovery point lowered to it; the
// Recovery report counts what went.
func (l *Log) cutAt(i int, frames []frame, data []byte, reason string) error {
	pos := framesEnd(frames)
	dropped := int64(len(data)) - pos
	intact := countIntactFrames(data[pos:])
	for _, s := range l.segs[i+1:] {
		dropped += s.size
		if rest, err := l.disk.ReadFile(SegmentName(l.dir, s.base)); err == nil {
			intact += countIntactFrames(rest)
		}
	}
	s := l.segs[i]
	next := s.base
	if len(frames) > 0 {
		next = frames[len(frames)-1].batch.NextOffset()
	}
	if next < l.recoveryPoint {
		if err := l.setRecoveryPoint(next); err != nil {
			return err
		}
	}
	if err := l.dropFrom(i + 1); err != nil {
		return err
	}
	var err error
	if len(frames) == 0 {
		if err = l.dropFrom(i); err == nil && len(l.segs) > 0 {
			err = l.activate(l.active())
		}
	} else {
		name := SegmentName(l.dir, s.base)
		if err = l.disk.Truncate(name, pos); err != nil {
			return l.fail("recover", name, err)
		}
		s.size, s.next = pos, next
		err = l.rebuildIndex(s, frames)
	}
	if err == nil && len(l.segs) > 0 {
		err = l.syncSegment(l.active())
	}
	if err != nil {
		return err
	}
	if l.rec.Reason == "" {
		l.rec.Reason = reason
	}
	l.rec.DroppedBytes += dropped
	l.rec.DroppedBatches += intact
	l.rec.LEO = l.LEO()
	l.rec.KeptBytes = l.size()
	return nil
}

// rebuildIndex rewrites the index file of s from its frames, all of them,
// and makes s the active segment: its index in memory, its roll clock
// from its first batch.
func (l *Log) rebuildIndex(s *segment, frames []frame) error {
	name := indexName(l.dir, s.base)
	if l.exists(name) {
		if err := l.disk.Remove(name); err != nil {
			return l.fail("rebuild", name, err)
		}
	}
	var entries []byte
	s.index, s.sinceIndex = []indexEntry{}, 0
	for _, f := range frames {
		if f.pos > 0 && s.sinceIndex >= l.cfg.IndexIntervalBytes {
			e := indexEntry{offset: f.batch.BaseOffset, pos: f.pos}
			s.index = append(s.index, e)
			entries = encodeIndexEntry(entries, s.base, e)
			s.sinceIndex = 0
		}
		s.sinceIndex += f.size
	}
	if len(entries) > 0 {
		if err := l.disk.Append(name, entries); err != nil {
			return l.fail("rebuild", name, err)
		}
	}
	s.firstTS = -1
	if len(frames) > 0 {
		s.firstTS = maxTimestamp(&frames[0].batch)
	}
	s.dirty = true
	return nil
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
