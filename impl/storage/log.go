package storage

import (
	"errors"
	"fmt"
	"sort"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// LogFile is the name of a log's first segment file inside a partition's
// directory, while the log still starts at offset 0.
var LogFile = SegmentName("", 0)

// ErrNonContiguous is returned by Log.Append for a batch whose base offset is
// not the log end offset: the log has no gaps and no overlaps.
var ErrNonContiguous = errors.New("batch not contiguous with the log end offset")

// Every write to a Log after a write, truncate or sync of its files failed
// returns kafka.ErrStorage (KAFKA_STORAGE_ERROR): a file may then hold a
// partial frame or differ from what the Log keeps of it, so appending after
// it would bury good batches behind garbage. Reopen the log (OpenLog
// recovers it) to go on.

// Log is a partition's log of record batches, kept on a Disk as segments
// (segment.go).
//
// The Log does not keep the batches in memory: reads decode them from the
// segment files. It keeps a few words per segment and the active segment's
// sparse index.
//
// The recovery point is a checkpoint of an offset below which every
// segment is synced: all segments before the one holding it are durable
// and unchanged since. OpenLog trusts those and scans only from the
// segment holding it (Kafka's recovery-point-offset-checkpoint, per log).
// Sync moves it to the LEO when that is in a later segment, so it is
// written once per roll, not per sync; a truncation below it lowers it
// first.
//
// Invariants:
//  1. segs[0].base == start when segs is not empty; segs[i+1].base ==
//     segs[i].next; every segment holds at least one batch.
//  2. Every segment file holds exactly its frames, contiguous in offsets.
//  3. Every segment before segOf(recoveryPoint) is durable.
//
// A Log is not safe for concurrent use.
type Log struct {
	disk          Disk
	dir           string
	cfg           LogConfig
	segs          []*segment
	start         int64 // the log start offset
	recoveryPoint int64 // as the checkpoint holds it
	rec           Recovery
	failed        error // sticky I/O failure, see kafka.ErrStorage
	// mirror holds every batch, decoded, when the config asks for it and
	// mirrored says it is current (see Mirrored).
	mirror   []record.Batch
	mirrored bool
	tail     tail // the newest frames, for reads near the LEO
}

// Mirrored returns every batch of the log from the in-memory copy a
// LogConfig with Mirror keeps (false without one). The batches are
// shared: callers must not modify them.
func (l *Log) Mirrored() ([]record.Batch, bool) {
	if !l.cfg.Mirror || l.failed != nil {
		return nil, false
	}
	if !l.mirrored {
		all, err := l.ReadAll()
		if err != nil {
			return nil, false
		}
		l.mirror, l.mirrored = all, true
	}
	return l.mirror, true
}

// File returns the name of the active segment's file: the one the next
// append goes to, unless it rolls.
func (l *Log) File() string {
	if len(l.segs) == 0 {
		return SegmentName(l.dir, l.LEO())
	}
	return SegmentName(l.dir, l.active().base)
}

// Segments returns the names of the log's segment files, oldest first.
func (l *Log) Segments() []string {
	out := make([]string, len(l.segs))
	for i, s := range l.segs {
		out[i] = SegmentName(l.dir, s.base)
	}
	return out
}

// LEO returns the log end offset: the offset the next appended batch gets.
func (l *Log) LEO() int64 {
	if len(l.segs) == 0 {
		return l.start
	}
	return l.active().next
}

// StartOffset returns the offset of the log's first record.
func (l *Log) StartOffset() int64 { return l.start }

// RecoveryPoint returns the offset the log's recovery scan starts at, as
// its checkpoint holds it.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint }

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// segOf is the index of the segment holding offset: the last whose base is
// at or below it (0 when none is).
func (l *Log) segOf(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// fail makes err sticky; see kafka.ErrStorage.
func (l *Log) fail(op, name string, err error) error {
	l.failed = fmt.Errorf("%w: %s %s: %w", kafka.ErrStorage, op, name, err)
	return l.failed
}

// Append writes b at the end of the log, in a new segment when the active
// one is full by size (SegmentBytes) or by age (RollMs). b.BaseOffset must
// equal LEO(). The write reaches the page cache only; call Sync to make it
// durable.
//
// Append does not retain b: it encodes b into the file and keeps only its
// offsets and position, so the caller may modify or reuse b when it returns.
func (l *Log) Append(b record.Batch) error {
	if l.failed != nil {
		return l.failed
	}
	if err := validateBatch(&b); err != nil {
		return fmt.Errorf("append to %s: %w", l.File(), err)
	}
	if leo := l.LEO(); b.BaseOffset != leo {
		return fmt.Errorf("append to %s: %w: base offset %d, log end offset %d",
			l.File(), ErrNonContiguous, b.BaseOffset, leo)
	}
	// Encoded into a buffer of its own, which the tail keeps once it is
	// written (Disk.Append does not retain it).
	frame, err := appendFrame(make([]byte, 0, b.Size()), &b)
	if err != nil {
		return fmt.Errorf("append to %s: %w", l.File(), err)
	}
	ts := b.MaxTimestamp()
	if len(l.segs) == 0 || l.full(l.active(), int64(len(frame)), ts) {
		l.roll()
	}
	s := l.active()
	if s.size > 0 && s.sinceIndex >= l.cfg.IndexIntervalBytes {
		e := indexEntry{offset: b.BaseOffset, pos: s.size}
		if err := l.disk.Append(indexName(l.dir, s.base), encodeIndexEntry(nil, s.base, e)); err != nil {
			return l.fail("append to", indexName(l.dir, s.base), err)
		}
		s.index = append(s.index, e)
		s.sinceIndex = 0
	}
	name := SegmentName(l.dir, s.base)
	if err := l.disk.Append(name, frame); err != nil {
		return l.fail("append to", name, err)
	}
	if s.size == 0 {
		s.firstTS, s.maxTS, s.maxKnown = ts, ts, true
	}
	s.maxTS = max(s.maxTS, ts)
	s.size += int64(len(frame))
	s.sinceIndex += int64(len(frame))
	s.next = b.NextOffset()
	s.dirty = true
	l.tail.add(record.Encoded(frame))
	if l.mirrored {
		// The mirror holds the batch as ReadAll would return it: its
		// stored bytes (shared with the tail: never written) and its
		// records decoded from them.
		m, _, err := decodeFrame(frame)
		if err == nil {
			err = decodeRecords(&m)
		}
		if err != nil {
			return l.fail("append to", name, err)
		}
		l.mirror = append(l.mirror, m)
	}
	return nil
}

// full reports whether a frame of n bytes whose batch's largest timestamp
// is ts must go to a new segment.
func (l *Log) full(s *segment, n, ts int64) bool {
	if s.size == 0 {
		return false
	}
	return s.size+n > l.cfg.SegmentBytes || (s.firstTS >= 0 && ts-s.firstTS >= l.cfg.RollMs)
}

// roll starts a new active segment at the LEO. Its file appears with its
// first append; the segment before keeps its index on disk only.
func (l *Log) roll() {
	if len(l.segs) > 0 {
		l.active().index = nil
	}
	leo := l.LEO()
	l.segs = append(l.segs, &segment{base: leo, next: leo, firstTS: -1})
}

// Sync makes every append and truncation so far durable, and then moves
// the recovery point to the LEO if that is in a later segment than the
// checkpoint says.
func (l *Log) Sync() error {
	if l.failed != nil {
		return l.failed
	}
	for _, s := range l.segs {
		if !s.dirty {
			continue
		}
		if err := l.syncSegment(s); err != nil {
			// After a failed fsync the kernel may have dropped the dirty
			// pages, so a retry that succeeds proves nothing.
			return err
		}
	}
	if leo := l.LEO(); len(l.segs) > 0 && l.segOf(leo) != l.segOf(l.recoveryPoint) {
		return l.setRecoveryPoint(leo)
	}
	return nil
}

// Flush makes the whole log durable and moves the recovery point to the
// LEO, whatever segment that is in: a clean shutdown's flush (Kafka's
// LogManager.shutdown flushes every log and checkpoints its recovery
// point at the log end), after which nothing in the log is a torn write.
func (l *Log) Flush() error {
	if err := l.Sync(); err != nil {
		return err
	}
	if leo := l.LEO(); leo != l.recoveryPoint {
		return l.setRecoveryPoint(leo)
	}
	return nil
}

// SyncRolled makes every segment before the active one durable and moves
// the recovery point to the active segment's base: what Kafka does in the
// background after each roll (it flushes the segment it rolled, and
// checkpoints recovery points every log.flush.offset.checkpoint.interval.ms),
// so that a restart scans little more than the active segment although
// the log is never synced on a timer.
func (l *Log) SyncRolled() error {
	if l.failed != nil {
		return l.failed
	}
	if len(l.segs) < 2 {
		return nil
	}
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.dirty {
			if err := l.syncSegment(s); err != nil {
				return err
			}
		}
	}
	if base := l.active().base; base > l.recoveryPoint {
		return l.setRecoveryPoint(base)
	}
	return nil
}

func (l *Log) syncSegment(s *segment) error {
	name := SegmentName(l.dir, s.base)
	if err := l.disk.Sync(name); err != nil {
		return l.fail("sync", name, err)
	}
	if idx := indexName(l.dir, s.base); l.exists(idx) {
		if err := l.disk.Sync(idx); err != nil {
			return l.fail("sync", idx, err)
		}
	}
	s.dirty = false
	return nil
}

// exists reports whether the Disk holds name.
func (l *Log) exists(name string) bool {
	_, err := l.disk.FileSize(name)
	return err == nil
}

// setRecoveryPoint writes the recovery point checkpoint.
func (l *Log) setRecoveryPoint(offset int64) error {
	if err := writeOffsetCheckpoint(l.disk, l.dir, RecoveryPointFile, offset); err != nil {
		return l.fail("write", RecoveryPointFile, err)
	}
	l.recoveryPoint = offset
	return nil
}

// TruncateTo removes every batch that holds an offset >= offset, so that a
// batch containing offset goes whole (batches are atomic), and returns the new
// LEO, which can therefore be below offset. Truncating at or beyond LEO does
// nothing. Segments past the cut are removed (durably, at once); the cut
// within a segment, like an append, is durable only after Sync, and until
// then a power loss can bring the removed batches of that segment back.
func (l *Log) TruncateTo(offset int64) (newLEO int64, err error) {
	if l.failed != nil {
		return l.LEO(), l.failed
	}
	if offset >= l.LEO() {
		return l.LEO(), nil
	}
	l.mirrored, l.mirror = false, nil
	defer func() { l.tail.cut(l.LEO()) }()
	i, pos, cut := 0, int64(0), l.start
	if offset > l.start {
		i = l.segOf(offset)
		if pos, cut, err = l.batchAt(i, offset); err != nil {
			return l.LEO(), err
		}
	}
	if cut < l.recoveryPoint {
		if err := l.setRecoveryPoint(cut); err != nil {
			return l.LEO(), err
		}
	}
	wasActive := i == len(l.segs)-1
	if err := l.dropFrom(i + 1); err != nil {
		return l.LEO(), err
	}
	if pos == 0 {
		if err := l.dropFrom(i); err != nil {
			return l.LEO(), err
		}
		wasActive = false
	}
	if len(l.segs) == 0 {
		return l.LEO(), nil
	}
	if !wasActive {
		if err := l.activate(l.active()); err != nil {
			return l.LEO(), err
		}
	}
	if pos > 0 {
		if err := l.shorten(i, pos, cut); err != nil {
			return l.LEO(), err
		}
	}
	return l.LEO(), nil
}

// dropFrom removes segments i and after, newest first, so that what a
// crash leaves is still a prefix of the log. The caller activates the
// segment that is then the last.
func (l *Log) dropFrom(i int) error {
	for len(l.segs) > i {
		if err := l.removeSegment(len(l.segs) - 1); err != nil {
			return err
		}
	}
	return nil
}

// shorten cuts segment i, the last and active one, at byte pos, where the
// batch at offset next starts.
func (l *Log) shorten(i int, pos, next int64) error {
	s := l.segs[i]
	name := SegmentName(l.dir, s.base)
	if err := l.disk.Truncate(name, pos); err != nil {
		return l.fail("truncate", name, err)
	}
	keep := 0
	for keep < len(s.index) && s.index[keep].pos < pos {
		keep++
	}
	if keep < len(s.index) {
		idx := indexName(l.dir, s.base)
		if err := l.disk.Truncate(idx, int64(keep)*indexEntrySize); err != nil {
			return l.fail("truncate", idx, err)
		}
		s.index = s.index[:keep]
	}
	s.size, s.next, s.dirty = pos, next, true
	s.maxKnown = false
	s.sinceIndex = pos
	if keep > 0 {
		s.sinceIndex = pos - s.index[keep-1].pos
	}
	return nil
}

// activate loads the index of s, which has just become the active segment
// again, and the timestamp its rolling is measured from.
func (l *Log) activate(s *segment) error {
	index, err := l.loadIndex(s)
	if err != nil {
		return err
	}
	s.index = index
	s.sinceIndex = s.size
	if len(index) > 0 {
		s.sinceIndex = s.size - index[len(index)-1].pos
	}
	s.firstTS = l.firstTimestamp(s)
	s.maxKnown = false
	return nil
}

// firstTimestamp is the largest timestamp of s's first batch, read from
// its header, or -1 if the header is not there: a segment OpenLog trusted
// without reading can be damaged, and Load, not this, is where that is
// found and handled.
func (l *Log) firstTimestamp(s *segment) int64 {
	head := make([]byte, record.HeaderLen)
	if n, _ := l.disk.ReadAt(SegmentName(l.dir, s.base), head, 0); n < len(head) {
		return -1
	}
	if n, err := record.WireLen(head); err != nil || n > maxFrameSize || int64(n) > s.size {
		return -1
	}
	b := record.Batch{Wire: head}
	return b.MaxTimestamp()
}
