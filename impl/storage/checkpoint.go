package storage

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// HWFile is the name of the high-watermark checkpoint in a partition's directory.
const HWFile = "hw-checkpoint"

// EpochFile is the name of the leader-epoch checkpoint in a partition's
// directory (Kafka's name for it).
const EpochFile = "leader-epoch-checkpoint"

// ErrCorruptCheckpoint is returned when a checkpoint file exists but cannot be
// trusted: wrong header or version, bad CRC, or contents that break the
// invariants of what it stores. Unlike a torn log tail there is nothing to
// recover, because checkpoints are written atomically: corruption means the
// disk or someone else damaged the file, and a broker must not guess.
var ErrCorruptCheckpoint = errors.New("corrupt checkpoint")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpointVersion is the format version of every checkpoint file.
const checkpointVersion = 1

// Checkpoints are small text files, readable with cat when a test fails:
//
//	watermark <kind> v1
//	<body lines>
//	crc32c <8 lowercase hex digits>
//
// The CRC-32C (Castagnoli) covers every byte before the crc32c line.
func encodeCheckpoint(kind string, body []string) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, "watermark %s v%d\n", kind, checkpointVersion)
	for _, line := range body {
		sb.WriteString(line)
		sb.WriteByte('\n')
	}
	covered := sb.String()
	fmt.Fprintf(&sb, "crc32c %08x\n", crc32.Checksum([]byte(covered), castagnoli))
	return []byte(sb.String())
}

// decodeCheckpoint checks a checkpoint's CRC and header and returns its body
// lines.
func decodeCheckpoint(name, kind string, data []byte) ([]string, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("read %s: %w: %s", name, ErrCorruptCheckpoint, fmt.Sprintf(format, args...))
	}
	text, ok := strings.CutSuffix(string(data), "\n")
	if !ok {
		return nil, corrupt("missing final newline")
	}
	i := strings.LastIndexByte(text, '\n')
	if i < 0 {
		return nil, corrupt("too short")
	}
	covered, crcLine := text[:i+1], text[i+1:]
	if want := fmt.Sprintf("crc32c %08x", crc32.Checksum([]byte(covered), castagnoli)); crcLine != want {
		return nil, corrupt("checksum line %q, want %q", crcLine, want)
	}
	lines := strings.Split(strings.TrimSuffix(covered, "\n"), "\n")
	if want := fmt.Sprintf("watermark %s v%d", kind, checkpointVersion); lines[0] != want {
		return nil, corrupt("header %q, want %q", lines[0], want)
	}
	return lines[1:], nil
}

// WriteHW durably and atomically stores the high watermark of the partition
// in dir.
func WriteHW(d Disk, dir string, hw int64) error {
	return writeOffsetCheckpoint(d, dir, HWFile, hw)
}

// ReadHW returns the high watermark checkpointed in dir, or 0 if there is no
// checkpoint yet (a new replica has committed nothing).
func ReadHW(d Disk, dir string) (int64, error) {
	return readOffsetCheckpoint(d, dir, HWFile)
}

// ReadHWCheckpoint is ReadHW that also says whether there was a
// checkpoint at all: a replica with none has committed nothing it knows
// of, or lost the file, and its loader must not take "none" for "0".
func ReadHWCheckpoint(d Disk, dir string) (hw int64, found bool, err error) {
	if _, err := d.FileSize(path.Join(dir, HWFile)); errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	hw, err = readOffsetCheckpoint(d, dir, HWFile)
	return hw, err == nil, err
}

// offsetKinds names the checkpoint kind of each one-offset checkpoint file.
var offsetKinds = map[string]string{HWFile: "hw", RecoveryPointFile: "recovery-point", LogStartFile: "log-start-offset"}

// writeOffsetCheckpoint durably and atomically stores one offset in the
// checkpoint file of dir.
func writeOffsetCheckpoint(d Disk, dir, file string, offset int64) error {
	name := path.Join(dir, file)
	if offset < 0 {
		return fmt.Errorf("write %s: negative offset %d", name, offset)
	}
	if err := d.WriteFileAtomic(name, encodeCheckpoint(offsetKinds[file], []string{strconv.FormatInt(offset, 10)})); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// readOffsetCheckpoint returns the offset the checkpoint file of dir
// holds, or 0 if there is none.
func readOffsetCheckpoint(d Disk, dir, file string) (int64, error) {
	name := path.Join(dir, file)
	data, err := d.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	body, err := decodeCheckpoint(name, offsetKinds[file], data)
	if err != nil {
		return 0, err
	}
	if len(body) != 1 {
		return 0, fmt.Errorf("read %s: %w: %d body lines, want 1", name, ErrCorruptCheckpoint, len(body))
	}
	v, err := strconv.ParseInt(body[0], 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("read %s: %w: offset %q", name, ErrCorruptCheckpoint, body[0])
	}
	return v, nil
}

// WriteEpochCache durably and atomically stores the leader-epoch cache of the
// partition in dir. The body is the entry count, then "epoch startOffset" per
// entry, oldest first, as in Kafka's leader-epoch-checkpoint.
func WriteEpochCache(d Disk, dir string, c EpochCache) error {
	name := path.Join(dir, EpochFile)
	entries := c.Entries()
	body := make([]string, 0, 1+len(entries))
	body = append(body, strconv.Itoa(len(entries)))
	for _, e := range entries {
		body = append(body, fmt.Sprintf("%d %d", e.Epoch, e.StartOffset))
	}
	if err := d.WriteFileAtomic(name, encodeCheckpoint("leader-epoch", body)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// ReadEpochCache returns the leader-epoch cache checkpointed in dir, or an
// empty cache if there is no checkpoint yet.
func ReadEpochCache(d Disk, dir string) (EpochCache, error) {
	name := path.Join(dir, EpochFile)
	data, err := d.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return EpochCache{}, nil
	}
	if err != nil {
		return EpochCache{}, fmt.Errorf("read %s: %w", name, err)
	}
	body, err := decodeCheckpoint(name, "leader-epoch", data)
	if err != nil {
		return EpochCache{}, err
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("read %s: %w: %s", name, ErrCorruptCheckpoint, fmt.Sprintf(format, args...))
	}
	if len(body) == 0 {
		return EpochCache{}, corrupt("missing entry count")
	}
	n, err := strconv.Atoi(body[0])
	if err != nil || n != len(body)-1 {
		return EpochCache{}, corrupt("entry count %q with %d entry lines", body[0], len(body)-1)
	}
	entries := make([]EpochEntry, n)
	for i, line := range body[1:] {
		epochText, startText, ok := strings.Cut(line, " ")
		epoch, err1 := strconv.ParseInt(epochText, 10, 32)
		start, err2 := strconv.ParseInt(startText, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return EpochCache{}, corrupt("entry %d: %q", i, line)
		}
		entries[i] = EpochEntry{Epoch: int32(epoch), StartOffset: start}
	}
	c, err := NewEpochCache(entries)
	if err != nil {
		return EpochCache{}, corrupt("%v", err)
	}
	return c, nil
}

// ProducerSnapshotFile is the name of the producer-state snapshot in a
// partition's directory.
const ProducerSnapshotFile = "producer-snapshot"

// WriteProducerSnapshot durably and atomically stores a producer-state
// snapshot, one line per line of body (the caller's encoding; lines must not
// contain newlines). Storage does not interpret it: the partition package
// owns the producer state, and storage must not import it.
func WriteProducerSnapshot(d Disk, dir string, body []string) error {
	name := path.Join(dir, ProducerSnapshotFile)
	for i, l := range body {
		if strings.ContainsRune(l, '\n') {
			return fmt.Errorf("write %s: line %d holds a newline", name, i)
		}
	}
	if err := d.WriteFileAtomic(name, encodeCheckpoint("producer-snapshot", body)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// ReadProducerSnapshot returns the stored snapshot's lines, or ok=false when
// there is none.
func ReadProducerSnapshot(d Disk, dir string) (body []string, ok bool, err error) {
	name := path.Join(dir, ProducerSnapshotFile)
	data, err := d.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", name, err)
	}
	lines, err := decodeCheckpoint(name, "producer-snapshot", data)
	if err != nil {
		return nil, false, err
	}
	return lines, true, nil
}

// RemoveProducerSnapshot deletes the snapshot, if any (after a truncation
// below it, it describes batches the log no longer holds).
func RemoveProducerSnapshot(d Disk, dir string) error {
	name := path.Join(dir, ProducerSnapshotFile)
	if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}
