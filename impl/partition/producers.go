package partition

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/settings"
)

// DedupWindow is how many of a producer's latest batches a partition
// remembers: a retry of any of them is answered with the original offset
// (settings.DedupWindow).
const DedupWindow = settings.DedupWindow

// ProducerState says how producer state (PID, epoch, recent sequences) is
// kept (settings.ProducerState, where each variant is described).
type ProducerState = settings.ProducerState

// The producer-state variants.
const (
	ProducerStateReplicated = settings.ProducerStateReplicated
	ProducerStateLeaderOnly = settings.ProducerStateLeaderOnly
)

// producerBatch is one batch a partition remembers for a producer.
type producerBatch struct {
	firstSeq, lastSeq int32
	base, last        int64 // offsets
}

// producerEntry is a partition's memory of one producer.
//
// Invariants:
//  1. len(batches) <= DedupWindow, oldest first, sequences increasing.
//  2. Every batch has the entry's epoch.
type producerEntry struct {
	epoch   int16
	batches []producerBatch
}

// producers is a partition's producer state: PID -> entry. It is derived
// from the log alone (every idempotent batch carries its PID, epoch and
// sequence), so a replica rebuilds it by replaying batches.
type producers map[int64]*producerEntry

// observe records an appended batch.
func (ps producers) observe(b *record.Batch) {
	if b.ProducerID == record.NoProducerID {
		return
	}
	e := ps[b.ProducerID]
	if e == nil || b.ProducerEpoch > e.epoch {
		e = &producerEntry{epoch: b.ProducerEpoch}
		ps[b.ProducerID] = e
	}
	e.batches = append(e.batches, producerBatch{firstSeq: b.BaseSequence, lastSeq: b.LastSequence(), base: b.BaseOffset, last: b.LastOffset()})
	if len(e.batches) > DedupWindow {
		e.batches = slices.Delete(e.batches, 0, len(e.batches)-DedupWindow)
	}
}

// check decides what a leader does with an idempotent batch: append it (nil,
// nil), answer it as the duplicate of a batch already in the log (dup, nil),
// or refuse it (nil, err).
//
// The rules (spec/SEMANTICS.md, Producer):
//   - an epoch older than the producer's latest: kafka.ErrInvalidProducerEpoch;
//   - a newer epoch must start at sequence 0: kafka.ErrOutOfOrderSequence;
//   - the same epoch and the same sequence range as one of the last
//     DedupWindow batches: a duplicate, answered with the original offset;
//   - the same epoch: the next sequence after the latest batch, or
//     kafka.ErrOutOfOrderSequence;
//   - a producer the partition has no state for: sequence 0 starts it;
//     anything else is kafka.ErrUnknownProducerID. The reference broker never
//     expires producer state (it deletes no log), so an unknown producer
//     with a later sequence means state was lost, and that must show as an
//     error in the history rather than be accepted as Kafka's lenient
//     first-write rule would. With ProducerStateLeaderOnly the leader does
//     take it, which is how that bug duplicates.
func (ps producers) check(b *record.Batch, lenient bool) (*producerBatch, error) {
	e := ps[b.ProducerID]
	if e == nil {
		if b.BaseSequence == 0 || lenient {
			return nil, nil
		}
		return nil, kafka.ErrUnknownProducerID
	}
	switch {
	case b.ProducerEpoch < e.epoch:
		return nil, kafka.ErrInvalidProducerEpoch
	case b.ProducerEpoch > e.epoch:
		if b.BaseSequence != 0 {
			return nil, kafka.ErrOutOfOrderSequence
		}
		return nil, nil
	}
	for i := range e.batches {
		pb := &e.batches[i]
		if pb.firstSeq == b.BaseSequence && pb.lastSeq == b.LastSequence() {
			return pb, nil
		}
	}
	if len(e.batches) > 0 && b.BaseSequence != e.batches[len(e.batches)-1].lastSeq+1 {
		return nil, kafka.ErrOutOfOrderSequence
	}
	return nil, nil
}

// truncateProducers forgets what the log no longer holds. Replicated state
// is rebuilt from the log, which is exact (batches that had left the window
// come back into it); leader-only state keeps what it has below the point.
func (r *Replica) truncateProducers(leo int64) {
	if r.cfg.ProducerState == ProducerStateReplicated {
		r.producers = r.rebuildProducers()
		return
	}
	for id, e := range r.producers {
		n := 0
		for _, b := range e.batches {
			if b.last < leo {
				e.batches[n] = b
				n++
			}
		}
		e.batches = e.batches[:n]
		if n == 0 {
			delete(r.producers, id)
		}
	}
}

// ProducerSnapshot captures the producer state as of LEO, for storage.
func (r *Replica) ProducerSnapshot() ProducerSnapshot { return r.producers.snapshot(r.leo()) }

// rebuildProducers replays the whole log into fresh producer state.
func (r *Replica) rebuildProducers() producers {
	ps := producers{}
	r.each(0, ps.observe)
	return ps
}

// ProducerSnapshot is a partition's producer state as of an offset, so a
// restart replays only the log after it.
type ProducerSnapshot struct {
	Offset    int64 // the state covers every batch below Offset
	Producers []ProducerSnapshotEntry
}

// ProducerSnapshotEntry is one producer in a snapshot.
type ProducerSnapshotEntry struct {
	ProducerID int64
	Epoch      int16
	Batches    []SnapshotBatch
}

// SnapshotBatch is one remembered batch in a snapshot.
type SnapshotBatch struct {
	FirstSeq, LastSeq int32
	Base, Last        int64
}

// snapshot captures ps, sorted by PID so equal states encode equally.
func (ps producers) snapshot(offset int64) ProducerSnapshot {
	s := ProducerSnapshot{Offset: offset}
	ids := make([]int64, 0, len(ps))
	for id := range ps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := ps[id]
		se := ProducerSnapshotEntry{ProducerID: id, Epoch: e.epoch}
		for _, b := range e.batches {
			se.Batches = append(se.Batches, SnapshotBatch{FirstSeq: b.firstSeq, LastSeq: b.lastSeq, Base: b.base, Last: b.last})
		}
		s.Producers = append(s.Producers, se)
	}
	return s
}

// restoreProducers loads a snapshot and replays the log after it. A
// snapshot past the log's end (a power loss took the tail it describes) is
// useless and the whole log is replayed instead.
func (r *Replica) restoreProducers(snap *ProducerSnapshot) producers {
	if snap == nil || snap.Offset > r.leo() {
		return r.rebuildProducers()
	}
	ps := producers{}
	for _, se := range snap.Producers {
		e := &producerEntry{epoch: se.Epoch}
		for _, b := range se.Batches {
			e.batches = append(e.batches, producerBatch{firstSeq: b.FirstSeq, lastSeq: b.LastSeq, base: b.Base, last: b.Last})
		}
		ps[se.ProducerID] = e
	}
	if snap.Offset < r.leo() {
		r.each(snap.Offset, ps.observe)
	}
	return ps
}

// Lines encodes the snapshot as text lines for storage:
//
//	offset <N>
//	producer <pid> <epoch> <firstSeq>:<lastSeq>:<base>:<last> ...
func (s ProducerSnapshot) Lines() []string {
	lines := []string{fmt.Sprintf("offset %d", s.Offset)}
	for _, p := range s.Producers {
		l := fmt.Sprintf("producer %d %d", p.ProducerID, p.Epoch)
		for _, b := range p.Batches {
			l += fmt.Sprintf(" %d:%d:%d:%d", b.FirstSeq, b.LastSeq, b.Base, b.Last)
		}
		lines = append(lines, l)
	}
	return lines
}

// ErrCorruptSnapshot: a producer snapshot that is not in Lines' format.
var ErrCorruptSnapshot = errors.New("corrupt producer snapshot")

// ParseProducerSnapshot decodes Lines' output, strictly: a snapshot is
// trusted to dedup writes, so anything but exactly that format is an error
// (ErrCorruptSnapshot).
func ParseProducerSnapshot(lines []string) (snap *ProducerSnapshot, rerr error) {
	defer func() {
		if rerr != nil {
			snap, rerr = nil, fmt.Errorf("%w: %v", ErrCorruptSnapshot, rerr)
		}
	}()
	if len(lines) == 0 {
		return nil, fmt.Errorf("producer snapshot: empty")
	}
	s := &ProducerSnapshot{}
	head := strings.Fields(lines[0])
	if len(head) != 2 || head[0] != "offset" {
		return nil, fmt.Errorf("producer snapshot line 1 %q: want offset <n>", lines[0])
	}
	var err error
	if s.Offset, err = strconv.ParseInt(head[1], 10, 64); err != nil || s.Offset < 0 {
		return nil, fmt.Errorf("producer snapshot line 1 %q: bad offset", lines[0])
	}
	for i, l := range lines[1:] {
		bad := func(what string) error {
			return fmt.Errorf("producer snapshot line %d %q: %s (want producer <pid> <epoch> then <first>:<last>:<base>:<last offset> per batch)", i+2, l, what)
		}
		fields := strings.Fields(l)
		if len(fields) < 3 || fields[0] != "producer" {
			return nil, bad("not a producer line")
		}
		var e ProducerSnapshotEntry
		pid, err1 := strconv.ParseInt(fields[1], 10, 64)
		epoch, err2 := strconv.ParseInt(fields[2], 10, 16)
		if err1 != nil || err2 != nil {
			return nil, bad("bad producer id or epoch")
		}
		e.ProducerID, e.Epoch = pid, int16(epoch)
		for _, f := range fields[3:] {
			parts := strings.Split(f, ":")
			if len(parts) != 4 {
				return nil, bad(fmt.Sprintf("batch %q", f))
			}
			var n [4]int64
			for k, p := range parts {
				bits := 64
				if k < 2 {
					bits = 32
				}
				if n[k], err = strconv.ParseInt(p, 10, bits); err != nil {
					return nil, bad(fmt.Sprintf("batch %q", f))
				}
			}
			e.Batches = append(e.Batches, SnapshotBatch{FirstSeq: int32(n[0]), LastSeq: int32(n[1]), Base: n[2], Last: n[3]})
		}
		s.Producers = append(s.Producers, e)
	}
	return s, nil
}
