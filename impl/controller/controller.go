// Package controller is the cluster controller as a pure state machine: it
// tracks broker liveness, assigns replicas, elects partition leaders and
// records ISR changes, bumping the leader and partition epochs that fence
// stale leaders and stale ISR updates.
//
// Like go.etcd.io/raft's RawNode, it reads no clock, no random source and no
// network, and starts no goroutine: the caller passes logical time (`now`, in
// milliseconds) into every call and collects what must be sent with Ready
// (the states, recoveries' questions and answers to brokers), then calls
// Advance (kafka.Handover). A broker's AlterPartition and CreateTopic are
// answered only there, after the states they made. Registration,
// heartbeats and a controlled shutdown return whether the controller
// accepted them: what the broker hears back (the whole state, or that it
// may stop) is the controller node's, decided from the metadata versions
// each broker has applied, which the node counts (as Kafka's
// BrokerHeartbeatManager counts metadata log offsets); they move into the
// core with the metadata log of a controller quorum.
// Every pass over brokers or partitions runs in sorted order, so the same
// sequence of calls yields the same Ready and Describe output, bit for bit.
// A Controller is not safe for concurrent use.
//
// Every durable change also leaves Ready as a metadata Record
// (records.go): the new whole value of one topic, broker or partition,
// which a controller quorum's log would carry as KRaft's does (KIP-631).
// A follower that applies the records in order to an Image (image.go)
// holds the controller's Snapshot without running its decisions; an
// Image refuses a record that would take the metadata back (a lower epoch
// or incarnation) or break it. Records are full-value upserts, not
// KRaft's deltas (PartitionChangeRecord): Ready finds them by comparing
// the durable state with what it recorded last, so no change goes
// unrecorded, and replay reaches the same state; they cost bigger
// records.
//
// The rules follow KRaft's ReplicationControlManager, simplified where the
// simplification is written down:
//   - A broker is dead once SessionTimeoutMs passes without a heartbeat. A
//     dead broker leaves every ISR unless it is the last member; it stays so
//     that a clean election can pick it when it returns.
//   - All partitions that lost their leader in one Tick are re-elected in one
//     batch: the first replica in assignment order that is alive and in the
//     ISR leads; failing that, the first live eligible leader replica
//     (KIP-966, with EligibleMinISR); failing that, with
//     UncleanLeaderElection, the first live replica leads with ISR =
//     {itself}; failing that, the partition is offline. A replica that
//     lost the partition's committed records is elected by none of these
//     while another can be. With UncleanRecovery, which replaces
//     UncleanLeaderElection, the controller asks an offline partition's
//     live replicas where their logs end and elects the one whose end
//     ranks highest: the later last epoch, then the longer log (KIP-966's
//     unclean recovery; recovery.go).
//   - A broker that registers with a new incarnation restarted and may have
//     lost unsynced data, so it is first treated as dead (KIP-903: a restarted
//     replica must not stay in the ISR on the strength of its old state), then
//     as alive.
//   - AlterPartition (KIP-497) lets a leader change the ISR, fenced by the
//     leader epoch, the partition epoch and the broker's incarnation.
package controller

import (
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/settings"
)

// ErrInvalidConfig is a configuration the controller cannot run with. The
// errors it answers brokers with are impl/kafka's.
var ErrInvalidConfig = settings.ErrInvalidController

// Config holds the controller's settings (settings.Controller, with their
// run-file names, Kafka's defaults and their validation).
type Config = settings.Controller

// DefaultConfig is Kafka's default: a 9 s broker session, and KIP-966's
// 5 minutes for an unclean recovery's answers (off, as it is by default).
func DefaultConfig() Config { return settings.DefaultController() }

// broker is the controller's record of one broker.
//
// Invariants:
//  1. incarnation never decreases.
//  2. lastHeartbeat never decreases.
type broker struct {
	id            int32
	incarnation   int64
	lastHeartbeat int64
	alive         bool
	// lost are the partitions whose logs this incarnation recovered with
	// committed records lost (a damaged or shortened log): it may not lead
	// them, cleanly or not while another replica can, until it is back in
	// their ISR, which it joins only once it holds the HW again.
	lost map[kafka.TopicPartition]bool
	// suspect are the partitions this incarnation may have lost unsynced
	// records of: it registered a restart without Registration.Synced
	// (KIP-966's unclean shutdown) and has not been back in their ISR
	// since. It joins no ELR, and as the last ISR member it yields to a
	// live eligible leader replica (eligible.go).
	suspect map[kafka.TopicPartition]bool
	// shuttingDown: this incarnation asked for a controlled shutdown
	// (shutdown.go). It stays alive until its session ends, but leads
	// nothing, leaves every ISR it is not the last member of, and joins
	// none.
	shuttingDown bool
	// address is where the broker said, as it registered, clients reach
	// it ("" until one says).
	address string
}

// Registration is what a broker's process says of itself as it registers.
type Registration struct {
	// Lost names the partitions whose logs it recovered with committed
	// records lost (a damaged or shortened log).
	Lost []kafka.TopicPartition
	// PreviousIncarnation is the incarnation whose clean shutdown the
	// process found the marker of (0: none): KIP-966's
	// PreviousBrokerEpoch.
	PreviousIncarnation int64
	// Synced: its previous process synced every append before reporting
	// it (log.flush.interval.messages=1), so even a crash lost nothing it
	// had reported beyond what Lost names.
	Synced bool
	// Address is the broker's advertised address; empty keeps the one
	// registered before.
	Address string
}

// Clean reports whether the registration follows a clean stop of the
// incarnation registered before it (registered): its marker names that
// incarnation (Kafka's rule, KIP-966), or it synced every append (the
// reference's own: such a process loses nothing it reported, however it
// stops). Without it, a restart may have lost what the broker had
// reported, and drops it from every ELR (KIP-966's unclean-shutdown rule).
func (r Registration) Clean(registered int64) bool {
	return r.Synced || (r.PreviousIncarnation != 0 && r.PreviousIncarnation == registered)
}

// Controller is the cluster controller. Create it with New.
type Controller struct {
	cfg Config

	// brokers holds every broker ever registered; a dead broker stays, so
	// that its return can be told apart from a restart by its incarnation.
	brokers map[int32]*broker

	// topics maps a topic to its partition count.
	topics map[string]int32
	// configs holds the settings of the topics that have their own.
	configs map[string]kafka.TopicConfig

	// partitions holds the state of every partition; see CheckInvariants.
	//
	// Invariants (on top of kafka.PartitionState's, between calls):
	//  1. Leader != kafka.NoLeader implies the leader is alive.
	//  2. Leader == kafka.NoLeader implies no ISR member is alive and, with
	//     UncleanLeaderElection, no replica is alive; with UncleanRecovery
	//     instead, an unclean recovery is in flight if a replica is.
	//  3. An ISR that holds a dead broker holds nothing else.
	//  4. Every replica was a registered broker when the partition was created.
	partitions map[kafka.TopicPartition]*kafka.PartitionState

	// order holds the keys of partitions, sorted by kafka.TopicPartition.Compare, so that every
	// pass over partitions is deterministic.
	order []kafka.TopicPartition

	// events are the decisions made since the last Ready, in order.
	events   []Event
	handover kafka.Handover
	// answers are the answers to brokers' requests since the last Ready.
	answers []Answer

	// pending maps a broker to the partitions whose state it must be sent at
	// the next Ready; only the newest state is sent, as it carries the epochs.
	pending map[int32]map[kafka.TopicPartition]struct{}

	// elr holds each partition's eligible leader replicas (KIP-966), sorted;
	// see eligible.go. Absent: none.
	elr map[kafka.TopicPartition][]int32

	// recoveries holds the unclean recoveries in flight, one per offline
	// partition with a live replica (recovery.go); asks are their
	// questions for the next Ready. Neither is durable: a restored
	// controller starts its recoveries again, as KIP-966's does after a
	// failover.
	recoveries map[kafka.TopicPartition]*recovery
	asks       []kafka.ReplicaLogInfoRequest

	// recorded is the durable state as the records handed out so far
	// (Ready.Records) say it, and as a restored controller started from:
	// the next Ready records what differs from it (records.go).
	recorded *Image
}

// New returns a controller with no brokers and no topics.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Controller{
		cfg:        cfg,
		brokers:    make(map[int32]*broker),
		topics:     make(map[string]int32),
		configs:    make(map[string]kafka.TopicConfig),
		partitions: make(map[kafka.TopicPartition]*kafka.PartitionState),
		pending:    make(map[int32]map[kafka.TopicPartition]struct{}),
		elr:        make(map[kafka.TopicPartition][]int32),
		recoveries: make(map[kafka.TopicPartition]*recovery),
		recorded:   NewImage(),
	}, nil
}

// Config returns the controller's configuration.
func (c *Controller) Config() Config { return c.cfg }

// Partition returns a copy of one partition's state.
func (c *Controller) Partition(tp kafka.TopicPartition) (kafka.PartitionState, bool) {
	p, ok := c.partitions[tp]
	if !ok {
		return kafka.PartitionState{}, false
	}
	return p.Clone(), true
}

// Metadata returns a copy of every partition's state, sorted by topic, then
// partition.
func (c *Controller) Metadata() []kafka.PartitionState {
	out := make([]kafka.PartitionState, 0, len(c.order))
	for _, tp := range c.order {
		out = append(out, c.partitions[tp].Clone())
	}
	return out
}

// Topics returns the names of all topics, sorted.
func (c *Controller) Topics() []string { return slices.Sorted(maps.Keys(c.topics)) }

// LiveBrokers returns the ids of the brokers currently alive, sorted.
func (c *Controller) LiveBrokers() []int32 {
	var out []int32
	for _, id := range c.brokerIDs() {
		if c.brokers[id].alive {
			out = append(out, id)
		}
	}
	return out
}

// IsAlive reports whether broker id is registered and alive.
func (c *Controller) IsAlive(id int32) bool {
	b, ok := c.brokers[id]
	return ok && b.alive
}

// active reports whether broker id is alive and not in a controlled
// shutdown: whether it may lead and stay in an ISR beside others.
func (c *Controller) active(id int32) bool {
	b, ok := c.brokers[id]
	return ok && b.alive && !b.shuttingDown
}

// Incarnation returns the registered incarnation of broker id.
func (c *Controller) Incarnation(id int32) (int64, bool) {
	b, ok := c.brokers[id]
	if !ok {
		return 0, false
	}
	return b.incarnation, true
}

// Addresses returns each broker's address as it last registered one, nil
// when none is known.
func (c *Controller) Addresses() map[int32]string {
	var out map[int32]string
	for id, b := range c.brokers {
		if b.address != "" {
			if out == nil {
				out = map[int32]string{}
			}
			out[id] = b.address
		}
	}
	return out
}

// brokerIDs returns the ids of all registered brokers, sorted.
func (c *Controller) brokerIDs() []int32 { return slices.Sorted(maps.Keys(c.brokers)) }

// emit records an event for the next Ready.
func (c *Controller) emit(e Event) { c.events = append(c.events, e) }

// queue marks p's state to be sent to each of its live replicas. Dead
// replicas get everything they replicate when they return (queueAll).
func (c *Controller) queue(p *kafka.PartitionState) {
	for _, r := range p.Replicas {
		if c.IsAlive(r) {
			c.queueFor(r, p.TopicPartition)
		}
	}
}

// queueAll marks every partition that broker id replicates to be sent to it:
// a broker that (re)joins knows nothing of what changed while it was away.
func (c *Controller) queueAll(id int32) {
	for _, tp := range c.order {
		if slices.Contains(c.partitions[tp].Replicas, id) {
			c.queueFor(id, tp)
		}
	}
}

func (c *Controller) queueFor(id int32, tp kafka.TopicPartition) {
	set, ok := c.pending[id]
	if !ok {
		set = make(map[kafka.TopicPartition]struct{})
		c.pending[id] = set
	}
	set[tp] = struct{}{}
}

// Advance tells the controller its last Ready was carried out.
func (c *Controller) Advance() { c.handover.Done("controller") }

// HasReady reports whether Ready would return something.
func (c *Controller) HasReady() bool {
	if len(c.events) > 0 || len(c.asks) > 0 || len(c.answers) > 0 {
		return true
	}
	for id, set := range c.pending {
		if len(set) > 0 && c.IsAlive(id) {
			return true
		}
	}
	return c.hasRecords()
}

// Ready hands over the events decided, the records of what durable
// changed, the partition states to send and the recoveries' questions
// since the previous call (kafka.Handover); then call Advance. States are
// sent only to live replicas, and only their newest version.
func (c *Controller) Ready() Ready {
	c.handover.Take("controller")
	rd := Ready{Events: c.events, Records: c.takeRecords(), Asks: c.asks, Answers: c.answers}
	c.events, c.asks, c.answers = nil, nil, nil
	for _, id := range slices.Sorted(maps.Keys(c.pending)) {
		if !c.IsAlive(id) {
			continue
		}
		tps := slices.SortedFunc(maps.Keys(c.pending[id]), kafka.TopicPartition.Compare)
		u := Update{Broker: id, States: make([]kafka.PartitionState, 0, len(tps))}
		for _, tp := range tps {
			u.States = append(u.States, c.partitions[tp].Clone())
		}
		rd.Updates = append(rd.Updates, u)
	}
	clear(c.pending)
	return rd
}
