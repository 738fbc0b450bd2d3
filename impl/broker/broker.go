// Package broker is one broker of the reference implementation: it hosts
// partition replicas (pure state machines from impl/partition), stores them
// through impl/storage, holds the fetches that wait for data (the long
// poll, longpoll.go) and hosts the group coordinators, deterministically.
//
// A Broker is single-threaded and does no networking of its own: messages
// come in through Handle, time through Tick, and what it sends waits in an
// outbox (TakeOutbox). The simulator drives it from one goroutine; a real
// process wraps it in a loop fed by sockets and a timer. Every replica Ready
// is applied in order: storage first, then the outbox; the failpoints sit at
// those boundaries (see failpoints.go and failpoints/README.md).
//
// # One core shape
//
// The three cores (impl/partition, impl/controller, impl/group) follow
// go.etcd.io/raft's RawNode: an input changes state and queues its
// effects; Ready hands them all over (records to append or truncate,
// checkpoints, messages to other nodes, answers to requests); the driver
// persists, advances and sends (kafka.Handover). No core method returns an
// answer: a request handed to a replica carries a ref (refs.go), the
// replica answers it exactly once in Ready.Answers, at once or after it
// waited, and apply delivers the answer to what registered the ref. That
// puts the one order "persist, then send" in one place for every answer:
// an acks=1 answer, a duplicate's and a released acks=all produce's all
// pass after the Ready that holds their records is stored, and all pass
// the same beforeProduceResponse failpoint (produce.go). Reads go the same
// way (ask), so a read that fails crashes the broker in apply before
// anything answers as if the log held nothing there.
//
// Within one replica's Ready, apply goes: storage (truncate and its sync,
// the epoch cache, append, the HW checkpoint), then Advance, then messages
// to other nodes, then the answers to requests that waited in the replica,
// then the held fetches the new HW may satisfy, and last the answer to the
// input at hand: Kafka completes its delayed produces and fetches when HW
// moves, before it answers the request that moved it. Advance comes before
// the sends because a held fetch that the Ready wakes reads the replica
// again, which takes a new Ready.
//
// # The loop
//
// Every input, a message (Handle) or a tick (Tick),
// changes the cores it reaches (replicas, group coordinators) and ends in
// settle, which carries out every Ready they queued, core by core, until
// none has one left. Each core's Ready is carried out by one function of
// the same shape (take Ready, persist, Advance, send): apply for a replica
// (apply.go), flushCoordinator for a coordinator (groups.go); the
// controller node does the same with the controller's (controllernode.go).
//
// The steps, and why each is where it is:
//
//  1. Replicas, in partition order (settleReplicas). First, because what
//     a replica decided is what everything after follows: its records are
//     stored before any answer about them leaves (apply's own order), and
//     its new role is what the coordinators follow in step 2.
//  2. Coordinators follow leadership (syncCoordinators): a coordinator is
//     loaded from its offsets partition's log where this broker now leads
//     it, and unloaded (what waited answered NOT_COORDINATOR) where it no
//     longer does. After step 1, so that a coordinator loads the log the
//     replica has stored, and before step 3, so that no answer leaves a
//     coordinator for a partition this broker no longer leads.
//  3. Coordinators, in partition order, while one has output: answers,
//     then appends handed to the offsets partition's replica, whose Ready
//     is applied at once, so that the append's answer (a refusal at once,
//     or the release when HW passes it) reaches the coordinator in the
//     same loop. A refused append makes more output (its waiting answers),
//     hence the repetition; it ends, because an append's answer makes none.
//  4. After a message, held follower fetches whose leader's log moved are
//     released (a tick releases them in expireParked, with the expired ones).
//
// Some inputs apply a replica's Ready before the step ends, where the
// order inside the step is the protocol's: a state update applies each
// replica in turn, so that each new role passes its failpoint before the
// next partition is touched; a read (ask) needs its answer to decide
// whether the fetch waits; a released follower fetch and a coordinator's
// append are each answered before the next. The loop finds those replicas
// settled and goes on.
package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// hosted is one partition replica and its storage.
type hosted struct {
	tp           kafka.TopicPartition
	replica      *partition.Replica
	log          *storage.Log
	dir          string
	hwDirty      bool
	checkpointed int64 // HW last written to the checkpoint
	snapshotAt   int64 // offset of the stored producer snapshot, -1 if none
	// lost: this replica lost committed records (lostMarker); outOfISR:
	// a state since its load left it out of the ISR (settleLoss).
	lost, outOfISR bool
}

// Broker is one broker process's state. Not safe for concurrent use.
type Broker struct {
	cfg         Config
	replicaCfg  partition.Config // every replica's
	disk        storage.Disk
	incarnation int64
	fpctx       context.Context

	now          int64
	registered   bool
	lastRegister int64
	lostData     []kafka.TopicPartition // partitions whose logs lost committed records at load (RegisterBroker.LostData)
	emptyDisk    bool                   // no partition on disk at start (RegisterBroker.EmptyDisk)
	// previous is the incarnation whose clean shutdown this start found
	// (RegisterBroker.PreviousIncarnation); 0: the last stop was not clean.
	previous       int64
	synced         bool // the previous process synced every append (RegisterBroker.Synced)
	shutdown       shutdownState
	topicConfigs   map[string]kafka.TopicConfig
	lastHeartbeat  int64
	lastCheckpoint int64
	lastRetention  int64
	// metaVersion is the last StateUpdate version applied with none
	// missing before it (Heartbeat.MetadataVersion); metaNewest the
	// newest applied at all.
	metaVersion, metaNewest uint64
	follow                  follow
	lastFlush               int64

	parts     map[kafka.TopicPartition]*hosted
	order     []kafka.TopicPartition // sorted keys of parts: iteration never depends on map order
	metadata  map[kafka.TopicPartition]kafka.PartitionState
	live      []int32
	addresses map[int32]string

	nextRef      uint64
	nextPID      int64
	waiting      map[uint64]func(partition.Reply) error // by ref (refs.go)
	fetches      []*heldFetch
	heldReplicas []*heldReplicaFetch

	// Group coordinators, one per offsets partition this broker leads.
	coords       map[kafka.TopicPartition]*group.Coordinator
	coordEpoch   map[kafka.TopicPartition]int32 // the leader epoch each was loaded in
	groupWaiters map[uint64]groupWaiter
	nextGroupReq uint64
	offsetsAsked int64 // when the offsets topic was last asked for
	rolesChanged bool  // a StateUpdate came since syncCoordinators ran

	out    []Envelope
	events []Event
	faults []*FailpointError
	pause  *FailpointError // a pause failpoint fired during this step
}

// Open starts a broker process on disk: it recovers every partition log it
// finds, loads the checkpoints, and queues its registration with the
// controller. incarnation must differ between starts of the same broker.
// fpctx carries the failpoint hook that decides whether a failpoint applies
// to this broker (failpoint.WithHook); nil means failpoints never fire.
func Open(cfg Config, disk storage.Disk, incarnation int64, now int64, fpctx context.Context) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
	}
	if fpctx == nil {
		fpctx = context.Background()
	}
	b := &Broker{
		cfg:         cfg,
		replicaCfg:  partition.Config{Settings: cfg.Settings.Partition, BrokerID: int32(cfg.ID), Incarnation: incarnation},
		disk:        disk,
		incarnation: incarnation,
		fpctx:       fpctx,
		now:         now,
		parts:       map[kafka.TopicPartition]*hosted{},
		metadata:    map[kafka.TopicPartition]kafka.PartitionState{},
		waiting:     map[uint64]func(partition.Reply) error{},
		shutdown:    shutdownState{begun: -1},

		coords:       map[kafka.TopicPartition]*group.Coordinator{},
		coordEpoch:   map[kafka.TopicPartition]int32{},
		groupWaiters: map[uint64]groupWaiter{},
	}
	b.follow.init(cfg.Voters, now)
	// The marker goes before anything is written: a crash of this
	// process must not pass for a clean stop.
	previous, err := takeCleanShutdown(disk)
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
	}
	b.previous = previous
	tps, err := listPartitions(disk)
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
	}
	marked, err := takeVerifyMarker(disk)
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
	}
	for _, tp := range tps {
		if _, err := b.load(tp, cfg.LogVerifyOnStart || marked); err != nil {
			return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
		}
	}
	if marked {
		if err := clearVerifyMarker(disk); err != nil {
			return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
		}
	}
	b.emptyDisk = len(tps) == 0
	if b.synced, err = swapSyncMarker(disk, cfg.FlushEveryAppend); err != nil {
		return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
	}
	b.sendRegister()
	return b, nil
}

// ID is the broker's node id.
func (b *Broker) ID() NodeID { return b.cfg.ID }

// Incarnation is this process's incarnation number.
func (b *Broker) Incarnation() int64 { return b.incarnation }

// Replica returns the broker's replica of tp, if it hosts one. Callers must
// only read it (the simulator's invariant checks do).
func (b *Broker) Replica(tp kafka.TopicPartition) (*partition.Replica, bool) {
	h, ok := b.parts[tp]
	if !ok {
		return nil, false
	}
	return h.replica, true
}

// Partitions lists the partitions the broker hosts, sorted.
func (b *Broker) Partitions() []kafka.TopicPartition { return slices.Clone(b.order) }

// TakeOutbox returns the messages queued since the last call.
func (b *Broker) TakeOutbox() []Envelope {
	out := b.out
	b.out = nil
	return out
}

// TakeEvents returns the protocol events since the last call, for traces.
func (b *Broker) TakeEvents() []Event {
	ev := b.events
	b.events = nil
	return ev
}

func (b *Broker) send(to NodeID, msg kafka.Message) {
	if to == ControllerID {
		to = b.controller()
	}
	b.out = append(b.out, Envelope{From: b.cfg.ID, To: to, Msg: msg})
}

func (b *Broker) sendRegister() {
	b.lastRegister = b.now
	b.send(ControllerID, RegisterBroker{Incarnation: b.incarnation, Address: b.cfg.Address, LostData: slices.Clone(b.lostData), EmptyDisk: b.emptyDisk, PreviousIncarnation: b.previous, Synced: b.synced})
}

// Handle processes one message. A non-nil error is a *FailpointError: a
// failpoint fired and the node must crash, lose power or pause at this exact
// point; the caller discards the outbox of this call.
func (b *Broker) Handle(env Envelope, now int64) error {
	b.now = max(b.now, now)
	if err := b.dispatch(env); err != nil {
		return b.finish(err)
	}
	if err := b.settle(); err != nil {
		return b.finish(err)
	}
	// Whatever this message changed may release held follower fetches.
	return b.finish(b.releaseReplicaFetches())
}

// withReplica gives tp's replica an input; the loop applies what it made.
func (b *Broker) withReplica(tp kafka.TopicPartition, fn func(*partition.Replica)) error {
	if h, ok := b.parts[tp]; ok {
		fn(h.replica)
	}
	return nil
}

// Tick advances logical time: heartbeats, replica timers, parked requests
// that expire, and the periodic HW checkpoint.
func (b *Broker) Tick(now int64) error {
	if err := b.tick(now); err != nil {
		return b.finish(err)
	}
	b.tickGroups()
	return b.finish(b.settle())
}

func (b *Broker) tick(now int64) error {
	b.now = max(b.now, now)
	b.checkController()
	if !b.registered && b.now-b.lastRegister >= b.cfg.HeartbeatIntervalMs {
		b.sendRegister()
	}
	if b.registered && b.heartbeatDue() {
		b.sendHeartbeat()
	}
	for _, tp := range b.order {
		b.parts[tp].replica.Tick(b.now)
	}
	// The loop's first step ahead of time: held fetches expire against
	// what the ticks stored and sent.
	if err := b.settleReplicas(); err != nil {
		return err
	}
	if err := b.expireParked(); err != nil {
		return err
	}
	if b.cfg.FlushIntervalMs > 0 && b.now-b.lastFlush >= b.cfg.FlushIntervalMs {
		b.lastFlush = b.now
		if err := b.failpoint(FPBeforeFsync); err != nil {
			return err
		}
		for _, tp := range b.order {
			if err := b.parts[tp].log.Sync(); err != nil {
				return b.storageFailure(tp, err)
			}
		}
	}
	if b.now-b.lastRetention >= b.cfg.LogRetentionCheckIntervalMs {
		b.lastRetention = b.now
		for _, tp := range b.order {
			if err := b.retain(b.parts[tp]); err != nil {
				return err
			}
		}
	}
	if b.cfg.HWCheckpointIntervalMs == 0 || b.now-b.lastCheckpoint >= b.cfg.HWCheckpointIntervalMs {
		// Rolled segments are synced and the recovery point moved past
		// them with the checkpoints, as Kafka flushes a rolled segment in
		// the background: a power loss just after a roll can still take
		// the old segment's tail.
		for _, tp := range b.order {
			if err := b.parts[tp].log.SyncRolled(); err != nil {
				return b.storageFailure(tp, err)
			}
		}
	}
	if b.cfg.HWCheckpointIntervalMs > 0 && b.now-b.lastCheckpoint >= b.cfg.HWCheckpointIntervalMs {
		b.lastCheckpoint = b.now
		for _, tp := range b.order {
			if err := b.checkpointHW(b.parts[tp]); err != nil {
				return err
			}
			if err := b.snapshotProducers(b.parts[tp]); err != nil {
				return err
			}
		}
	}
	return nil
}

// handleStateUpdate applies what the controller sent. Metadata never goes
// back: an update from a deposed controller is dropped, and one older
// than the newest applied (a reordered one) gives only the partition
// states newer than the broker's, never its live set, addresses or
// configs.
func (b *Broker) handleStateUpdate(from NodeID, m StateUpdate) error {
	if m.Incarnation != b.incarnation || !b.fromController(from, m.ControllerEpoch) {
		return nil // addressed to a previous life of this broker, or from a deposed controller
	}
	b.rolesChanged = true
	older := m.Version < b.metaNewest
	switch {
	case m.Full && !older:
		b.registered = true
		b.lastHeartbeat = b.now
		b.metaVersion = m.Version
	case m.Prev == b.metaVersion:
		b.metaVersion = max(b.metaVersion, m.Version)
	} // a gap: applied all the same, and the next heartbeat says so
	b.metaNewest = max(b.metaNewest, m.Version)
	if m.LiveBrokers != nil && !older {
		b.live = slices.Clone(m.LiveBrokers)
	}
	if m.Addresses != nil && !older {
		b.addresses = maps.Clone(m.Addresses)
	}
	for t, cfg := range m.TopicConfigs {
		// Merged, not replaced: a topic's config is set once, at its
		// creation, so an update that arrives late cannot take one back.
		if b.topicConfigs == nil {
			b.topicConfigs = map[string]kafka.TopicConfig{}
		}
		b.topicConfigs[t] = cfg
	}
	for _, s := range m.States {
		tp := s.TopicPartition
		if old, ok := b.metadata[tp]; ok && !s.NewerThan(old) {
			continue
		}
		b.metadata[tp] = s.Clone()
		if !slices.Contains(s.Replicas, int32(b.cfg.ID)) {
			continue
		}
		h, ok := b.parts[tp]
		if !ok {
			var err error
			if h, err = b.load(tp, false); err != nil {
				// A storage failure is fatal to the process, as in Kafka.
				return b.storageFailure(tp, err)
			}
		}
		epochBefore := h.replica.LeaderEpoch()
		before := h.replica.Role()
		if err := b.settleLoss(h, s); err != nil {
			return err
		}
		h.replica.UpdateState(s, b.now)
		if err := b.applyState(h, before, epochBefore); err != nil {
			return err
		}
	}
	return nil
}

func (b *Broker) handleEpochEnd(from NodeID, m partition.EpochEndRequest) error {
	h, ok := b.parts[m.TopicPartition]
	if !ok {
		b.send(from, partition.EpochEndResponse{TopicPartition: m.TopicPartition, ID: m.ID, Err: kafka.ErrNotLeader, Epoch: -1, EndOffset: -1})
		return nil
	}
	ref := await(b, func(a partition.EpochEndResponse) error { b.send(from, a); return nil })
	h.replica.EpochEnd(ref, m)
	return nil
}

func (b *Broker) handleListOffsets(from NodeID, m ListOffsetsRequest) {
	resp := ListOffsetsResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, Offset: -1, LeaderEpoch: -1}
	h, ok := b.parts[m.TopicPartition]
	switch {
	case !ok:
		resp.Err = b.unknownOrNotLeader(m.TopicPartition)
	case h.replica.Role() != partition.RoleLeader:
		resp.Err = kafka.ErrNotLeader
	default:
		resp.LeaderEpoch = h.replica.LeaderEpoch()
		resp.Offset = h.replica.LogStart()
		if m.Latest {
			resp.Offset = h.replica.HW()
		}
	}
	b.send(from, resp)
}

// handleClientEpochEnd answers a client's OffsetForLeaderEpoch from the
// leader's epoch cache, fenced by the epoch the client names (KIP-320).
func (b *Broker) handleClientEpochEnd(from NodeID, m EpochEndRequest) error {
	resp := EpochEndResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, LeaderEpoch: -1, EndOffset: -1}
	h, ok := b.parts[m.TopicPartition]
	if !ok {
		resp.Err = b.unknownOrNotLeader(m.TopicPartition)
		b.send(from, resp)
		return nil
	}
	current := m.CurrentLeaderEpoch
	if current < 0 {
		// -1: the client does not fence (Kafka's
		// NO_PARTITION_LEADER_EPOCH); only the role is checked.
		current = h.replica.LeaderEpoch()
	}
	a, err := ask[partition.EpochEndResponse](b, h, func(ref uint64) {
		h.replica.EpochEnd(ref, partition.EpochEndRequest{TopicPartition: m.TopicPartition, Epoch: m.LeaderEpoch, CurrentLeaderEpoch: current})
	})
	if err != nil {
		return err
	}
	switch {
	case a.Err != nil:
		resp.Err = a.Err
	case h.replica.Role() != partition.RoleLeader:
		resp.Err = kafka.ErrNotLeader
	default:
		resp.LeaderEpoch, resp.EndOffset = a.Epoch, a.EndOffset
	}
	b.send(from, resp)
	return nil
}

func (b *Broker) unknownOrNotLeader(tp kafka.TopicPartition) error {
	if _, ok := b.metadata[tp]; ok {
		return kafka.ErrNotLeader
	}
	return kafka.ErrUnknownTopicOrPartition
}

func (b *Broker) metadataResponse(corr uint64) MetadataResponse {
	resp := MetadataResponse{Correlation: corr, LiveBrokers: slices.Clone(b.live), Addresses: maps.Clone(b.addresses)}
	keys := make([]kafka.TopicPartition, 0, len(b.metadata))
	for tp := range b.metadata {
		keys = append(keys, tp)
	}
	slices.SortFunc(keys, kafka.TopicPartition.Compare)
	for _, tp := range keys {
		resp.Partitions = append(resp.Partitions, b.metadata[tp].Clone())
	}
	return resp
}

// pidBits is how many low bits of a producer id count producers within one
// broker process; the high bits are the process's incarnation.
const pidBits = 20

// initProducerID hands out a producer id. A PID is the broker's incarnation
// in the high bits and a counter in the low ones, so it is unique across the
// cluster (incarnations are, see controller.RegisterBroker) and is never
// reused after a restart (a restarted broker has a new incarnation), with no
// round trip to the controller (KIP-730's blocks, with the block being the
// process). The epoch of a new PID is 0.
func (b *Broker) initProducerID(m InitProducerIDRequest) InitProducerIDResponse {
	if b.nextPID >= 1<<pidBits-1 {
		return InitProducerIDResponse{Correlation: m.Correlation, ProducerID: -1, Err: kafka.ErrProducerIDsExhausted}
	}
	b.nextPID++
	return InitProducerIDResponse{Correlation: m.Correlation, ProducerID: b.incarnation<<pidBits | b.nextPID}
}
