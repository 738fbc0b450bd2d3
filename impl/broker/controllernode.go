package broker

import (
	"slices"
	"sync"

	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// ControllerNode hosts the pure controller on the network: it turns
// registrations, heartbeats, ISR proposals and topic requests into
// controller calls, and the controller's Ready into StateUpdates.
//
// Every state change is sent to every live broker, not only to replicas, so
// that any broker can answer a client's metadata request.
type ControllerNode struct {
	c      *controller.Controller
	out    []Envelope
	events []controller.Event
	// resync holds the brokers that must be sent the full state at their
	// next heartbeat: after a restart from a snapshot, updates the previous
	// controller process sent may never have arrived.
	resync map[int32]bool
	// told is the live set and address book brokers were last sent: a
	// change is sent to every live broker even when no partition changed,
	// so that any broker's metadata lists the brokers there are.
	toldLive  []int32
	addrGen   int // counts changes of the address book
	toldAddrs int // addrGen when brokers were last sent it
	// version counts the updates sent (StateUpdate.Version); heard is the
	// version as of each broker's previous heartbeat. A broker whose
	// heartbeat reports less than that has lost an update sent a whole
	// heartbeat interval ago, not merely one still on its way.
	version uint64
	heard   map[int32]uint64
	// reported is the last metadata version each broker said it applied
	// (its registration's full state, then its heartbeats); stopping
	// maps a broker in a controlled shutdown to the version that carried
	// its moved leaderships. It may stop once every active broker has
	// reported that version (Kafka's controlledShutdownOffset against
	// the lowest active broker's metadata offset).
	reported map[int32]uint64
	stopping map[int32]uint64
}

// NewControllerNode starts a controller with cfg.
func NewControllerNode(cfg controller.Config) (*ControllerNode, error) {
	c, err := controller.New(cfg)
	if err != nil {
		return nil, err
	}
	return &ControllerNode{c: c, resync: map[int32]bool{}, heard: map[int32]uint64{},
		reported: map[int32]uint64{}, stopping: map[int32]uint64{}}, nil
}

// RestoreControllerNode starts a controller from a snapshot its previous
// process saved (see Snapshot). Brokers keep their incarnations and get a
// session timeout from now to be heard from; each is sent the full state at
// its next heartbeat.
func RestoreControllerNode(cfg controller.Config, snap ControllerSnapshot, now int64) (*ControllerNode, error) {
	// A snapshot written before the controller kept addresses has them
	// beside its brokers only.
	snap.Controller.Brokers = slices.Clone(snap.Controller.Brokers)
	for i, b := range snap.Controller.Brokers {
		if b.Address == "" {
			snap.Controller.Brokers[i].Address = snap.Addresses[b.ID]
		}
	}
	c, err := controller.Restore(cfg, snap.Controller, now)
	if err != nil {
		return nil, err
	}
	n := &ControllerNode{c: c, resync: map[int32]bool{}, heard: map[int32]uint64{},
		reported: map[int32]uint64{}, stopping: map[int32]uint64{}}
	for _, b := range snap.Controller.Brokers {
		n.resync[b.ID] = true
	}
	return n, nil
}

// ControllerSnapshot is everything a controller process must keep across its
// own restart: the controller's durable state, which holds the brokers'
// addresses, and those again by themselves, as snapshots written before
// the controller kept them have them.
type ControllerSnapshot struct {
	Controller controller.Snapshot
	Addresses  map[int32]string
}

// Snapshot returns the node's durable state. A real controller process
// writes it (atomically) after every step that changed it and before it
// sends anything, so what brokers were told is never newer than the disk.
func (n *ControllerNode) Snapshot() ControllerSnapshot {
	return ControllerSnapshot{Controller: n.c.Snapshot(), Addresses: n.c.Addresses()}
}

// Controller exposes the state machine for reading (invariant checks).
func (n *ControllerNode) Controller() *controller.Controller { return n.c }

// TakeOutbox returns the messages queued since the last call.
func (n *ControllerNode) TakeOutbox() []Envelope {
	out := n.out
	n.out = nil
	return out
}

// TakeEvents returns the controller's decisions since the last call.
func (n *ControllerNode) TakeEvents() []controller.Event {
	ev := n.events
	n.events = nil
	return ev
}

// replicaOf lists the partitions broker id is a replica of.
func (n *ControllerNode) replicaOf(id int32) []kafka.TopicPartition {
	var tps []kafka.TopicPartition
	for _, p := range n.c.Metadata() {
		if slices.Contains(p.Replicas, id) {
			tps = append(tps, p.TopicPartition)
		}
	}
	return tps
}

func (n *ControllerNode) send(to NodeID, msg kafka.Message) {
	n.out = append(n.out, Envelope{From: ControllerID, To: to, Msg: msg})
}

// Handle processes one message (controllerHandlers), then sends what it
// changed.
func (n *ControllerNode) Handle(env Envelope, now int64) {
	_, _ = controllerHandlers().Handle(fromBroker{n: n, from: env.From, now: now}, env.Msg)
	n.flush()
}

// fromBroker is what the controller's handler gets besides its message:
// the node, the sender, and the time.
type fromBroker struct {
	n    *ControllerNode
	from NodeID
	now  int64
}

// controllerHandlers is the controller's table of what it does with each
// kind of message it receives, all from brokers. A handler that sends an
// answer first sends the changes it made (flush), so that a broker never
// learns of an outcome before the state it produced.
var controllerHandlers = sync.OnceValue(func() *kafka.Handlers[fromBroker] {
	h := &kafka.Handlers[fromBroker]{}
	kafka.On(h, func(in fromBroker, m RegisterBroker) error { in.n.register(in.from, m, in.now); return nil })
	kafka.On(h, func(in fromBroker, m Heartbeat) error { in.n.heartbeat(in.from, m, in.now); return nil })
	kafka.On(h, func(in fromBroker, m kafka.AlterPartition) error {
		m.LeaderID = int32(in.from) // the sender is who the network says
		in.n.c.AlterPartition(m, in.now)
		in.n.flush()
		return nil
	})
	kafka.On(h, func(in fromBroker, m kafka.ReplicaLogInfo) error {
		m.BrokerID = int32(in.from)          // the sender is who the network says
		_ = in.n.c.ReplicaLogInfo(m, in.now) // refused: an answer to a recovery that moved on
		return nil
	})
	kafka.On(h, func(in fromBroker, m CreateTopic) error {
		in.n.c.CreateTopic(int32(in.from), m, in.now)
		in.n.flush() // the states, then the answer
		return nil
	})
	kafka.On(h, func(in fromBroker, m MetadataRequest) error {
		c := in.n.c
		in.n.send(in.from, MetadataResponse{Correlation: m.Correlation, Partitions: c.Metadata(), LiveBrokers: c.LiveBrokers(), Addresses: in.n.addressBook()})
		return nil
	})
	return h
})

// register admits a new broker process and sends it the whole state.
func (n *ControllerNode) register(from NodeID, m RegisterBroker, now int64) {
	lost := m.LostData
	if m.EmptyDisk {
		lost = n.replicaOf(int32(from))
	}
	reg := controller.Registration{Lost: lost, PreviousIncarnation: m.PreviousIncarnation, Synced: m.Synced, Address: m.Address}
	before := n.c.Addresses()[int32(from)]
	if err := n.c.Register(int32(from), m.Incarnation, now, reg); err != nil {
		return // a delayed registration of an earlier process
	}
	if n.c.Addresses()[int32(from)] != before {
		n.addrGen++
	}
	delete(n.resync, int32(from))
	delete(n.stopping, int32(from))
	n.flush()
	n.heard[int32(from)] = n.version
	n.reported[int32(from)] = n.version
	n.sendFull(from, m.Incarnation)
}

// heartbeat keeps a broker's session, or begins its controlled shutdown;
// a broker that fell behind the updates gets the whole state again.
func (n *ControllerNode) heartbeat(from NodeID, m Heartbeat, now int64) {
	id := int32(from)
	if m.WantShutDown {
		n.controlledShutdown(id, m, now)
		return
	}
	if n.c.Heartbeat(id, m.Incarnation, now) != nil {
		return // refused: the broker re-registers
	}
	n.reported[id] = max(n.reported[id], m.MetadataVersion)
	behind := m.MetadataVersion < n.heard[id]
	n.heard[id] = n.version
	if n.resync[id] || behind {
		delete(n.resync, id)
		n.flush()
		n.sendFull(from, m.Incarnation)
	}
}

// controlledShutdown answers a heartbeat that asks to shut down
// (controller.ControlledShutdown): the broker may stop once it leads
// nothing and every active broker has applied the update that moved its
// leaderships; the controller then fences it.
func (n *ControllerNode) controlledShutdown(id int32, m Heartbeat, now int64) {
	leadsNothing, err := n.c.ControlledShutdown(id, m.Incarnation, now)
	if err != nil {
		return // another process's, or an unknown broker's
	}
	n.flush() // the moved leaderships go out before any answer
	n.reported[id] = max(n.reported[id], m.MetadataVersion)
	if _, ok := n.stopping[id]; !ok {
		n.stopping[id] = n.version
	}
	ok := leadsNothing && n.c.IsAlive(id)
	for _, b := range n.c.LiveBrokers() {
		if b != id && !n.c.ShuttingDown(b) && n.reported[b] < n.stopping[id] {
			ok = false // b may not know yet that it leads
		}
	}
	if ok {
		if err := n.c.ShutDown(id, m.Incarnation, now); err == nil {
			n.flush()
		}
	}
	done := leadsNothing && !n.c.IsAlive(id)
	n.send(NodeID(id), ShutdownAnswer{Incarnation: m.Incarnation, ShouldShutDown: done})
}

func (n *ControllerNode) sendFull(to NodeID, incarnation int64) {
	n.send(to, StateUpdate{
		Incarnation: incarnation,
		Version:     n.version,
		Full:        true,
		States:      n.c.Metadata(),
		LiveBrokers: n.c.LiveBrokers(),
		Addresses:   n.addressBook(),

		TopicConfigs: n.c.TopicConfigs(),
	})
}

// addressBook is the registered addresses, nil when none is known (the
// simulator), so that StateUpdates there stay as they were.
func (n *ControllerNode) addressBook() map[int32]string { return n.c.Addresses() }

// Tick advances logical time: session expiry and the elections it causes.
func (n *ControllerNode) Tick(now int64) {
	n.c.Tick(now)
	n.flush()
}

// flush turns the controller's Ready into StateUpdates for all live
// brokers, and its unclean recoveries' questions into messages to the
// replicas asked.
func (n *ControllerNode) flush() {
	live := n.c.LiveBrokers()
	membership := !slices.Equal(live, n.toldLive) || n.addrGen != n.toldAddrs
	if !n.c.HasReady() && !membership {
		return
	}
	n.toldLive, n.toldAddrs = live, n.addrGen
	var rd controller.Ready
	if n.c.HasReady() {
		rd = n.c.Ready()
		defer n.c.Advance()
	}
	n.events = append(n.events, rd.Events...)
	// The states go first: a replica asked where its log ends learns as
	// soon that the partition is offline.
	n.sendStates(rd, live, membership)
	for _, a := range rd.Asks {
		n.send(NodeID(a.BrokerID), a)
	}
	for _, a := range rd.Answers {
		n.send(NodeID(a.Broker), a.Msg)
	}
}

// sendStates sends the partition states of rd, and the live set and
// address book when they changed, to every live broker.
func (n *ControllerNode) sendStates(rd controller.Ready, live []int32, membership bool) {
	var states []kafka.PartitionState
	seen := map[kafka.TopicPartition]bool{}
	for _, u := range rd.Updates {
		for _, s := range u.States {
			if !seen[s.TopicPartition] {
				seen[s.TopicPartition] = true
				states = append(states, s)
			}
		}
	}
	if len(states) == 0 && !membership {
		return
	}
	slices.SortFunc(states, func(a, b kafka.PartitionState) int { return a.Compare(b.TopicPartition) })
	n.version++
	for _, id := range live {
		inc, _ := n.c.Incarnation(id)
		n.send(NodeID(id), StateUpdate{Incarnation: inc, Version: n.version, States: states, LiveBrokers: live, Addresses: n.addressBook(), TopicConfigs: n.c.TopicConfigs()})
	}
}
