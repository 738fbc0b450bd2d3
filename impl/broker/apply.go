package broker

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Each partition lives in "p/<topic>/<partition>/" on the broker's disk.
const partitionsRoot = "p/"

func partitionDir(tp kafka.TopicPartition) string {
	return fmt.Sprintf("%s%s/%d", partitionsRoot, tp.Topic, tp.Partition)
}

// LogFile names the first segment of tp's log on a broker's disk (a
// storage.Disk name; on a real disk, relative to the data directory), for
// harnesses that damage it on purpose.
func LogFile(tp kafka.TopicPartition) string { return partitionDir(tp) + "/" + storage.LogFile }

// listPartitions finds every partition directory that holds a file.
func listPartitions(d storage.Disk) ([]kafka.TopicPartition, error) {
	names, err := d.List(partitionsRoot)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	var tps []kafka.TopicPartition
	for _, n := range names {
		parts := strings.Split(strings.TrimPrefix(n, partitionsRoot), "/")
		if len(parts) != 3 {
			continue
		}
		p, err := strconv.ParseInt(parts[1], 10, 32)
		if err != nil {
			continue
		}
		tp := kafka.TopicPartition{Topic: parts[0], Partition: int32(p)}
		if !slices.Contains(tps, tp) {
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, kafka.TopicPartition.Compare)
	return tps, nil
}

// load opens (or creates) tp's storage and builds its replica from it.
func (b *Broker) load(tp kafka.TopicPartition) (*hosted, error) {
	dir := partitionDir(tp)
	lc := b.cfg.LogConfig()
	lc.Mirror = b.cfg.MirrorLogs
	// One pass over the log, holding no batch: it finds damage below the
	// recovery point too, and rebuilds the leader-epoch cache from the
	// epochs the batches carry (below).
	var rebuilt storage.EpochCache
	batches := 0
	log, rec, err := storage.OpenLogScan(b.disk, dir, lc, func(bt *record.Batch) {
		batches++
		if e, ok := rebuilt.Latest(); !ok || bt.LeaderEpoch > e {
			rebuilt.Assign(bt.LeaderEpoch, bt.BaseOffset)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", tp, err)
	}
	if !rec.Clean() {
		b.events = append(b.events, Event{Broker: b.cfg.ID, TP: tp, Kind: "recovered", Detail: rec.String()})
	}
	hw, err := storage.ReadHW(b.disk, dir)
	if errors.Is(err, storage.ErrCorruptCheckpoint) {
		return nil, fmt.Errorf("open %s: %w: a high watermark is not derived from the log, so it is not rebuilt; restore the file, or move the partition's directory %s away so that the broker starts empty and copies the partition from its leader", tp, err, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", tp, err)
	}
	if why := lostData(rec, hw); why != "" {
		b.warn(tp, "this replica LOST COMMITTED DATA: %s; %s. Until it has copied the partition again from a leader that holds it, it must not lead: the controller is told", why, rec)
		b.lostData = append(b.lostData, tp)
	}
	epochs, err := storage.ReadEpochCache(b.disk, dir)
	switch {
	case errors.Is(err, storage.ErrCorruptCheckpoint):
		// Derived from the log, so rebuilt from it below: a damaged copy
		// must not keep the broker from starting.
		b.warn(tp, "%v: rebuilding the leader-epoch cache from the log", err)
		epochs = storage.EpochCache{}
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", tp, err)
	}
	// The cache on disk can disagree with the log after a crash: it is
	// written before each append (a crash between leaves it ahead), and a
	// power loss can undo an unsynced truncation, bringing back batches of
	// an epoch the cache no longer lists. Every batch carries its epoch, so
	// the log itself is the truth: rebuild the cache from it (Kafka rebuilds
	// it on recovery too).
	if stored := epochs.Entries(); !slices.Equal(stored, rebuilt.Entries()) && batches > 0 {
		b.events = append(b.events, Event{Broker: b.cfg.ID, TP: tp, Kind: "recovered",
			Detail: fmt.Sprintf("epoch cache %v rebuilt from the log as %v", stored, rebuilt.Entries())})
	}
	epochs = rebuilt
	var snap *partition.ProducerSnapshot
	lines, ok, err := storage.ReadProducerSnapshot(b.disk, dir)
	if err == nil && ok {
		snap, err = partition.ParseProducerSnapshot(lines)
	}
	switch {
	case errors.Is(err, storage.ErrCorruptCheckpoint) || errors.Is(err, partition.ErrCorruptSnapshot):
		// A snapshot only saves replaying the log; without it the producer
		// state is rebuilt from every batch.
		b.warn(tp, "%v: rebuilding producer state from the whole log", err)
		if err := storage.RemoveProducerSnapshot(b.disk, dir); err != nil {
			return nil, fmt.Errorf("open %s: %w", tp, err)
		}
		snap = nil
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", tp, err)
	}
	if snap != nil {
		if snap.Offset > log.LEO() {
			// It describes batches the log lost (a power loss, or a crash
			// between a truncation and the snapshot's removal): useless now,
			// and dangerous later once the log grows back past its offset
			// with other batches. Forget it on disk too.
			if err := storage.RemoveProducerSnapshot(b.disk, dir); err != nil {
				return nil, fmt.Errorf("open %s: %w", tp, err)
			}
			snap = nil
		}
	}
	r, err := partition.NewOnLog(b.replicaConfig(tp), tp, log, hw, epochs, snap)
	if err != nil {
		return nil, err
	}
	h := &hosted{tp: tp, replica: r, log: log, dir: dir, checkpointed: hw, snapshotAt: -1}
	if snap != nil {
		h.snapshotAt = snap.Offset
	}
	b.parts[tp] = h
	b.order = append(b.order, tp)
	slices.SortFunc(b.order, kafka.TopicPartition.Compare)
	return h, nil
}

// applyState applies the Ready of a state change. A replica that just took
// a new role in a new epoch passes the election failpoints first, before it
// truncates, writes or sends anything.
func (b *Broker) applyState(h *hosted, roleBefore partition.Role, epochBefore int32) error {
	r := h.replica
	if r.LeaderEpoch() != epochBefore || r.Role() != roleBefore {
		switch r.Role() {
		case partition.RoleLeader:
			if err := b.failpoint(FPBecomeLeader); err != nil {
				return err
			}
		case partition.RoleFollower:
			if err := b.failpoint(FPBecomeFollower); err != nil {
				return err
			}
		}
	}
	return b.apply(h)
}

// apply carries out a replica's Ready: truncate, write the epoch cache,
// append, checkpoint HW, and only then send and answer. Each boundary has a
// failpoint; a failpoint that fires stops here, as a crash would.
func (b *Broker) apply(h *hosted) error {
	r := h.replica
	if !r.HasReady() {
		return nil
	}
	rd := r.Ready()
	if rd.ReadErr != nil {
		return storageFailure(h.tp, rd.ReadErr)
	}
	leader := r.Role() == partition.RoleLeader
	for _, e := range rd.Events {
		b.events = append(b.events, Event{Broker: b.cfg.ID, TP: h.tp, Kind: e.Kind.String(), Detail: e.Detail})
	}
	if rd.Truncate >= 0 {
		if err := b.failpoint(FPBeforeTruncate); err != nil {
			return err
		}
		if _, err := h.log.TruncateTo(rd.Truncate); err != nil {
			return storageFailure(h.tp, err)
		}
		// Make the truncation durable before anything is appended in its
		// place: a power loss must not bring the removed batches back
		// under an HW checkpoint and an epoch cache that no longer fit
		// them. Truncations are rare; the sync is cheap insurance.
		if err := h.log.Sync(); err != nil {
			return storageFailure(h.tp, err)
		}
		if h.snapshotAt > rd.Truncate {
			// The snapshot describes batches the log no longer holds.
			if err := storage.RemoveProducerSnapshot(b.disk, h.dir); err != nil {
				return storageFailure(h.tp, err)
			}
			h.snapshotAt = -1
		}
		if err := b.failpoint(FPAfterTruncate); err != nil {
			return err
		}
	}
	if rd.EpochsChanged {
		if err := storage.WriteEpochCache(b.disk, h.dir, r.EpochCache()); err != nil {
			return storageFailure(h.tp, err)
		}
	}
	if len(rd.Append) > 0 {
		if err := b.failpoint(pick(leader, FPLeaderBeforeAppend, FPFollowerBeforeAppend)); err != nil {
			return err
		}
		if idempotent(rd.Append) {
			// The replica's producer state already counts these batches;
			// a crash here leaves it to be rebuilt from what storage holds.
			if err := b.failpoint(FPProducerStateUpdate); err != nil {
				return err
			}
		}
		for i := range rd.Append {
			if err := h.log.Append(rd.Append[i]); err != nil {
				return storageFailure(h.tp, err)
			}
		}
		if b.cfg.FlushEveryAppend {
			if err := b.failpoint(FPBeforeFsync); err != nil {
				return err
			}
			if err := h.log.Sync(); err != nil {
				return storageFailure(h.tp, err)
			}
		}
		if err := b.failpoint(pick(leader, FPLeaderAfterAppend, FPFollowerAfterAppend)); err != nil {
			return err
		}
	}
	if rd.HWChanged {
		if err := b.failpoint(FPHWAdvance); err != nil {
			return err
		}
		h.hwDirty = true
		if b.cfg.HWCheckpointIntervalMs == 0 {
			if err := b.checkpointHW(h); err != nil {
				return err
			}
		}
	}
	for _, m := range rd.Messages {
		switch m := m.(type) {
		case partition.FetchRequest:
			b.send(NodeID(m.To), m)
		case partition.EpochEndRequest:
			b.send(NodeID(m.To), m)
		case kafka.AlterPartition:
			if err := b.failpoint(FPISRChange); err != nil {
				return err
			}
			b.send(ControllerID, m)
		}
	}
	for _, c := range rd.Completions {
		if err := b.completeProduce(c); err != nil {
			return err
		}
	}
	if rd.HWChanged {
		// Held consumer fetches on tp may have enough data now.
		b.retryFetches(h.tp, false)
	}
	return nil
}

func idempotent(batches []record.Batch) bool {
	for i := range batches {
		if batches[i].ProducerID != record.NoProducerID {
			return true
		}
	}
	return false
}

// snapshotProducers writes tp's producer-state snapshot at its LEO, if the
// log grew since the last one. A restart then replays only what follows.
func (b *Broker) snapshotProducers(h *hosted) error {
	leo := h.replica.LEO()
	if leo == h.snapshotAt || leo == 0 {
		return nil
	}
	if err := b.failpoint(FPBeforeProducerSnapshot); err != nil {
		return err
	}
	// No log sync first: Kafka does not fsync its log on a timer, and a
	// hidden sync here would make every power loss milder than Kafka's. A
	// power loss can then leave the snapshot past the log's end; load
	// notices, removes it and replays the whole log instead.
	snap := h.replica.ProducerSnapshot()
	if err := storage.WriteProducerSnapshot(b.disk, h.dir, snap.Lines()); err != nil {
		return storageFailure(h.tp, err)
	}
	h.snapshotAt = snap.Offset
	return b.failpoint(FPAfterProducerSnapshot)
}

// checkpointHW writes tp's HW checkpoint if it changed since the last one.
func (b *Broker) checkpointHW(h *hosted) error {
	if !h.hwDirty {
		return nil
	}
	if err := b.failpoint(FPHWCheckpointWrite); err != nil {
		return err
	}
	hw := h.replica.HW()
	if err := storage.WriteHW(b.disk, h.dir, hw); err != nil {
		return storageFailure(h.tp, err)
	}
	h.hwDirty = false
	h.checkpointed = hw
	return nil
}

func storageFailure(tp kafka.TopicPartition, err error) error {
	return &FailpointError{Name: "storage", Action: ActionCrash, Cause: fmt.Errorf("%s: %w", tp, err)}
}

func pick(leader bool, ifLeader, ifFollower string) string {
	if leader {
		return ifLeader
	}
	return ifFollower
}

// Event is one protocol step on a broker, for traces.
type Event struct {
	Broker NodeID
	TP     kafka.TopicPartition
	Kind   string
	Detail string
}

// lostData says how a recovered log shows that this replica lost records
// it had and that may have been committed ("" if it shows none): it ends
// below the HW it checkpointed, or recovery found intact batches after the
// damage it stopped at, which a torn tail never leaves.
func lostData(rec storage.Recovery, hw int64) string {
	switch {
	case rec.LEO < hw:
		return fmt.Sprintf("its log recovered to offset %d, below its checkpointed high watermark %d", rec.LEO, hw)
	case rec.DroppedBatches > 0:
		return fmt.Sprintf("recovery of %s stopped at damage with %d intact batches after it, past offset %d", rec.File, rec.DroppedBatches, rec.LEO)
	}
	return ""
}

// warn records a damaged file the broker worked around: an event of kind
// "warning", which node logs as such.
func (b *Broker) warn(tp kafka.TopicPartition, format string, args ...any) {
	b.events = append(b.events, Event{Broker: b.cfg.ID, TP: tp, Kind: "warning", Detail: fmt.Sprintf(format, args...)})
}

// String renders the event on one line.
func (e Event) String() string {
	return fmt.Sprintf("broker %d %s %s: %s", e.Broker, e.TP, e.Kind, e.Detail)
}

// syncMarker is a file that exists while the broker's process syncs every
// append: the next process reads from it whether the one before was such.
const syncMarker = "flush-every-append"

// swapSyncMarker reports whether the previous process left the marker and
// sets it for this one (flush), durably, before anything is appended.
func swapSyncMarker(d storage.Disk, flush bool) (bool, error) {
	names, err := d.List(syncMarker)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", syncMarker, err)
	}
	was := slices.Contains(names, syncMarker)
	switch {
	case flush && !was:
		err = d.WriteFileAtomic(syncMarker, []byte("every append is synced before it is reported\n"))
	case !flush && was:
		err = d.Remove(syncMarker)
	}
	if err != nil {
		return false, fmt.Errorf("write %s: %w", syncMarker, err)
	}
	return was, nil
}

// replicaConfig is the replica settings for tp: the broker's, with its
// topic's min.insync.replicas where the topic has its own (the
// controller publishes topic configs with, or before, the topic's first
// partition states).
func (b *Broker) replicaConfig(tp kafka.TopicPartition) partition.Config {
	cfg := b.replicaCfg
	if m := b.topicConfigs[tp.Topic].MinInsyncReplicas; m > 0 {
		cfg.MinInsyncReplicas = int(m)
	}
	return cfg
}
