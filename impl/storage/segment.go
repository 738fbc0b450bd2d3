package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"

	"github.com/watermarkhq/watermark/impl/layout"
	"github.com/watermarkhq/watermark/impl/settings"
)

// A log is a run of segments in its partition's directory, as Kafka lays
// one out: segment i holds the frames (codec.go) of the batches from its
// base offset up to segment i+1's, in a file named by its base offset,
// zero-padded to 20 digits so that names sort as offsets do:
//
//	00000000000000000000.log    frames of offsets [0, 1234)
//	00000000000000000000.index  its sparse offset index
//	00000000000000001234.log    the active segment: appends go here
//	00000000000000001234.index
//	recovery-point              a checkpoint: see Log
//
// The sparse index has one entry per index interval of frame bytes (and
// always one for the segment's first batch, implied, not stored). An entry
// is 8 bytes, big-endian: the batch's base offset less the segment's, and
// the position of its frame in the segment file, both uint32 (a segment is
// at most 2 GiB, as in Kafka). A read seeks to the last entry at or below
// the offset it wants and decodes frames from there.
const (
	segmentSuffix  = layout.SegmentSuffix
	indexSuffix    = ".index"
	indexEntrySize = 8
)

// RecoveryPointFile is the checkpoint holding a log's recovery point.
const RecoveryPointFile = "recovery-point"

// LogStartFile is the checkpoint holding the start offset of a log reset
// to begin past its batches (Log.ResetTo) and holding none yet; a log
// with segments starts at its first segment's base.
const LogStartFile = "log-start-offset"

// legacyLogFile is the single log file of the format before segments; a
// directory that holds one is refused with a message, not misread.
const legacyLogFile = "log"

// SegmentName is the file name of the segment with base offset base in
// dir (impl/layout names it).
func SegmentName(dir string, base int64) string { return layout.SegmentName(dir, base) }

func indexName(dir string, base int64) string {
	return path.Join(dir, fmt.Sprintf("%020d%s", base, indexSuffix))
}

// parseSegmentName returns the base offset a segment file's name gives,
// and false for any other file.
func parseSegmentName(name string) (int64, bool) { return layout.ParseSegmentName(name) }

// IsSegmentFile reports whether name is a log segment's file.
func IsSegmentFile(name string) bool { return layout.IsSegmentFile(name) }

// LogConfig shapes a log's segments. The zero value of a field means
// Kafka's default.
type LogConfig struct {
	// SegmentBytes is the most a segment file holds: a batch that would
	// take the active segment past it goes to a new one
	// (log.segment.bytes). A batch bigger than it gets a segment alone.
	SegmentBytes int64
	// IndexIntervalBytes is how many frame bytes pass between two
	// entries of a segment's sparse index (log.index.interval.bytes).
	IndexIntervalBytes int64
	// RollMs starts a new segment for a batch whose largest timestamp is
	// this far past the largest of the active segment's first batch
	// (log.roll.ms; Kafka measures it by record timestamps too).
	RollMs int64
	// RetentionMs deletes a segment whose records are all this much older
	// than the time DeleteRetained is given (log.retention.ms, by record
	// timestamps as in Kafka); -1 keeps segments forever.
	RetentionMs int64
	// RetentionBytes deletes the oldest segments while the log without
	// them still holds this many bytes (log.retention.bytes); -1, Kafka's
	// default, has no limit. 0 means the default too.
	RetentionBytes int64
	// Mirror keeps a decoded copy of every batch in memory, for checkers
	// that look at whole logs after every step (the simulator's
	// invariants): Mirrored returns it. Reads still go to the files.
	Mirror bool
}

// Kafka's defaults (settings.Log).
const (
	DefaultSegmentBytes       = settings.DefaultSegmentBytes
	DefaultIndexIntervalBytes = settings.DefaultIndexIntervalBytes
	DefaultRollMs             = settings.DefaultRollMs
	DefaultRetentionMs        = settings.DefaultRetentionMs
	DefaultRetentionBytes     = settings.DefaultRetentionBytes
)

// withDefaults fills the zero fields with Kafka's defaults.
func (c LogConfig) withDefaults() LogConfig {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.RollMs == 0 {
		c.RollMs = DefaultRollMs
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = DefaultRetentionMs
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = DefaultRetentionBytes
	}
	return c
}

// Validate reports a setting out of range, naming Kafka's setting
// (settings.Log.Validate; a segment is at most settings.MaxSegmentBytes,
// since an index position is a uint32).
func (c LogConfig) Validate() error {
	return settings.Log{SegmentBytes: c.SegmentBytes, IndexIntervalBytes: c.IndexIntervalBytes, RollMs: c.RollMs,
		RetentionMs: c.RetentionMs, RetentionBytes: c.RetentionBytes}.Validate()
}

// segment is what a Log keeps in memory of one segment: a few words, and
// the sparse index of the active segment only (a read of an older one
// reads its index file), so a log's memory grows with its segment count,
// not with what they hold.
//
// Invariants (see Log for how segments join up):
//  1. base < next once the segment holds a batch; size is the file's
//     length and is 0 only for a segment not yet written.
//  2. index holds the entries of the index file, in order, for the
//     active segment; nil for the others.
type segment struct {
	base    int64
	next    int64
	size    int64
	firstTS int64 // largest timestamp of the first batch; -1 before one
	// maxTS is the largest timestamp of the segment's last batch, when
	// maxKnown: kept by appends, read once for a segment opened without
	// a scan (retention looks at it), forgotten by a cut.
	maxTS    int64
	maxKnown bool
	index    []indexEntry
	// sinceIndex counts the frame bytes appended since the last index
	// entry (or the segment's start).
	sinceIndex int64
	// dirty: appended to, truncated or created since its last sync.
	dirty bool
}

// indexEntry locates one batch: its base offset and its frame's position.
type indexEntry struct {
	offset int64
	pos    int64
}

// encodeIndexEntry is e's 8 bytes in the index file of a segment at base.
func encodeIndexEntry(dst []byte, base int64, e indexEntry) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(e.offset-base))
	return binary.BigEndian.AppendUint32(dst, uint32(e.pos))
}

var errBadIndex = errors.New("bad index")

// decodeIndex parses the index file of a segment at base whose file is
// size bytes long. A torn last entry (a power loss) is dropped; entries
// out of order or past the segment make the index useless (errBadIndex),
// and the caller scans the segment instead.
func decodeIndex(data []byte, base, size int64) ([]indexEntry, error) {
	n := len(data) / indexEntrySize
	out := make([]indexEntry, 0, n)
	prev := indexEntry{offset: base, pos: 0}
	for i := range n {
		b := data[i*indexEntrySize:]
		e := indexEntry{offset: base + int64(binary.BigEndian.Uint32(b)), pos: int64(binary.BigEndian.Uint32(b[4:]))}
		if e.offset <= prev.offset || e.pos <= prev.pos || e.pos >= size {
			return nil, fmt.Errorf("%w: entry %d (offset %d at byte %d) after offset %d at byte %d, in a segment of %d bytes",
				errBadIndex, i, e.offset, e.pos, prev.offset, prev.pos, size)
		}
		out = append(out, e)
		prev = e
	}
	return out, nil
}

// seek returns the position of the last index entry at or below offset
// (0, the segment's start, if none).
func seek(index []indexEntry, offset int64) int64 {
	lo, hi := 0, len(index)
	for lo < hi {
		m := (lo + hi) / 2
		if index[m].offset <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	return index[lo-1].pos
}
