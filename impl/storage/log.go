package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// LogFile is the name of the log file inside a partition's directory.
const LogFile = "log"

// ErrNonContiguous is returned by Log.Append for a batch whose base offset is
// not the log end offset: the log has no gaps and no overlaps.
var ErrNonContiguous = errors.New("batch not contiguous with the log end offset")

// Every write to a Log after a write, truncate or sync of its file failed
// returns kafka.ErrStorage (KAFKA_STORAGE_ERROR): the file may then hold a
// partial frame or differ from the in-memory index, so appending after it
// would bury good batches behind garbage. Reopen the log (OpenLog recovers
// the file) to go on.

// Log is a partition's log of record batches, stored as one file of frames
// (see codec.go) on a Disk.
//
// The Log does not keep the batches in memory: the replica that owns the log
// already does. It keeps an index of 16 bytes per batch, enough to append,
// truncate and find a batch in the file: the batch's next offset and the file
// position just past its frame. A batch's base offset is the previous batch's
// next offset (StartOffset() for the first), and its frame starts where the
// previous one ends (0 for the first). Reading batches back (Read, ReadAll)
// decodes them from the file.
//
// Invariants:
//  1. index[i].next > base(i), where base(0) == StartOffset() (0 for now:
//     nothing deletes old batches yet) and base(i+1) == index[i].next.
//  2. The file holds exactly one frame per index entry, in order: frame i
//     spans [pos(i), index[i].end), pos(0) == 0 and pos(i+1) == index[i].end,
//     and decodes to a batch with BaseOffset base(i) and NextOffset
//     index[i].next.
//  3. recovered is nil, or holds exactly the batches of the index, decoded
//     by OpenLog and not yet handed over by Batches.
//
// A Log is not safe for concurrent use.
type Log struct {
	disk      Disk
	name      string
	index     []indexEntry
	recovered []record.Batch
	exists    bool  // the file exists, so Sync has something to sync
	failed    error // sticky I/O failure, see kafka.ErrStorage
	buf       []byte
}

// indexEntry locates one batch of a Log; see the Log's invariants.
type indexEntry struct {
	next int64 // the batch's NextOffset
	end  int64 // the file position just past the batch's frame
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
//
// Recovery decodes every batch it keeps. The Log holds on to them only until
// the caller takes them with Batches.
func OpenLog(d Disk, dir string) (*Log, Recovery, error) {
	name := path.Join(dir, LogFile)
	l := &Log{disk: d, name: name}
	rec := Recovery{File: name, LEO: l.LEO()}
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
		if err == nil && b.BaseOffset != l.LEO() {
			err = fmt.Errorf("%w: batch at offset %d, want %d", ErrNonContiguous, b.BaseOffset, l.LEO())
		}
		if err != nil {
			rec.Reason = fmt.Sprintf("frame at byte %d: %v", pos, err)
			break
		}
		pos += n
		l.recovered = append(l.recovered, b)
		l.index = append(l.index, indexEntry{next: b.NextOffset(), end: int64(pos)})
	}
	rec.KeptBatches, rec.KeptBytes, rec.LEO = len(l.index), int64(pos), l.LEO()
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
func (l *Log) LEO() int64 { return l.base(len(l.index)) }

// StartOffset returns the offset of the log's first record (always 0 for now).
func (l *Log) StartOffset() int64 { return logStart }

// base is the base offset of batch i, or LEO() for i == len(index).
func (l *Log) base(i int) int64 {
	if i == 0 {
		return l.StartOffset()
	}
	return l.index[i-1].next
}

// pos is the file position where the frame of batch i starts, or the file's
// length for i == len(index).
func (l *Log) pos(i int) int64 {
	if i == 0 {
		return 0
	}
	return l.index[i-1].end
}

// size is the length of the log file.
func (l *Log) size() int64 { return l.pos(len(l.index)) }

// fail makes err sticky; see kafka.ErrStorage.
func (l *Log) fail(op string, err error) error {
	l.failed = fmt.Errorf("%w: %s %s: %w", kafka.ErrStorage, op, l.name, err)
	return l.failed
}

// maxRetainedBuf bounds the encode buffer a Log keeps between appends. It
// is above a default-sized producer batch (Kafka's 1 MB) in this framing
// with the slack append's growth adds: below it, every such batch paid for a
// fresh buffer and its zeroing.
const maxRetainedBuf = 2 << 20

// Append writes b at the end of the log. b.BaseOffset must equal LEO(). The
// write reaches the page cache only; call Sync to make it durable.
//
// Append does not retain b: it encodes b into the file and keeps only b's
// offsets and position, so the caller may modify or reuse b when it returns.
// Appending drops the batches recovered by OpenLog if Batches has not taken
// them yet; Batches then decodes them from the file.
func (l *Log) Append(b record.Batch) error {
	if l.failed != nil {
		return l.failed
	}
	if err := validateBatch(&b); err != nil {
		return fmt.Errorf("append to %s: %w", l.name, err)
	}
	if leo := l.LEO(); b.BaseOffset != leo {
		return fmt.Errorf("append to %s: %w: base offset %d, log end offset %d",
			l.name, ErrNonContiguous, b.BaseOffset, leo)
	}
	frame, err := appendFrame(l.buf[:0], &b)
	if err != nil {
		return fmt.Errorf("append to %s: %w", l.name, err)
	}
	// Keep the encode buffer for the next append unless one huge batch
	// grew it.
	if cap(frame) <= maxRetainedBuf {
		l.buf = frame
	}
	if err := l.disk.Append(l.name, frame); err != nil {
		return l.fail("append to", err)
	}
	l.exists = true
	l.index = append(l.index, indexEntry{next: b.NextOffset(), end: l.size() + int64(len(frame))})
	l.recovered = nil
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
// after it, or len(index) if offset >= LEO.
func (l *Log) search(offset int64) int {
	return sort.Search(len(l.index), func(i int) bool { return l.index[i].next > offset })
}

// Read returns consecutive batches starting with the one that holds offset,
// as many as fit in maxBytes (measured by Batch.Size), but at least one, so
// that a reader is never stuck behind a batch larger than its limit (Kafka
// does the same). The first batch may start before offset: batches are
// atomic. Read returns no batches and no error when offset is outside
// [StartOffset(), LEO()).
//
// Read decodes the batches from the file, which it reads whole with
// Disk.ReadFile, so every call costs time in the file's size: it is for tests
// and tools, not for serving fetches, which the replica answers from memory.
// The batches belong to the caller and read back exactly as appended (nil and
// empty byte slices stay apart); they share one buffer that holds their own
// frames only. A frame that no longer matches the index (the file changed
// under the log) fails the log with kafka.ErrStorage.
func (l *Log) Read(offset int64, maxBytes int) ([]record.Batch, error) {
	if offset < l.StartOffset() {
		return nil, nil
	}
	i := l.search(offset)
	if i == len(l.index) {
		return nil, nil
	}
	return l.read(i, maxBytes)
}

// ReadAll decodes every batch of the log from its file, like Read from
// StartOffset() without a byte limit. It returns nil for an empty log.
func (l *Log) ReadAll() ([]record.Batch, error) {
	if len(l.index) == 0 {
		return nil, nil
	}
	return l.read(0, math.MaxInt)
}

// Batches hands over the batches OpenLog recovered, to load a replica's state
// on startup.
//
// The first call after OpenLog returns the slice OpenLog decoded, without
// copying it, and the Log drops its reference: the caller then holds the only
// copy in memory. The batches' byte slices share the buffer the file was read
// into (each capped, so that appending to one cannot overwrite another), which
// stays in memory as long as any of them does, and they read back exactly as
// appended. A TruncateTo before that call shortens the slice.
//
// Any later call, and a call after Append (which drops the recovered slice),
// decodes the file again as ReadAll does, and panics if ReadAll fails: a
// caller that can handle the error should call ReadAll instead.
func (l *Log) Batches() []record.Batch {
	if b := l.recovered; b != nil {
		l.recovered = nil
		return b
	}
	b, err := l.ReadAll()
	if err != nil {
		panic(fmt.Sprintf("storage: Log.Batches: %v", err))
	}
	return b
}

// read decodes batches from index i on, as many as fit in maxBytes but at
// least one, checking each against the index.
func (l *Log) read(i, maxBytes int) ([]record.Batch, error) {
	data, err := l.disk.ReadFile(l.name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.name, err)
	}
	// The file may be longer than the index after a failed append left a
	// partial frame; the frames the index covers must all be there.
	if int64(len(data)) < l.size() {
		return nil, l.fail("read", fmt.Errorf("%w: file has %d bytes, index covers %d",
			errIndexMismatch, len(data), l.size()))
	}
	start := l.pos(i)
	var out []record.Batch
	total := 0
	for j := i; j < len(l.index); j++ {
		pos, end := l.pos(j), l.index[j].end
		b, n, err := decodeFrame(data[pos:end])
		switch {
		case err != nil:
		case int64(n) != end-pos:
			err = fmt.Errorf("frame of %d bytes, index says %d", n, end-pos)
		case b.BaseOffset != l.base(j) || b.NextOffset() != l.index[j].next:
			err = fmt.Errorf("batch holds offsets [%d, %d), index says [%d, %d)",
				b.BaseOffset, b.NextOffset(), l.base(j), l.index[j].next)
		}
		if err != nil {
			return nil, l.fail("read", fmt.Errorf("%w: frame at byte %d: %w", errIndexMismatch, pos, err))
		}
		size := b.Size()
		if len(out) > 0 && total+size > maxBytes {
			break
		}
		out = append(out, b)
		total += size
	}
	end := l.pos(i + len(out))
	if start == 0 && end == int64(len(data)) {
		return out, nil
	}
	// The batches alias data. Decode them again from a copy of their own
	// frames, so that a short read does not pin the whole file in memory.
	frames := bytes.Clone(data[start:end])
	for k := range out {
		b, n, err := decodeFrame(frames)
		if err != nil { // cannot happen: the same bytes decoded above
			return nil, fmt.Errorf("read %s: %w", l.name, err)
		}
		out[k], frames = b, frames[n:]
	}
	return out, nil
}

// errIndexMismatch reports a log file that no longer holds the frames its
// Log's index describes: something other than the Log changed it.
var errIndexMismatch = errors.New("log file does not match its index")

// TruncateTo removes every batch that holds an offset >= offset, so that a
// batch containing offset goes whole (batches are atomic), and returns the new
// LEO, which can therefore be below offset. Truncating at or beyond LEO does
// nothing. Like Append, the truncation is durable only after Sync; until then
// a power loss can bring the removed batches back.
func (l *Log) TruncateTo(offset int64) (newLEO int64, err error) {
	if l.failed != nil {
		return l.LEO(), l.failed
	}
	i := l.search(offset)
	if i == len(l.index) {
		return l.LEO(), nil
	}
	if err := l.disk.Truncate(l.name, l.pos(i)); err != nil {
		return l.LEO(), l.fail("truncate", err)
	}
	l.index = l.index[:i]
	if l.recovered != nil {
		clear(l.recovered[i:]) // let the removed records be collected
		l.recovered = l.recovered[:i]
	}
	return l.LEO(), nil
}
