package storage

import (
	"errors"
	"fmt"
	"io"

	"github.com/watermarkhq/watermark/impl/record"
)

// Retention. A log lets its oldest segments go, whole, as Kafka's
// log.retention.ms and log.retention.bytes do; its start offset is then
// the first remaining segment's base. A reset (ResetTo) empties a log and
// starts it at a given offset, where a follower that fell behind its
// leader's log start begins again (Kafka's truncateFullyAndStartAt).
//
// Deletion goes oldest first and each removal is durable, so a crash at
// any point leaves a log that is a suffix of the one before: a log start
// offset that moved less far, never a gap. No checkpoint is needed for
// it, but for an empty log, which has no segment to name its start: the
// log-start-offset checkpoint holds it, written before the last segment
// goes (by a reset, a truncation or a recovery cut) and ignored while any
// segment is left.

// DeleteRetained deletes the oldest segments retention lets go and
// returns how many it deleted. A segment goes when it is not the active
// one, every offset in it is below limit (the caller's high watermark:
// only committed records are deleted, as in Kafka), and either its
// largest record timestamp is RetentionMs or more before nowMs, or the
// log without it still holds RetentionBytes or more.
func (l *Log) DeleteRetained(nowMs, limit int64) (int, error) {
	if l.failed != nil {
		return 0, l.failed
	}
	deleted := 0
	size := l.size()
	for len(l.segs) > 1 && l.segs[0].next <= limit {
		s := l.segs[0]
		bySize := l.cfg.RetentionBytes >= 0 && size-s.size >= l.cfg.RetentionBytes
		byTime := false
		if !bySize && l.cfg.RetentionMs >= 0 {
			ts, err := l.largestTimestamp(s)
			if err != nil {
				return deleted, err
			}
			byTime = nowMs-ts >= l.cfg.RetentionMs
		}
		if !bySize && !byTime {
			break
		}
		if err := l.removeSegment(0); err != nil {
			return deleted, err
		}
		size -= s.size
		deleted++
		l.start = l.segs[0].base
	}
	if deleted > 0 && l.mirrored {
		l.mirror = l.mirror[record.Search(l.mirror, l.start):]
	}
	return deleted, nil
}

// largestTimestamp is the largest record timestamp in segment s: known
// from its appends or its scan at open, else read once from its batches'
// headers (Kafka keeps it in the time index).
func (l *Log) largestTimestamp(s *segment) (int64, error) {
	if s.maxKnown {
		return s.maxTS, nil
	}
	name := SegmentName(l.dir, s.base)
	head := make([]byte, record.HeaderLen)
	maxTS := int64(-1)
	for pos := int64(0); pos < s.size; {
		n, err := l.disk.ReadAt(name, head, pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, l.fail("read", name, err)
		}
		size, werr := record.WireLen(head[:n])
		if n < len(head) || werr != nil || size < record.HeaderLen || pos+int64(size) > s.size {
			return 0, l.fail("read", name, fmt.Errorf("%w: frame at byte %d", errIndexMismatch, pos))
		}
		b := record.Batch{Wire: head}
		maxTS = max(maxTS, b.MaxTimestamp())
		pos += int64(size)
	}
	s.maxTS, s.maxKnown = maxTS, true
	return maxTS, nil
}

// ResetTo empties the log and starts it at offset: the next batch
// appended must have that base offset. The log-start-offset checkpoint
// is written first, then the segments go durably, newest first.
func (l *Log) ResetTo(offset int64) error {
	if l.failed != nil {
		return l.failed
	}
	if offset < 0 {
		return fmt.Errorf("reset %s: negative offset %d", l.dir, offset)
	}
	l.mirrored, l.mirror = false, nil
	l.tail.reset()
	// The checkpoint first: it is ignored while a segment is left, so a
	// crash mid-way leaves the old log, or the new empty one.
	if err := writeOffsetCheckpoint(l.disk, l.dir, LogStartFile, offset); err != nil {
		return l.fail("write", LogStartFile, err)
	}
	l.start = offset
	if err := l.dropFrom(0); err != nil {
		return err
	}
	return l.setRecoveryPoint(offset)
}
