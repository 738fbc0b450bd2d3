package broker

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/layout"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Each partition lives in "p/<topic>/<partition>/" on the broker's disk
// (impl/layout names it).
const partitionsRoot = layout.PartitionsRoot

func partitionDir(tp kafka.TopicPartition) string { return layout.PartitionDir(tp) }

// LogFile names the first segment of tp's log on a broker's disk (a
// storage.Disk name; on a real disk, relative to the data directory), for
// harnesses that damage it on purpose. It is impl/layout's.
func LogFile(tp kafka.TopicPartition) string { return layout.LogFile(tp) }

// FirstSegment names the oldest segment of tp's log among names (Disk
// names, as Disk.List gives them), or LogFile(tp) when they hold none. It
// is impl/layout's.
func FirstSegment(tp kafka.TopicPartition, names []string) string {
	return layout.FirstSegment(tp, names)
}

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
// append, checkpoint HW (persist), advance the replica, and only then send
// and answer (send). Each boundary has a failpoint; a failpoint that fires
// stops here, as a crash would.
func (b *Broker) apply(h *hosted) error {
	r := h.replica
	if !r.HasReady() {
		return nil
	}
	rd := r.Ready()
	err := b.persist(h, &rd)
	// Advance before sending: what follows touches no storage of the
	// replica's, and a held fetch the Ready wakes reads the replica again.
	r.Advance()
	if err != nil {
		return err
	}
	return b.sendReady(h, &rd)
}

// persist does the storage part of a replica's Ready, in order.
func (b *Broker) persist(h *hosted, rd *partition.Ready) error {
	r := h.replica
	if rd.ReadErr != nil {
		// A batch failed its checks where recovery trusted the file, or
		// the disk failed: crash rather than serve it.
		return b.storageFailure(h.tp, rd.ReadErr)
	}
	leader := r.Role() == partition.RoleLeader
	roles := false // the replica's role, epoch or ISR changed
	for _, e := range rd.Events {
		b.events = append(b.events, Event{Broker: b.cfg.ID, TP: h.tp, Kind: e.Kind.String(), Detail: e.Detail})
		switch e.Kind {
		case partition.EventBecameLeader, partition.EventBecameFollower, partition.EventISRChanged:
			roles = true
		}
	}
	if rd.StartAt >= 0 {
		// Everything the log held is below the leader's log start: it goes
		// durably (ResetTo), and the snapshot with it. The emptied epoch
		// cache first: a crash between must not leave entries of the old
		// log above an empty one's start.
		if err := storage.WriteEpochCache(b.disk, h.dir, r.EpochCache()); err != nil {
			return b.storageFailure(h.tp, err)
		}
		if err := h.log.ResetTo(rd.StartAt); err != nil {
			return b.storageFailure(h.tp, err)
		}
		if h.snapshotAt >= 0 {
			if err := storage.RemoveProducerSnapshot(b.disk, h.dir); err != nil {
				return b.storageFailure(h.tp, err)
			}
			h.snapshotAt = -1
		}
	}
	if rd.Truncate >= 0 {
		if err := b.failpoint(FPBeforeTruncate); err != nil {
			return err
		}
		if _, err := h.log.TruncateTo(rd.Truncate); err != nil {
			return b.storageFailure(h.tp, err)
		}
		// Make the truncation durable before anything is appended in its
		// place: a power loss must not bring the removed batches back
		// under an HW checkpoint and an epoch cache that no longer fit
		// them. Truncations are rare; the sync is cheap insurance.
		if err := h.log.Sync(); err != nil {
			return b.storageFailure(h.tp, err)
		}
		if h.snapshotAt > rd.Truncate {
			// The snapshot describes batches the log no longer holds.
			if err := storage.RemoveProducerSnapshot(b.disk, h.dir); err != nil {
				return b.storageFailure(h.tp, err)
			}
			h.snapshotAt = -1
		}
		if err := b.failpoint(FPAfterTruncate); err != nil {
			return err
		}
	}
	if rd.EpochsChanged {
		if err := storage.WriteEpochCache(b.disk, h.dir, r.EpochCache()); err != nil {
			return b.storageFailure(h.tp, err)
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
				return b.storageFailure(h.tp, err)
			}
		}
		if b.cfg.FlushEveryAppend {
			if err := b.failpoint(FPBeforeFsync); err != nil {
				return err
			}
			if err := h.log.Sync(); err != nil {
				return b.storageFailure(h.tp, err)
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
	}
	if h.hwDirty && (roles || b.cfg.HWCheckpointIntervalMs == 0) {
		// Kafka checkpoints on a timer; the reference also at every
		// leadership and ISR change, so that the HW a restart compares
		// its recovered log with is never older than the replica's last
		// role: a stale checkpoint would let a damaged replica pass for
		// one that lost nothing committed (load.go lostData).
		if err := b.checkpointHW(h); err != nil {
			return err
		}
	}
	return nil
}

// sendReady sends what a replica's Ready asks, once it is persisted: its
// messages to other nodes; the answers to requests that waited in the
// replica; the held fetches that the new HW may satisfy; and last the
// answers to the input at hand (Kafka completes its delayed produces and
// fetches when HW moves, before it answers the request that moved it).
func (b *Broker) sendReady(h *hosted, rd *partition.Ready) error {
	for _, m := range rd.Messages {
		to := NodeID(m.Destination())
		if to == ControllerID {
			// An ISR proposal: the failpoint at the ISR change's boundary.
			if err := b.failpoint(FPISRChange); err != nil {
				return err
			}
		} else if !b.fetchesWhileStopping(h.tp) {
			continue // a fetch or epoch question to the leader
		}
		b.send(to, m)
	}
	for _, a := range rd.Answers {
		if a.Waited {
			if err := b.deliver(a); err != nil {
				return err
			}
		}
	}
	if rd.HWChanged {
		// Held consumer fetches on tp may have enough data now.
		if err := b.retryFetches(h.tp, false); err != nil {
			return err
		}
	}
	for _, a := range rd.Answers {
		if !a.Waited {
			if err := b.deliver(a); err != nil {
				return err
			}
		}
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
		return b.storageFailure(h.tp, err)
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
		return b.storageFailure(h.tp, err)
	}
	h.hwDirty = false
	h.checkpointed = hw
	return nil
}

// storageFailure crashes the broker on a failed read or write of tp's
// storage, leaving the marker that makes the next start read every
// segment (verifyMarker): a failure may be damage in a segment the next
// start would otherwise trust again, and the crash would repeat.
func (b *Broker) storageFailure(tp kafka.TopicPartition, err error) error {
	// A batch the log refused (not contiguous, not valid) is a bug of the
	// caller, not of the disk: no marker for it.
	if !errors.Is(err, storage.ErrNonContiguous) && !errors.Is(err, storage.ErrInvalidBatch) {
		if merr := verifyNext(b.disk); merr != nil {
			err = errors.Join(err, merr)
		}
	}
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

// warn records a damaged file the broker worked around: an event of kind
// "warning", which node logs as such.
func (b *Broker) warn(tp kafka.TopicPartition, format string, args ...any) {
	b.events = append(b.events, Event{Broker: b.cfg.ID, TP: tp, Kind: "warning", Detail: fmt.Sprintf(format, args...)})
}

// String renders the event on one line; an event of the broker as a
// whole names no partition.
func (e Event) String() string {
	if e.TP.Topic == "" {
		return fmt.Sprintf("broker %d %s: %s", e.Broker, e.Kind, e.Detail)
	}
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
