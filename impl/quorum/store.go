package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"

	"github.com/watermarkhq/watermark/impl/storage"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The files of a controller's metadata log, in its data directory. The
// names follow Kafka's: KRaft keeps its log in the partition directory
// __cluster_metadata-0.
const (
	logDir        = "__cluster_metadata-0/"
	logFile       = logDir + "raft.log"
	hardStateFile = logDir + "hardstate"
	snapshotFile  = logDir + "snapshot"
)

// frameHeader is each log frame's header: the length of the entry that
// follows and its CRC-32C.
const frameHeader = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is a metadata log the store cannot read.
var ErrCorrupt = errors.New("corrupt metadata log")

// store is etcd raft's Storage on a storage.Disk, so that a controller's
// log lives on the simulator's disk as a broker's does, and a power loss
// takes what was not synced. raft.MemoryStorage holds what raft reads;
// every write goes to the disk first, synced, as raft's Ready demands
// (entries and HardState durable before any message is sent).
//
// On the disk: the snapshot and the HardState, each replaced atomically,
// and the entries after the snapshot as frames appended to one file. A
// frame is the entry's length, its CRC-32C, then the entry (protobuf).
// Opening stops at the first frame that is short or fails its CRC (an
// append a crash tore before its sync) and cuts the file there.
//
// Why not etcd's own WAL: it writes to the operating system's files
// directly, so the simulator's disk (and its power loss) could not hold
// it, and it would bring in the etcd server module.
type store struct {
	disk storage.Disk
	mem  *raft.MemoryStorage
	// ends[i] is where the frame of entry first+i ends in the file.
	first uint64
	ends  []int64
}

// openStore reads the log from disk, or bootstraps an empty one whose
// snapshot (index 1, term 1) names the voters: every voter starts from the
// same state without configuration entries (etcd raft's recommended
// bootstrap). A log whose snapshot names other voters is refused.
func openStore(disk storage.Disk, voters []uint64) (*store, error) {
	s := &store{disk: disk, mem: raft.NewMemoryStorage()}
	data, err := disk.ReadFile(snapshotFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		snap := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{
			Index: new(uint64(1)), Term: new(uint64(1)),
			ConfState: &pb.ConfState{Voters: slices.Clone(voters)},
		}}
		if err := s.saveSnapshot(snap); err != nil {
			return nil, err
		}
		s.first = 2
		return s, s.mem.ApplySnapshot(snap)
	case err != nil:
		return nil, err
	}
	snap := &pb.Snapshot{}
	if err := proto.Unmarshal(data, snap); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, snapshotFile, err)
	}
	if got := snap.GetMetadata().GetConfState().GetVoters(); !sameVoters(got, voters) {
		return nil, fmt.Errorf("the metadata log names voters %v, the configuration %v: start every controller with the same voters, or with an empty data directory", got, voters)
	}
	if err := s.mem.ApplySnapshot(snap); err != nil {
		return nil, err
	}
	s.first = snap.GetMetadata().GetIndex() + 1
	if data, err = disk.ReadFile(hardStateFile); err == nil {
		hs := &pb.HardState{}
		if err := proto.Unmarshal(data, hs); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, hardStateFile, err)
		}
		if err := s.mem.SetHardState(hs); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return s, s.readEntries()
}

func sameVoters(a, b []uint64) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// readEntries loads the log file's frames, keeping those after the
// snapshot, and cuts a torn tail.
func (s *store) readEntries() error {
	data, err := s.disk.ReadFile(logFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var ents []*pb.Entry
	var ends []int64
	off := int64(0)
	for int64(len(data))-off >= frameHeader {
		n := int64(binary.BigEndian.Uint32(data[off:]))
		sum := binary.BigEndian.Uint32(data[off+4:])
		end := off + frameHeader + n
		if end > int64(len(data)) || crc32.Checksum(data[off+frameHeader:end], castagnoli) != sum {
			break
		}
		e := &pb.Entry{}
		if err := proto.Unmarshal(data[off+frameHeader:end], e); err != nil {
			break
		}
		if len(ents) > 0 && e.GetIndex() != ents[len(ents)-1].GetIndex()+1 {
			return fmt.Errorf("%w: %s: entry %d follows entry %d", ErrCorrupt, logFile, e.GetIndex(), ents[len(ents)-1].GetIndex())
		}
		ents = append(ents, e)
		ends = append(ends, end)
		off = end
	}
	if off < int64(len(data)) {
		if err := s.disk.Truncate(logFile, off); err != nil {
			return err
		}
		if err := s.disk.Sync(logFile); err != nil {
			return err
		}
	}
	// Frames at or before the snapshot were compacted into it; a file
	// rewrite after a snapshot that crashed halfway leaves them.
	i := 0
	for i < len(ents) && ents[i].GetIndex() < s.first {
		i++
	}
	ents, ends = ents[i:], ends[i:]
	if len(ents) > 0 && ents[0].GetIndex() != s.first {
		return fmt.Errorf("%w: %s starts at entry %d, the snapshot ends at %d", ErrCorrupt, logFile, ents[0].GetIndex(), s.first-1)
	}
	s.ends = ends
	if len(ents) == 0 {
		return nil
	}
	return s.mem.Append(ents)
}

// save makes what raft's Ready asks durable, in raft's order: the
// snapshot, the entries, then the HardState; then raft may read them.
func (s *store) save(rd raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := s.saveSnapshot(rd.Snapshot); err != nil {
			return err
		}
		if err := s.mem.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
		s.first = rd.Snapshot.GetMetadata().GetIndex() + 1
		if err := s.rewrite(nil); err != nil {
			return err
		}
	}
	if len(rd.Entries) > 0 {
		if err := s.append(rd.Entries); err != nil {
			return err
		}
		if err := s.mem.Append(rd.Entries); err != nil {
			return err
		}
	}
	if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
		data, err := proto.Marshal(rd.HardState)
		if err != nil {
			return err
		}
		if err := s.disk.WriteFileAtomic(hardStateFile, data); err != nil {
			return err
		}
		if err := s.mem.SetHardState(rd.HardState); err != nil {
			return err
		}
	}
	return nil
}

func (s *store) saveSnapshot(snap *pb.Snapshot) error {
	data, err := proto.Marshal(snap)
	if err != nil {
		return err
	}
	return s.disk.WriteFileAtomic(snapshotFile, data)
}

// append writes entries, first cutting the file where the first of them
// overwrites an entry already there (a new leader replaced a suffix).
func (s *store) append(ents []*pb.Entry) error {
	at := ents[0].GetIndex()
	if at < s.first {
		return fmt.Errorf("raft wrote entry %d, before the snapshot's end %d", at, s.first-1)
	}
	if have := s.first + uint64(len(s.ends)); at < have {
		keep := int(at - s.first)
		size := int64(0)
		if keep > 0 {
			size = s.ends[keep-1]
		}
		if err := s.disk.Truncate(logFile, size); err != nil {
			return err
		}
		s.ends = s.ends[:keep]
	} else if at > have {
		return fmt.Errorf("raft wrote entry %d after entry %d: a gap", at, have-1)
	}
	buf, end, err := frames(ents, s.size())
	if err != nil {
		return err
	}
	if err := s.disk.Append(logFile, buf); err != nil {
		return err
	}
	s.ends = append(s.ends, end...)
	return s.disk.Sync(logFile)
}

func (s *store) size() int64 {
	if len(s.ends) == 0 {
		return 0
	}
	return s.ends[len(s.ends)-1]
}

// frames encodes entries as frames that start at offset off; it returns
// the bytes and where each frame ends.
func frames(ents []*pb.Entry, off int64) ([]byte, []int64, error) {
	var buf []byte
	ends := make([]int64, 0, len(ents))
	for _, e := range ents {
		data, err := proto.Marshal(e)
		if err != nil {
			return nil, nil, err
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(data)))
		buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(data, castagnoli))
		buf = append(buf, data...)
		ends = append(ends, off+int64(len(buf)))
	}
	return buf, ends, nil
}

// rewrite replaces the log file, atomically, with ents (all after the
// snapshot).
func (s *store) rewrite(ents []*pb.Entry) error {
	buf, ends, err := frames(ents, 0)
	if err != nil {
		return err
	}
	if err := s.disk.WriteFileAtomic(logFile, buf); err != nil {
		return err
	}
	s.ends = ends
	return nil
}

// compact makes a snapshot of the state machine at applied (data, the
// metadata image at that index) and drops the entries it holds, in
// memory and on disk: the snapshot is durable before the file loses them.
func (s *store) compact(applied uint64, cs *pb.ConfState, data []byte) error {
	snap, err := s.mem.CreateSnapshot(applied, cs, data)
	if err != nil {
		return err
	}
	if err := s.saveSnapshot(snap); err != nil {
		return err
	}
	if err := s.mem.Compact(applied); err != nil {
		return err
	}
	last, err := s.mem.LastIndex()
	if err != nil {
		return err
	}
	var rest []*pb.Entry
	if last > applied {
		if rest, err = s.mem.Entries(applied+1, last+1, ^uint64(0)); err != nil {
			return err
		}
	}
	s.first = applied + 1
	return s.rewrite(rest)
}
