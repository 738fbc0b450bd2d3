// Package partition is one replica of one topic-partition as a pure state
// machine: the leader's produce path, acks, high watermark and ISR tracking,
// and the follower's fetch and restart truncation.
//
// The core never reads a clock, a random source or the network, and never
// writes to disk. Every input (a produce, a replica fetch, a response, a tick
// of logical time, a new partition state from the controller) is a method
// call that mutates the replica and queues what must happen next; Ready hands
// that over (kafka.Handover). No method returns an answer: a request
// (Produce, ReplicaFetch, EpochEnd, Read) carries the caller's ref and is
// answered exactly once in Ready.Answers, at once or, for an acks=all
// produce, when HW passes it (answers.go). The caller applies a Ready in
// order: truncate, append and write checkpoints first, then send messages
// and deliver answers; it calls Advance once the storage part is done. A follower's
// next fetch is what tells the leader it holds the records, so "persist, then
// send" is exactly "never acknowledge what is not written".
//
// A replica reads its batches from its broker's storage (NewOnLog and
// Log), holding in memory only what it appended since the last Ready;
// tests and the model checkers build one with every batch in memory (New).
package partition

import (
	"errors"
	"fmt"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/impl/storage"
)

// errUnexpectedBatch: a fetch answer that does not continue the log. The
// answers a replica gives are impl/kafka's errors.
var errUnexpectedBatch = errors.New("fetched batch does not start at the follower's LEO")

// Truncation selects how a follower finds where its log diverges from its
// leader's (settings.Truncation, where each variant is described).
type Truncation = settings.Truncation

// The truncation variants.
const (
	TruncateToEpoch       = settings.TruncateToEpoch
	TruncateToHW          = settings.TruncateToHW
	TruncateToEpochKIP101 = settings.TruncateToEpochKIP101
	TruncateToEpochNoBump = settings.TruncateToEpochNoBump
	TruncateToEpochQuery  = settings.TruncateToEpochQuery
)

// Settings are a replica's protocol settings (settings.Partition, with
// their run-file names, Kafka's defaults and their validation).
type Settings = settings.Partition

// DefaultSettings are Kafka's defaults.
func DefaultSettings() Settings { return settings.DefaultPartition() }

// Config is one replica's configuration: its broker's settings and who it
// is.
type Config struct {
	Settings
	BrokerID int32
	// Incarnation is the broker process's incarnation (Kafka's broker
	// epoch). Fetches carry it, so a leader can tell a follower's fetch
	// from one its previous process sent before a restart (KIP-903).
	Incarnation int64
}

// DefaultConfig is broker's replica configuration with Kafka's defaults.
func DefaultConfig(broker int32) Config {
	return Config{Settings: DefaultSettings(), BrokerID: broker}
}

// Role is what a replica currently does for its partition.
type Role int

const (
	// RoleNone: no leader epoch learned yet since start, or fenced.
	RoleNone Role = iota
	// RoleLeader serves produces and fetches.
	RoleLeader
	// RoleFollower replicates from the leader.
	RoleFollower
)

// String names the role.
func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// Replica is one broker's replica of one partition.
//
// Invariants:
//  1. The log is contiguous from its log start offset (0 until retention
//     or a reset moves it): each batch starts at the one before's
//     NextOffset.
//  2. 0 <= hw <= leo().
//  3. On one leader epoch, the leader's hw never decreases.
//  4. epochs.Latest() <= epoch; on a leader, epochs holds (epoch, leaderStart).
type Replica struct {
	cfg  Config
	tp   kafka.TopicPartition
	role Role

	log       replicaLog
	hw        int64
	epochs    storage.EpochCache
	producers producers

	epoch          int32 // leader epoch this replica acts in
	leaderID       int32
	replicas       []int32
	isr            []int32 // the controller's committed ISR
	partitionEpoch int32

	requestID   uint64 // last id used for a follower request
	truncations uint64 // how many times the log lost a suffix
	leader      leaderState
	follower    followerState

	ready    Ready
	handover kafka.Handover
}

// New builds a replica that keeps every batch in memory, from batches
// contiguous from offset 0, its checkpointed HW, its leader-epoch cache
// and its producer-state snapshot (nil if none). It starts with RoleNone
// and waits for the controller to say what it is.
func New(cfg Config, tp kafka.TopicPartition, batches []record.Batch, hw int64, epochs storage.EpochCache, snap *ProducerSnapshot) (*Replica, error) {
	next := int64(0)
	for i := range batches {
		if batches[i].BaseOffset != next || batches[i].Len() <= 0 {
			return nil, fmt.Errorf("load %s: batch %d starts at %d, want %d", tp, i, batches[i].BaseOffset, next)
		}
		next = batches[i].NextOffset()
	}
	return build(cfg, tp, replicaLog{mem: batches}, hw, epochs, snap)
}

// NewOnLog builds a replica on its stored log, which it reads and never
// writes (see Log), with its checkpointed HW, leader-epoch cache and
// producer-state snapshot (nil if none). Without a snapshot, or with one
// past the log's end, it reads the whole log to rebuild the producer state.
func NewOnLog(cfg Config, tp kafka.TopicPartition, log Log, hw int64, epochs storage.EpochCache, snap *ProducerSnapshot) (*Replica, error) {
	r, err := build(cfg, tp, replicaLog{store: log}, hw, epochs, snap)
	if err == nil && r.log.err != nil {
		return nil, r.log.err
	}
	return r, err
}

func build(cfg Config, tp kafka.TopicPartition, log replicaLog, hw int64, epochs storage.EpochCache, snap *ProducerSnapshot) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Replica{cfg: cfg, tp: tp, log: log, epochs: epochs, leaderID: -1, epoch: -1, ready: Ready{StartAt: -1, Truncate: -1}}
	// Request ids start in this process's own range, so an answer to a
	// request of the previous process is never taken for one of ours.
	r.requestID = uint64(cfg.Incarnation) << 32
	// A power loss can leave the checkpoints ahead of the log: clamp them
	// to what survived (Kafka truncates the epoch cache to LEO on load),
	// and have the caller rewrite them, or the next restart trusts them.
	// Retention deletes only below the HW, so the HW is at least the log
	// start offset, though its checkpoint can lag (Kafka clamps it too).
	r.hw = min(max(hw, r.logStart()), r.leo())
	if r.hw != hw {
		r.ready.HWChanged, r.ready.HW = true, r.hw
	}
	before := len(r.epochs.Entries())
	r.epochs.TruncateFromEnd(r.leo())
	if len(r.epochs.Entries()) != before {
		r.ready.EpochsChanged = true
	}
	r.producers = r.restoreProducers(snap)
	if e, ok := r.epochs.Latest(); ok {
		r.epoch = e
	}
	return r, nil
}

// kafka.TopicPartition names the replica's partition.
func (r *Replica) TopicPartition() kafka.TopicPartition { return r.tp }

// Role reports whether the replica leads, follows or neither.
func (r *Replica) Role() Role { return r.role }

// LeaderEpoch is the epoch the replica currently acts in.
func (r *Replica) LeaderEpoch() int32 { return r.epoch }

// PartitionEpoch is the partition epoch of the state the replica acts on.
func (r *Replica) PartitionEpoch() int32 { return r.partitionEpoch }

// Leader is the broker this replica believes leads, or -1.
func (r *Replica) Leader() int32 { return r.leaderID }

// HW is the replica's high watermark.
func (r *Replica) HW() int64 { return r.hw }

// LEO is the offset after the replica's last record.
func (r *Replica) LEO() int64 { return r.leo() }

// ReadFailed reports whether a read of the replica's Log failed since its
// last Ready (which hands the failure over as ReadErr): what the read
// returned is not what the log holds.
func (r *Replica) ReadFailed() bool { return r.log.err != nil }

// LogStart is the offset of the replica's first record, which retention
// moves (the LEO when it holds none).
func (r *Replica) LogStart() int64 { return r.logStart() }

// ISR is the controller-committed ISR as the replica last learned it.
func (r *Replica) ISR() []int32 { return slices.Clone(r.isr) }

// Resolved reports whether the replica acts on a log it has reconciled
// with its leader epoch: it leads, or it follows and has finished working
// out where to truncate. A replica just restarted, or still waiting for the
// leader's epoch answer, holds a log and an HW that are leftovers; on the
// fetch path so does a follower until a fetch answer comes without
// a divergence (an empty log has nothing to reconcile).
func (r *Replica) Resolved() bool {
	switch {
	case r.role == RoleLeader:
		return true
	case r.role != RoleFollower:
		return false
	case r.cfg.Truncation.OnFetch():
		return r.follower.matched || r.leo() == r.logStart()
	}
	return !r.follower.awaitingEpoch
}

// AwaitingEpoch reports whether a follower is still asking its leader where
// an epoch ended (OffsetsForLeaderEpoch), and which epoch it asks about.
func (r *Replica) AwaitingEpoch() (epoch int32, ok bool) {
	if r.role != RoleFollower || !r.follower.awaitingEpoch {
		return -1, false
	}
	return r.follower.queryEpoch, true
}

// FollowerProgress is what a leader knows of one follower in its epoch.
type FollowerProgress struct {
	LEO         int64 // the follower's last fetch offset; -1 before its first fetch
	Incarnation int64 // the process that fetch came from
}

// FollowerProgress reports what the leader knows of follower id, for
// checkers; ok is false unless the replica leads and id is a follower.
func (r *Replica) FollowerProgress(id int32) (FollowerProgress, bool) {
	if r.role != RoleLeader {
		return FollowerProgress{}, false
	}
	f := r.leader.followers[id]
	if f == nil {
		return FollowerProgress{}, false
	}
	return FollowerProgress{LEO: f.leo, Incarnation: f.incarnation}, true
}

// Truncations counts the truncations that removed records; a checker can
// trust a log prefix it verified while this count stands still.
func (r *Replica) Truncations() uint64 { return r.truncations }

// EpochCache returns a copy of the replica's leader-epoch cache.
func (r *Replica) EpochCache() storage.EpochCache { return r.epochs.Clone() }

// UpdateState applies a partition state published by the controller. A
// higher leader epoch makes the replica leader or follower; the same epoch
// with a newer partition epoch updates the ISR; anything older is stale and
// ignored (the controller's messages can be delayed and reordered).
func (r *Replica) UpdateState(s kafka.PartitionState, now int64) {
	switch {
	case s.LeaderEpoch > r.epoch || (s.LeaderEpoch == r.epoch && r.role == RoleNone && s.Leader >= 0):
		r.replicas = slices.Clone(s.Replicas)
		r.isr = sortedClone(s.ISR)
		r.partitionEpoch = s.PartitionEpoch
		switch s.Leader {
		case r.cfg.BrokerID:
			r.becomeLeader(s.LeaderEpoch, now)
		case -1:
			r.becomeOffline(s.LeaderEpoch)
		default:
			r.becomeFollower(s.LeaderEpoch, s.Leader, now)
		}
	case s.LeaderEpoch == r.epoch && s.PartitionEpoch > r.partitionEpoch:
		if r.role == RoleLeader {
			// The controller may have dropped a dead follower on its
			// own, or this is our own proposal coming back.
			r.adoptISR(s)
			r.maybeAdvanceHW()
			return
		}
		r.replicas = slices.Clone(s.Replicas)
		r.isr = sortedClone(s.ISR)
		r.partitionEpoch = s.PartitionEpoch
	}
}

func (r *Replica) becomeOffline(epoch int32) {
	r.failPending(kafka.ErrLeaderChanged)
	r.role = RoleNone
	r.epoch = epoch
	r.leaderID = -1
	r.follower = followerState{}
	r.leader = leaderState{}
}

// Ready hands over what the caller must do next (kafka.Handover). Apply
// it in field order: the log (StartAt, Truncate, Append), checkpoints,
// then Messages and Answers; then call Advance.
func (r *Replica) Ready() Ready {
	r.handover.Take("partition " + r.tp.String())
	rd := r.ready
	rd.ReadErr, r.log.err = r.log.err, nil
	r.ready = Ready{StartAt: -1, Truncate: -1}
	return rd
}

// Advance tells the replica its last Ready was carried out.
func (r *Replica) Advance() { r.handover.Done("partition " + r.tp.String()) }

// HasReady reports whether Ready would return anything.
func (r *Replica) HasReady() bool {
	rd := &r.ready
	return rd.StartAt >= 0 || rd.Truncate >= 0 || len(rd.Append) > 0 || rd.HWChanged || rd.EpochsChanged ||
		len(rd.Messages) > 0 || len(rd.Answers) > 0 || len(rd.Events) > 0 || r.log.err != nil
}

// truncate drops every batch holding an offset >= offset and returns the new
// LEO. Batches are atomic, so an offset inside a batch drops that batch.
func (r *Replica) truncate(offset int64) int64 {
	if offset >= r.leo() {
		return r.leo()
	}
	leo := r.truncateLog(offset)
	// Appends queued in this same Ready above the new end are void.
	for len(r.ready.Append) > 0 && r.ready.Append[len(r.ready.Append)-1].LastOffset() >= leo {
		r.ready.Append = r.ready.Append[:len(r.ready.Append)-1]
	}
	if r.ready.Truncate < 0 || leo < r.ready.Truncate {
		r.ready.Truncate = leo
	}
	r.truncations++
	r.truncateProducers(leo)
	r.epochs.TruncateFromEnd(leo)
	r.ready.EpochsChanged = true
	if r.hw > leo {
		r.hw = leo
		r.ready.HWChanged = true
		r.ready.HW = leo
	}
	r.event(EventTruncated, "truncated to %d", leo)
	return leo
}

// resetTo empties the log and starts it at offset, past everything it
// held: a follower below its leader's log start, whose records up to
// there the leader no longer has, begins again at it (Kafka's
// truncateFullyAndStartAt). Its epochs and producer state go with its
// batches; its HW is the new start, since everything below it was
// committed on the leader (retention deletes only below the HW).
func (r *Replica) resetTo(offset int64) {
	r.resetLog(offset)
	r.truncations++
	r.producers = producers{}
	r.epochs = storage.EpochCache{}
	r.ready.EpochsChanged = true
	r.hw = offset
	r.ready.HWChanged, r.ready.HW = true, offset
	r.event(EventReset, "emptied to start at the leader's log start offset %d", offset)
}

// append adds a batch at LEO and queues it for storage.
func (r *Replica) append(b record.Batch) {
	if r.role == RoleLeader || r.cfg.ProducerState == ProducerStateReplicated {
		r.producers.observe(&b)
	}
	r.appendLog(b)
	if e, ok := r.epochs.Latest(); !ok || b.LeaderEpoch > e {
		r.epochs.Assign(b.LeaderEpoch, b.BaseOffset)
		r.ready.EpochsChanged = true
	}
}

func (r *Replica) setHW(hw int64) {
	if hw == r.hw {
		return
	}
	r.hw = hw
	r.ready.HW = hw
	r.ready.HWChanged = true
}

func sortedClone(s []int32) []int32 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
