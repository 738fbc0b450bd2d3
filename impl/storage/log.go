package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/watermarkhq/watermark/impl/record"
)

// LogFile is the name of the log file inside a partition's directory.
const LogFile = "log"

// ErrNonContiguous is returned by Log.Append for a batch whose base offset is
// not the log end offset: the log has no gaps and no overlaps.
var ErrNonContiguous = errors.New("batch not contiguous with the log end offset")

// ErrLogFailed is returned by every write to a Log after a write, truncate or
// sync of its file failed: the file may then hold a partial frame or differ
// from the in-memory index, so appending after it would bury good batches
// behind garbage. Reopen the log (OpenLog recovers the file) to go on.
var ErrLogFailed = errors.New("log failed after an I/O error")

// Log is a partition's log of record batches, stored as one file of frames
// (see codec.go) on a Disk, with every batch also held in memory.
//
// Invariants:
//  1. batches[0].BaseOffset == StartOffset() (0 for now: nothing deletes old
//     batches yet) and batches[i+1].BaseOffset == batches[i].NextOffset().
//  2. The file holds exactly the frames of batches, in order; ends[i] is the
//     file offset just past the frame of batches[i].
//  3. leo == batches[len-1].NextOffset(), or StartOffset() when empty.
//
// A Log is not safe for concurrent use.
type Log struct {
	disk    Disk
	name    string
	batches []record.Batch
	ends    []int64
	leo     int64
	exists  bool  // the file exists, so Sync has something to sync
	failed  error // sticky I/O failure, see ErrLogFailed
	buf     []byte
}

// logStart is the offset of the first batch of every log, until retention or
// DeleteRecords give logs another start.
const logStart = 0

// Recovery reports what OpenLog found in a log file and what it dropped.
type Recovery struct {
	File           string // the log's file name on the Disk
	KeptBatches    int    // batches recovered
	KeptBytes      int64  // length of the valid prefix, the file's size after recovery
	LEO            int64  // log end offset after recovery
	DroppedBytes   int64  // bytes truncated from the end of the file
	DroppedBatches int    // intact frames found by following lengths in the dropped bytes (best effort)
	Reason         string // why recovery stopped before the end of the file; empty when it did not
}

// Clean reports whether the whole file was valid.
func (r Recovery) Clean() bool { return r.DroppedBytes == 0 }

// String renders the recovery for a broker's log.
func (r Recovery) String() string {
	s := fmt.Sprintf("log %s: kept %d batches (%d bytes), LEO %d", r.File, r.KeptBatches, r.KeptBytes, r.LEO)
	if r.Clean() {
		return s + ", clean"
	}
	return fmt.Sprintf("%s; dropped %d bytes holding %d intact batches: %s",
		s, r.DroppedBytes, r.DroppedBatches, r.Reason)
}

// OpenLog opens the log stored in dir on d, or an empty log if there is none.
//
// Recovery reads frames from the start and keeps the longest valid prefix: it
// stops at the first frame that is torn (runs past the end of the file), has a
// length out of range, fails its CRC, does not decode, breaks a batch
// invariant, or does not start at the previous batch's NextOffset (the first
// must start at 0). That frame and everything after it are truncated from the
// file and the truncation is synced, so the file on disk matches the log.
// Frames after a bad one may be intact, but without the bad one they would
// leave a gap in the offsets, and the replication protocol refetches them.
func OpenLog(d Disk, dir string) (*Log, Recovery, error) {
	name := path.Join(dir, LogFile)
	l := &Log{disk: d, name: name, leo: logStart}
	rec := Recovery{File: name, LEO: l.leo}
	data, err := d.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return l, rec, nil
	}
	if err != nil {
		return nil, rec, fmt.Errorf("open log %s: %w", name, err)
	}
	l.exists = true
	pos := 0
	for pos < len(data) {
		b, n, err := decodeFrame(data[pos:])
		if err == nil && b.BaseOffset != l.leo {
			err = fmt.Errorf("%w: batch at offset %d, want %d", ErrNonContiguous, b.BaseOffset, l.leo)
		}
		if err != nil {
			rec.Reason = fmt.Sprintf("frame at byte %d: %v", pos, err)
			break
		}
		pos += n
		l.batches = append(l.batches, b)
		l.ends = append(l.ends, int64(pos))
		l.leo = b.NextOffset()
	}
	rec.KeptBatches, rec.KeptBytes, rec.LEO = len(l.batches), int64(pos), l.leo
	if pos == len(data) {
		return l, rec, nil
	}
	rec.DroppedBytes = int64(len(data) - pos)
	rec.DroppedBatches = countIntactFrames(data[pos:])
	if err := d.Truncate(name, int64(pos)); err != nil {
		return nil, rec, fmt.Errorf("recover log %s: %w", name, err)
	}
	if err := d.Sync(name); err != nil {
		return nil, rec, fmt.Errorf("recover log %s: %w", name, err)
	}
	return l, rec, nil
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

// File returns the log's file name on its Disk.
func (l *Log) File() string { return l.name }

// LEO returns the log end offset: the offset the next appended batch gets.
func (l *Log) LEO() int64 { return l.leo }

// StartOffset returns the offset of the log's first record (always 0 for now).
func (l *Log) StartOffset() int64 { return logStart }

// size is the length of the log file.
func (l *Log) size() int64 {
	if len(l.ends) == 0 {
		return 0
	}
	return l.ends[len(l.ends)-1]
}

// fail makes err sticky; see ErrLogFailed.
func (l *Log) fail(op string, err error) error {
	l.failed = fmt.Errorf("%w: %s %s: %w", ErrLogFailed, op, l.name, err)
	return l.failed
}

// Append writes b at the end of the log. b.BaseOffset must equal LEO(). The
// write reaches the page cache only; call Sync to make it durable. The log
// keeps its own copy of b.
func (l *Log) Append(b record.Batch) error {
	if l.failed != nil {
		return l.failed
	}
	if err := validateBatch(&b); err != nil {
		return fmt.Errorf("append to %s: %w", l.name, err)
	}
	if b.BaseOffset != l.leo {
		return fmt.Errorf("append to %s: %w: base offset %d, log end offset %d",
			l.name, ErrNonContiguous, b.BaseOffset, l.leo)
	}
	frame, err := appendFrame(l.buf[:0], &b)
	if err != nil {
		return fmt.Errorf("append to %s: %w", l.name, err)
	}
	// Keep the encode buffer for the next append unless one huge batch
	// grew it.
	if cap(frame) <= 1<<20 {
		l.buf = frame
	}
	if err := l.disk.Append(l.name, frame); err != nil {
		return l.fail("append to", err)
	}
	l.exists = true
	l.ends = append(l.ends, l.size()+int64(len(frame)))
	l.batches = append(l.batches, b.Clone())
	l.leo = b.NextOffset()
	return nil
}

// Sync makes every append and truncation so far durable.
func (l *Log) Sync() error {
	if l.failed != nil {
		return l.failed
	}
	if !l.exists {
		return nil
	}
	if err := l.disk.Sync(l.name); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages,
		// so a retry that succeeds proves nothing.
		return l.fail("sync", err)
	}
	return nil
}

// search returns the index of the batch holding offset, or of the first batch
// after it, or len(batches) if offset >= LEO.
func (l *Log) search(offset int64) int {
	return sort.Search(len(l.batches), func(i int) bool { return l.batches[i].LastOffset() >= offset })
}

// Read returns copies of consecutive batches starting with the one that holds
// offset, as many as fit in maxBytes (measured by Batch.Size), but at least
// one, so that a reader is never stuck behind a batch larger than its limit
// (Kafka does the same). The first batch may start before offset: batches are
// atomic. Read returns nil when offset is outside [StartOffset(), LEO()).
func (l *Log) Read(offset int64, maxBytes int) []record.Batch {
	if offset < l.StartOffset() {
		return nil
	}
	var out []record.Batch
	total := 0
	for i := l.search(offset); i < len(l.batches); i++ {
		size := l.batches[i].Size()
		if len(out) > 0 && total+size > maxBytes {
			break
		}
		out = append(out, l.batches[i].Clone())
		total += size
	}
	return out
}

// Batches returns copies of all batches, to load a replica's state on startup.
func (l *Log) Batches() []record.Batch {
	out := make([]record.Batch, len(l.batches))
	for i := range l.batches {
		out[i] = l.batches[i].Clone()
	}
	return out
}

// TruncateTo removes every batch that holds an offset >= offset, so that a
// batch containing offset goes whole (batches are atomic), and returns the new
// LEO, which can therefore be below offset. Truncating at or beyond LEO does
// nothing. Like Append, the truncation is durable only after Sync; until then
// a power loss can bring the removed batches back.
func (l *Log) TruncateTo(offset int64) (newLEO int64, err error) {
	if l.failed != nil {
		return l.leo, l.failed
	}
	i := l.search(offset)
	if i == len(l.batches) {
		return l.leo, nil
	}
	var pos int64
	if i > 0 {
		pos = l.ends[i-1]
	}
	if err := l.disk.Truncate(l.name, pos); err != nil {
		return l.leo, l.fail("truncate", err)
	}
	clear(l.batches[i:]) // let the removed records be collected
	l.batches, l.ends = l.batches[:i], l.ends[:i]
	l.leo = l.StartOffset()
	if i > 0 {
		l.leo = l.batches[i-1].NextOffset()
	}
	return l.leo, nil
}
