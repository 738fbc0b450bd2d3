package storage

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/watermarkhq/watermark/impl/record"
)

// indexBuilder collects a segment's sparse index as its frames go by, in
// order, during a scan.
type indexBuilder struct {
	interval int64
	entries  []indexEntry
	since    int64 // frame bytes since the last entry
	firstTS  int64
	maxTS    int64
	n        int
}

func (ib *indexBuilder) add(f frame) {
	ts := f.batch.MaxTimestamp()
	if ib.n == 0 {
		ib.firstTS, ib.maxTS = ts, ts
	}
	ib.maxTS = max(ib.maxTS, ts)
	if f.pos > 0 && ib.since >= ib.interval {
		ib.entries = append(ib.entries, indexEntry{offset: f.batch.BaseOffset, pos: f.pos})
		ib.since = 0
	}
	ib.since += f.size
	ib.n++
}

// scanned is where a scan of a segment stopped.
type scanned struct {
	index indexBuilder
	end   int64  // the byte after the last valid frame
	next  int64  // the offset after the last valid batch (the segment's base if none)
	why   string // why it stopped before the file's end ("" if it did not)
	// whole: the segment is kept as it is, index and all (the cut is at
	// its end); index is then empty.
	whole bool
}

// scan reads segment s's file from its start, as far as its frames are
// valid and contiguous from its base, calling fn (if set) with each batch.
// The file's size is taken from the Disk, not from s.
func (l *Log) scan(s *segment, fn func(b *record.Batch)) (scanned, error) {
	name := SegmentName(l.dir, s.base)
	size, err := l.disk.FileSize(name)
	if err != nil {
		return scanned{}, fmt.Errorf("read %s: %w", name, err)
	}
	probe := &segment{base: s.base, next: math.MaxInt64, size: size}
	fr := l.frames(probe, 0)
	fr.chunk = scanChunk
	out := scanned{index: indexBuilder{interval: l.cfg.IndexIntervalBytes, firstTS: -1}, next: s.base}
	for {
		f, ok, why, err := fr.next()
		if err != nil {
			return out, err
		}
		if !ok {
			out.why = why
			return out, nil
		}
		out.index.add(f)
		out.end, out.next = f.pos+f.size, f.batch.NextOffset()
		if fn != nil {
			fn(&f.batch)
		}
	}
}

// Scan reads every batch of the log in order, calling fn with each, to
// build a replica's state on startup without holding the batches. It
// treats damage as recovery does: OpenLog trusted the segments below the
// recovery point without reading them, so a frame there that fails its
// CRC or breaks the offsets is found here, and the log is cut before it
// (the segment truncated and synced, the later ones removed), as if
// recovery had stopped there. Recovery then reports it.
func (l *Log) Scan(fn func(b *record.Batch)) error {
	for i := 0; i < len(l.segs); i++ {
		s := l.segs[i]
		if i > 0 && s.base != l.segs[i-1].next {
			return fmt.Errorf("scan %s: %w: segment %s starts at offset %d, the one before ends at %d",
				l.dir, errIndexMismatch, SegmentName(l.dir, s.base), s.base, l.segs[i-1].next)
		}
		sc, err := l.scan(s, fn)
		if err != nil {
			return err
		}
		if sc.why == "" && sc.end == s.size && sc.next == s.next {
			continue
		}
		why := sc.why
		if why == "" {
			why = fmt.Sprintf("segment ends at offset %d (byte %d), want %d (byte %d)", sc.next, sc.end, s.next, s.size)
		}
		return l.cutAt(i, sc, fmt.Sprintf("%s at byte %d: %s", SegmentName(l.dir, s.base), sc.end, why))
	}
	return nil
}

// cutAt ends the log where the scan sc of segment i stopped: recovery's
// cut. The segments after i go; segment i is truncated, its index rebuilt
// from the scan (it is removed if it keeps no batch); the cut is synced
// and the recovery point lowered to it; the Recovery report counts what
// went.
func (l *Log) cutAt(i int, sc scanned, reason string) error {
	l.mirrored, l.mirror = false, nil
	l.tail.reset()
	s := l.segs[i]
	name := SegmentName(l.dir, s.base)
	size, err := l.disk.FileSize(name)
	if err != nil {
		return fmt.Errorf("recover %s: %w", name, err)
	}
	dropped := size - sc.end
	intact := l.countIntact(name, sc.end, size)
	for _, later := range l.segs[i+1:] {
		n := SegmentName(l.dir, later.base)
		if sz, err := l.disk.FileSize(n); err == nil {
			dropped += sz
			intact += l.countIntact(n, 0, sz)
		}
	}
	if sc.next < l.recoveryPoint {
		if err := l.setRecoveryPoint(sc.next); err != nil {
			return err
		}
	}
	if err := l.dropFrom(i + 1); err != nil {
		return err
	}
	switch {
	case sc.whole:
		if err := l.activate(s); err != nil {
			return err
		}
	case sc.end == 0:
		if err := l.dropFrom(i); err != nil {
			return err
		}
		if len(l.segs) > 0 {
			if err := l.activate(l.active()); err != nil {
				return err
			}
		}
	default:
		if sc.end < size {
			if err := l.disk.Truncate(name, sc.end); err != nil {
				return l.fail("recover", name, err)
			}
		}
		s.size, s.next = sc.end, sc.next
		if err := l.writeIndex(s, sc.index); err != nil {
			return err
		}
	}
	if len(l.segs) > 0 {
		if err := l.syncSegment(l.active()); err != nil {
			return err
		}
	}
	if l.rec.Reason == "" {
		l.rec.Reason = reason
	}
	l.rec.DroppedBytes += dropped
	l.rec.DroppedBatches += intact
	return nil
}

// countIntact counts the intact frames in bytes [from, to) of a file,
// following lengths as far as they go (best effort: 0 if it cannot read).
func (l *Log) countIntact(name string, from, to int64) int {
	if to <= from {
		return 0
	}
	buf := make([]byte, to-from)
	if n, err := l.disk.ReadAt(name, buf, from); err != nil && !errors.Is(err, io.EOF) || int64(n) < to-from {
		return 0
	}
	return countIntactFrames(buf)
}

// writeIndex rewrites the index file of s from a scan of all of it, and
// makes s the active segment: its index in memory, its roll clock from its
// first batch.
func (l *Log) writeIndex(s *segment, ib indexBuilder) error {
	name := indexName(l.dir, s.base)
	if l.exists(name) {
		if err := l.disk.Remove(name); err != nil {
			return l.fail("rebuild", name, err)
		}
	}
	var entries []byte
	for _, e := range ib.entries {
		entries = encodeIndexEntry(entries, s.base, e)
	}
	if len(entries) > 0 {
		if err := l.disk.Append(name, entries); err != nil {
			return l.fail("rebuild", name, err)
		}
	}
	s.index = append([]indexEntry{}, ib.entries...)
	s.sinceIndex, s.firstTS, s.dirty = ib.since, ib.firstTS, true
	s.maxTS, s.maxKnown = ib.maxTS, ib.n > 0
	return nil
}
