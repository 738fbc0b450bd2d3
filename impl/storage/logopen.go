package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"slices"

	"github.com/watermarkhq/watermark/impl/record"
)

// Recovery reports what OpenLog (and Load, which reads what OpenLog
// trusted) found in a log's files and what they dropped.
type Recovery struct {
	File           string // the log's directory on the Disk
	Segments       int    // segment files after recovery
	ScannedFrom    int64  // offset the scan started at: the recovery point's segment
	ScannedBytes   int64  // bytes of the segments scanned (the rest was trusted)
	KeptBatches    int    // batches the scan kept
	KeptBytes      int64  // bytes of every segment after recovery
	LEO            int64  // log end offset after recovery
	DroppedBytes   int64  // bytes truncated or removed
	DroppedBatches int    // intact frames found by following lengths in the dropped bytes (best effort)
	Reason         string // why recovery stopped before the end of the log; empty when it did not
	Notes          []string
}

// Clean reports whether the whole log was valid.
func (r Recovery) Clean() bool { return r.DroppedBytes == 0 }

// String renders the recovery for a broker's log.
func (r Recovery) String() string {
	s := fmt.Sprintf("log %s: %d segments, %d bytes, LEO %d; scanned %d bytes from offset %d, kept %d batches",
		r.File, r.Segments, r.KeptBytes, r.LEO, r.ScannedBytes, r.ScannedFrom, r.KeptBatches)
	for _, n := range r.Notes {
		s += "; " + n
	}
	if r.Clean() {
		return s + ", clean"
	}
	return fmt.Sprintf("%s; dropped %d bytes holding %d intact batches: %s",
		s, r.DroppedBytes, r.DroppedBatches, r.Reason)
}

// Recovery returns what opening the log (and Load) found and dropped.
func (l *Log) Recovery() Recovery {
	r := l.rec
	r.Segments, r.LEO, r.KeptBytes = len(l.segs), l.LEO(), l.size()
	return r
}

// ErrOldFormat refuses a partition directory in the format before
// segments.
var ErrOldFormat = errors.New("log in the format before segments")

// OpenLog opens the log stored in dir on d, or an empty log if there is none.
//
// Recovery trusts the segments below the recovery point (see Log) and
// scans the rest, from the segment holding it: it keeps the longest valid
// prefix, stopping at the first frame that is torn (runs past the end of
// its file), has a length out of range, fails its CRC, does not decode,
// breaks a batch invariant, or does not start at the previous batch's
// NextOffset, and at a segment that does not start where the one before
// ends (a power loss while a segment rolled can keep the new segment and
// lose the old one's tail). That frame and everything after it are cut
// (the segment truncated, later segments removed) and the cut is synced,
// so the files match the log. Frames after a bad one may be intact, but
// without the bad one they would leave a gap in the offsets, and the
// replication protocol refetches them. Each scanned segment's index is
// rebuilt.
func OpenLog(d Disk, dir string, cfg LogConfig) (*Log, Recovery, error) {
	return open(d, dir, cfg, nil, false)
}

// OpenLogScan opens the log as OpenLog does, trusting the segments below
// the recovery point, and calls fn with every batch the recovery scan
// keeps, in order, holding none: a broker starting rebuilds what the
// unflushed tail changed (the leader-epoch cache) from it, and reads the
// trusted part's from its checkpoints. Recovery().ScannedFrom is the
// offset of the first batch fn saw.
func OpenLogScan(d Disk, dir string, cfg LogConfig, fn func(b *record.Batch)) (*Log, Recovery, error) {
	return open(d, dir, cfg, fn, false)
}

// OpenLogVerify opens the log as OpenLog does, but trusts nothing: it
// scans every segment, below the recovery point too, so that damage
// anywhere (a flipped bit in a synced segment) is found and cut as
// recovery cuts a torn tail, and calls fn with every batch it keeps.
func OpenLogVerify(d Disk, dir string, cfg LogConfig, fn func(b *record.Batch)) (*Log, Recovery, error) {
	return open(d, dir, cfg, fn, true)
}

func open(d Disk, dir string, cfg LogConfig, fn func(b *record.Batch), verify bool) (*Log, Recovery, error) {
	if err := cfg.Validate(); err != nil {
		return nil, Recovery{}, fmt.Errorf("open log %s: %w", dir, err)
	}
	l := &Log{disk: d, dir: dir, cfg: cfg.withDefaults()}
	l.rec.File = dir
	if _, err := d.FileSize(path.Join(dir, legacyLogFile)); err == nil {
		return nil, l.rec, fmt.Errorf("open log %s: %w (one file named %s): this version cannot read it; move the directory away, and the replica copies the partition again from its leader",
			dir, ErrOldFormat, legacyLogFile)
	}
	bases, err := l.listSegments()
	if err != nil {
		return nil, l.rec, err
	}
	rp, err := l.readOffset(RecoveryPointFile, "scanning every segment")
	if err != nil {
		return nil, l.rec, err
	}
	l.recoveryPoint = rp
	if len(bases) > 0 {
		l.start = bases[0]
		if l.ownFramed(SegmentName(dir, bases[0])) {
			return nil, l.rec, fmt.Errorf("open log %s: %w (segments framed in watermark's own batch format, before Kafka's v2 batches): this version cannot read them; move the directory away, and the replica copies the partition again from its leader",
				dir, ErrOldFormat)
		}
	}
	for _, b := range bases {
		l.segs = append(l.segs, &segment{base: b, next: b, firstTS: -1})
	}
	if len(l.segs) == 0 {
		// An empty log starts where the checkpoint written before its
		// last segment went says (a reset, a truncation or a cut).
		start, err := l.readOffset(LogStartFile, "the empty log starts at 0; replication resets it to its leader's log start")
		if err != nil {
			return nil, l.rec, err
		}
		l.start = start
		l.rec.ScannedFrom = l.start
		return l, l.Recovery(), nil
	}
	if err := l.recover(fn, verify); err != nil {
		return nil, l.rec, err
	}
	return l, l.Recovery(), nil
}

// readOffset reads the one-offset checkpoint file of the log's directory:
// 0 if there is none, and 0 with a note saying what recovery does instead
// (fallback) if it is damaged, since both checkpoints it reads are derived
// and recovery can do without them.
func (l *Log) readOffset(file, fallback string) (int64, error) {
	v, err := readOffsetCheckpoint(l.disk, l.dir, file)
	if errors.Is(err, ErrCorruptCheckpoint) {
		l.rec.Notes = append(l.rec.Notes, fmt.Sprintf("%v: %s", err, fallback))
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open log %s: %w", l.dir, err)
	}
	return v, nil
}

// ownFramed reports whether segment name starts with a frame of the
// format segments had before they held Kafka's v2 batches: a length, a
// CRC-32C of the payload, then a version byte 1. Recovery would read one
// as damage and cut the whole log, so OpenLog refuses it instead.
func (l *Log) ownFramed(name string) bool {
	head := make([]byte, record.HeaderLen)
	if n, _ := l.disk.ReadAt(name, head, 0); n < len(head) || head[16] == 2 || head[8] != 1 {
		return false
	}
	length := int64(binary.BigEndian.Uint32(head))
	if size, err := l.disk.FileSize(name); err != nil || length > maxFrameSize || 8+length > size {
		return false
	}
	payload := make([]byte, length)
	if n, _ := l.disk.ReadAt(name, payload, 8); int64(n) < length {
		return false
	}
	return crc32.Checksum(payload, castagnoli) == binary.BigEndian.Uint32(head[4:])
}

// listSegments returns the base offsets of dir's segment files, in order,
// and removes index files whose segment is gone (a crash between the two
// removals of a segment leaves one).
func (l *Log) listSegments() ([]int64, error) {
	names, err := l.disk.List(l.dir + "/")
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", l.dir, err)
	}
	var bases []int64
	var indexes []string
	for _, name := range names {
		if path.Dir(name) != l.dir {
			continue
		}
		if base, ok := parseSegmentName(name); ok {
			bases = append(bases, base)
		} else if path.Ext(name) == indexSuffix {
			indexes = append(indexes, name)
		}
	}
	slices.Sort(bases)
	for _, name := range indexes {
		if !slices.ContainsFunc(bases, func(b int64) bool { return indexName(l.dir, b) == name }) {
			if err := l.disk.Remove(name); err != nil {
				return nil, fmt.Errorf("open log %s: %w", l.dir, err)
			}
		}
	}
	return bases, nil
}

// recover trusts the segments before the recovery point's and scans the
// rest, or scans them all when verify is set, handing each batch it scans
// to fn when fn is set; see OpenLog, OpenLogScan and OpenLogVerify.
func (l *Log) recover(fn func(b *record.Batch), verify bool) error {
	from := l.segOf(l.recoveryPoint)
	if verify {
		from = 0
	}
	for i := 0; i < from; i++ {
		s := l.segs[i]
		size, err := l.disk.FileSize(SegmentName(l.dir, s.base))
		if err != nil {
			return fmt.Errorf("open log %s: %w", l.dir, err)
		}
		if size == 0 {
			from = i // nothing to trust: scan from here
			break
		}
		s.size, s.next = size, l.segs[i+1].base
	}
	l.rec.ScannedFrom = l.segs[from].base
	for i := from; i < len(l.segs); i++ {
		s := l.segs[i]
		name := SegmentName(l.dir, s.base)
		size, err := l.disk.FileSize(name)
		if err != nil {
			return fmt.Errorf("open log %s: %w", l.dir, err)
		}
		l.rec.ScannedBytes += size
		if size == 0 {
			// A crash between a segment's creation and its first write,
			// or a cut that kept nothing of it: it holds no batch.
			if err := l.removeSegment(i); err != nil {
				return err
			}
			l.rec.Notes = append(l.rec.Notes, "removed the empty segment "+path.Base(name))
			i--
			continue
		}
		if i > 0 && s.base != l.segs[i-1].next {
			// Nothing of it joins the log: end the log where the one
			// before ends.
			prev := l.segs[i-1]
			sc := scanned{end: prev.size, next: prev.next, whole: true}
			return l.cutAt(i-1, sc, fmt.Sprintf("segment %s starts at offset %d, but the log before it ends at %d",
				path.Base(name), s.base, prev.next))
		}
		sc, err := l.scan(s, fn)
		if err != nil {
			return fmt.Errorf("open log %s: %w", l.dir, err)
		}
		l.rec.KeptBatches += sc.index.n
		s.size, s.next = size, sc.next
		if sc.why != "" {
			return l.cutAt(i, sc, fmt.Sprintf("%s at byte %d: %s", name, sc.end, sc.why))
		}
		if err := l.writeIndex(s, sc.index); err != nil {
			return err
		}
		if i < len(l.segs)-1 {
			s.index = nil // only the active segment keeps its index in memory
		}
	}
	return nil
}

// removeSegment deletes segment i's files and forgets it. Before it
// removes the last one, it checkpoints where the log starts, which no
// segment's name says any more (retention.go).
func (l *Log) removeSegment(i int) error {
	s := l.segs[i]
	if len(l.segs) == 1 {
		if err := writeOffsetCheckpoint(l.disk, l.dir, LogStartFile, l.start); err != nil {
			return l.fail("write", LogStartFile, err)
		}
	}
	for _, name := range []string{indexName(l.dir, s.base), SegmentName(l.dir, s.base)} {
		if l.exists(name) {
			if err := l.disk.Remove(name); err != nil {
				return l.fail("remove", name, err)
			}
		}
	}
	l.segs = slices.Delete(l.segs, i, i+1)
	return nil
}
