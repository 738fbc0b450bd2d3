// Package layout names the files a broker keeps on its disk: the
// directory of each partition it hosts ("p/<topic>/<partition>") and, in
// it, its log's segment files, named by their base offset as Kafka names
// them (impl/storage documents the rest of a log's files).
//
// It is a leaf of its own because two sides need the same names: the
// broker and its storage, which write the files, and a harness that
// damages them on purpose from outside (conformance/cluster flips bytes in
// a stopped broker's oldest segment), which must not compile the broker
// to find them. It imports only impl/kafka.
package layout

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// PartitionsRoot is the directory that holds every partition's.
const PartitionsRoot = "p/"

// PartitionDir is tp's directory: "p/<topic>/<partition>".
func PartitionDir(tp kafka.TopicPartition) string {
	return fmt.Sprintf("%s%s/%d", PartitionsRoot, tp.Topic, tp.Partition)
}

// SegmentSuffix ends the name of a segment file.
const SegmentSuffix = ".log"

// SegmentName is the file name of the segment with base offset base in
// dir: the offset zero-padded to 20 digits, so that names sort as offsets
// do.
func SegmentName(dir string, base int64) string {
	return path.Join(dir, fmt.Sprintf("%020d%s", base, SegmentSuffix))
}

// ParseSegmentName returns the base offset a segment file's name gives,
// and false for any other file.
func ParseSegmentName(name string) (int64, bool) {
	stem, ok := strings.CutSuffix(path.Base(name), SegmentSuffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	return base, err == nil && base >= 0
}

// IsSegmentFile reports whether name is a log segment's file.
func IsSegmentFile(name string) bool {
	_, ok := ParseSegmentName(name)
	return ok
}

// LogFile names the first segment of tp's log on a broker's disk (a
// storage.Disk name; on a real disk, relative to the data directory), for
// harnesses that damage it on purpose.
func LogFile(tp kafka.TopicPartition) string {
	return PartitionDir(tp) + "/" + SegmentName("", 0)
}

// FirstSegment names the oldest segment of tp's log among names (Disk
// names, as Disk.List gives them), or LogFile(tp) when they hold none:
// retention deletes a log's first segments, so a harness that damages
// synced bytes looks for the oldest one left.
func FirstSegment(tp kafka.TopicPartition, names []string) string {
	dir, first := PartitionDir(tp), ""
	for _, n := range names {
		if path.Dir(n) == dir && IsSegmentFile(n) && (first == "" || n < first) {
			first = n // names are zero-padded offsets: in order as strings
		}
	}
	if first == "" {
		return LogFile(tp)
	}
	return first
}
