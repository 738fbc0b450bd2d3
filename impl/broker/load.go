package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// verifyMarker is a file that exists while the broker's next start must
// read every segment of every log, as log_verify_on_start does: a read or
// write of its storage failed (a batch that failed its checks in a
// segment recovery had trusted, a flipped bit in a synced file, or the
// disk), and the broker crashed rather than serve it. The next start finds
// any damage at open, cuts the log before it and reports the lost data,
// as it would for a torn tail.
const verifyMarker = "verify-logs-at-start"

// verifyNext leaves verifyMarker for the next start, durably.
func verifyNext(d storage.Disk) error {
	return d.WriteFileAtomic(verifyMarker, []byte("a read failed its checks: the next start reads every segment\n"))
}

// takeVerifyMarker reports whether the previous process left verifyMarker.
// The caller removes it (clearVerifyMarker) once every log is open.
func takeVerifyMarker(d storage.Disk) (bool, error) {
	_, err := d.FileSize(verifyMarker)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("read %s: %w", verifyMarker, err)
}

func clearVerifyMarker(d storage.Disk) error {
	if err := d.Remove(verifyMarker); err != nil {
		return fmt.Errorf("remove %s: %w", verifyMarker, err)
	}
	return nil
}

// load opens (or creates) tp's storage and builds its replica from it.
// With verify it reads every segment (storage.OpenLogVerify); without, it
// trusts the segments below the recovery point, as Kafka does, and reads
// only the rest.
func (b *Broker) load(tp kafka.TopicPartition, verify bool) (*hosted, error) {
	events, lost := len(b.events), len(b.lostData)
	h, err := b.loadOnce(tp, verify)
	if err != nil && !verify && errors.Is(err, kafka.ErrStorage) {
		// Rebuilding the producer state read a trusted segment and met
		// damage: read every segment, which cuts the log before it.
		b.events, b.lostData = b.events[:events], b.lostData[:lost]
		return b.loadOnce(tp, true)
	}
	return h, err
}

func (b *Broker) loadOnce(tp kafka.TopicPartition, verify bool) (*hosted, error) {
	dir := partitionDir(tp)
	log, rec, epochs, err := b.openLog(tp, dir, verify)
	if err != nil {
		return nil, err
	}
	if !rec.Clean() {
		b.events = append(b.events, Event{Broker: b.cfg.ID, TP: tp, Kind: "recovered", Detail: rec.String()})
	}
	hw, hwFound, err := storage.ReadHWCheckpoint(b.disk, dir)
	if errors.Is(err, storage.ErrCorruptCheckpoint) {
		return nil, fmt.Errorf("open %s: %w: a high watermark is not derived from the log, so it is not rebuilt; restore the file, or move the partition's directory %s away so that the broker starts empty and copies the partition from its leader", tp, err, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", tp, err)
	}
	why := lostData(rec, hw, hwFound, b.previous != 0)
	if why == "" {
		marked, err := b.hasLostMarker(dir)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", tp, err)
		}
		if marked {
			why = "an earlier start found it lost committed data (" + lostMarker + "), and no leader has added it back to the ISR since"
		}
	}
	if why != "" {
		b.warn(tp, "this replica LOST COMMITTED DATA: %s; %s. Until it has copied the partition again from a leader that holds it, it must not lead: the controller is told", why, rec)
		b.lostData = append(b.lostData, tp)
		if err := b.markLost(dir, why); err != nil {
			return nil, fmt.Errorf("open %s: %w", tp, err)
		}
	}
	snap, err := b.loadProducerSnapshot(tp, dir, log.LEO())
	if err != nil {
		return nil, err
	}
	r, err := partition.NewOnLog(b.replicaConfig(tp), tp, log, hw, epochs, snap)
	if err != nil {
		return nil, err
	}
	h := &hosted{tp: tp, replica: r, log: log, dir: dir, checkpointed: hw, snapshotAt: -1, lost: why != ""}
	if snap != nil {
		h.snapshotAt = snap.Offset
	}
	b.parts[tp] = h
	b.order = append(b.order, tp)
	slices.SortFunc(b.order, kafka.TopicPartition.Compare)
	return h, nil
}

// openLog opens tp's log and works out its leader-epoch cache: the
// checkpoint's entries for the segments recovery trusted, and entries
// rebuilt from the epochs the batches carry for the rest, which it read.
// The checkpoint can disagree with the scanned tail after a crash: it is
// written before each append (a crash between leaves it ahead), and a
// power loss can undo an unsynced truncation, bringing back batches of an
// epoch it no longer lists; every batch carries its epoch, so the log is
// the truth there (Kafka truncates the cache to the recovered log too).
// Below the recovery point nothing changed since a sync, so the
// checkpoint holds. A checkpoint that does not cover the trusted segments
// (missing, damaged, or out of step with the scanned epochs) makes the
// broker read those too.
func (b *Broker) openLog(tp kafka.TopicPartition, dir string, verify bool) (*storage.Log, storage.Recovery, storage.EpochCache, error) {
	lc := logConfig(b.cfg.Settings)
	lc.Mirror = b.cfg.MirrorLogs
	open := storage.OpenLogScan
	if verify {
		open = storage.OpenLogVerify
	}
	var scanned storage.EpochCache
	log, rec, err := open(b.disk, dir, lc, func(bt *record.Batch) {
		if e, ok := scanned.Latest(); !ok || bt.LeaderEpoch > e {
			scanned.Assign(bt.LeaderEpoch, bt.BaseOffset)
		}
	})
	if err != nil {
		return nil, rec, storage.EpochCache{}, fmt.Errorf("open %s: %w", tp, err)
	}
	stored, err := storage.ReadEpochCache(b.disk, dir)
	switch {
	case errors.Is(err, storage.ErrCorruptCheckpoint):
		// Derived from the log, so rebuilt from it: a damaged copy must
		// not keep the broker from starting.
		b.warn(tp, "%v: rebuilding the leader-epoch cache from the log", err)
		stored = storage.EpochCache{}
	case err != nil:
		return nil, rec, storage.EpochCache{}, fmt.Errorf("open %s: %w", tp, err)
	}
	epochs, ok := joinEpochs(stored, scanned, rec.ScannedFrom, log.StartOffset())
	if !ok && verify {
		// Every batch was read: the log's own epochs are the cache.
		epochs, ok = scanned, true
	}
	if !ok {
		// Read the trusted segments too. The first open's cut, if it made
		// one, is on disk: keep its report unless the second finds worse.
		log2, rec2, epochs2, err := b.openLog(tp, dir, true)
		if err == nil && rec2.Clean() {
			rec2.DroppedBytes, rec2.DroppedBatches, rec2.Reason = rec.DroppedBytes, rec.DroppedBatches, rec.Reason
		}
		return log2, rec2, epochs2, err
	}
	if log.LEO() > log.StartOffset() && !slices.Equal(stored.Entries(), epochs.Entries()) {
		b.events = append(b.events, Event{Broker: b.cfg.ID, TP: tp, Kind: "recovered",
			Detail: fmt.Sprintf("epoch cache %v rebuilt from the log as %v", stored.Entries(), epochs.Entries())})
	}
	return log, rec, epochs, nil
}

// joinEpochs is the leader-epoch cache of a log whose batches from offset
// from on were scanned into scanned: stored's entries below from, then
// scanned's. It is false when stored cannot describe the log below from
// (a log starting at start): no entry at or before start, or an epoch
// later than one the scan found.
func joinEpochs(stored, scanned storage.EpochCache, from, start int64) (storage.EpochCache, bool) {
	var out storage.EpochCache
	for _, e := range stored.Entries() {
		if e.StartOffset >= from {
			break
		}
		out.Assign(e.Epoch, e.StartOffset)
	}
	if all := out.Entries(); from > start && (len(all) == 0 || all[0].StartOffset > start) {
		return out, false
	}
	for _, e := range scanned.Entries() {
		if latest, ok := out.Latest(); ok && e.Epoch <= latest {
			if e.Epoch < latest {
				return out, false
			}
			continue
		}
		out.Assign(e.Epoch, e.StartOffset)
	}
	return out, true
}

// loadProducerSnapshot reads tp's producer-state snapshot, nil if there
// is none or it cannot be used: damaged (the state is then rebuilt from
// the whole log), or past the log's end leo (a power loss, or a crash
// between a truncation and the snapshot's removal: it describes batches
// the log lost, and would be dangerous once the log grows back past its
// offset with other batches). Either is removed from the disk too.
func (b *Broker) loadProducerSnapshot(tp kafka.TopicPartition, dir string, leo int64) (*partition.ProducerSnapshot, error) {
	var snap *partition.ProducerSnapshot
	lines, ok, err := storage.ReadProducerSnapshot(b.disk, dir)
	if err == nil && ok {
		snap, err = partition.ParseProducerSnapshot(lines)
	}
	switch {
	case errors.Is(err, storage.ErrCorruptCheckpoint) || errors.Is(err, partition.ErrCorruptSnapshot):
		b.warn(tp, "%v: rebuilding producer state from the whole log", err)
		snap = nil
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", tp, err)
	case snap == nil || snap.Offset <= leo:
		return snap, nil
	}
	if err := storage.RemoveProducerSnapshot(b.disk, dir); err != nil {
		return nil, fmt.Errorf("open %s: %w", tp, err)
	}
	return nil, nil
}

// lostData says how a recovered log shows that this replica lost records
// it had and that may have been committed ("" if it shows none):
//   - the broker stopped cleanly (clean), with every log flushed to its
//     end, and recovery still cut the log: no write was torn, so whatever
//     it cut is damage, and may be committed;
//   - it ends below the HW it checkpointed;
//   - recovery found intact batches after the damage it stopped at, which
//     a torn tail never leaves;
//   - recovery cut the log and there is no HW checkpoint to say whether
//     what it cut was committed: no checkpoint is "unknown", never
//     "nothing committed".
//
// After a crash, a cut at the end of what was written, above the
// checkpointed HW, is a torn write of records no one was told of.
func lostData(rec storage.Recovery, hw int64, hwFound, clean bool) string {
	switch {
	case clean && !rec.Clean():
		return fmt.Sprintf("the broker stopped cleanly with every log flushed, yet recovery of %s cut it at offset %d (%s): that is damage, not a torn write", rec.File, rec.LEO, rec.Reason)
	case rec.LEO < hw:
		return fmt.Sprintf("its log recovered to offset %d, below its checkpointed high watermark %d", rec.LEO, hw)
	case rec.DroppedBatches > 0:
		return fmt.Sprintf("recovery of %s stopped at damage with %d intact batches after it, past offset %d", rec.File, rec.DroppedBatches, rec.LEO)
	case !hwFound && !rec.Clean():
		return fmt.Sprintf("recovery of %s cut it at offset %d and no high-watermark checkpoint says whether what it cut was committed", rec.File, rec.LEO)
	}
	return ""
}
