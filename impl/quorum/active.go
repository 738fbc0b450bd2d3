package quorum

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// active is the active controller: the quorum's leader, once it has
// applied its whole log and while a majority answers it. Its controller
// was restored from the image at activation (controller.Restore, which
// gives every live broker a whole session from then, as KRaft's new
// active controller does) and runs ahead of the image: each decision's
// records are proposed at once, and the controller decides the next
// input on the state they make, as KRaft's does. Nothing a decision
// produced leaves the node before its records are committed and applied:
// answers, full states and the controller's events wait in held, and
// brokers get partition states from committed records only. If the node
// stops being active, the controller and what it held are dropped; a
// later activation restores a new one from the committed image, so a
// decision whose records were never committed leaves no trace.
type active struct {
	c    *controller.Controller
	held []held
	// Committed since the last states sent: the partition states, and
	// whether a broker or topic record came (the live set, addresses or
	// configs changed).
	changed    map[kafka.TopicPartition]kafka.PartitionState
	membership bool
	// sent is the Version of the last update sent to the brokers.
	sent uint64
	// The brokers' metadata versions (as in the single controller
	// before): resync must be sent the full state at their next
	// heartbeat; heard is sent as of each broker's previous heartbeat;
	// reported what each said it applied; stopping, for a broker in a
	// controlled shutdown, the index that moved its leaderships.
	resync   map[int32]bool
	heard    map[int32]uint64
	reported map[int32]uint64
	stopping map[int32]uint64
}

// held is what waits for the log to be applied up to at.
type held struct {
	at     uint64
	msgs   []broker.Envelope
	full   []int32 // brokers to send the full state to
	events []controller.Event
}

// maybeActivate makes the node the active controller, or stops it being
// one, as its role, log and majority allow.
func (n *Node) maybeActivate() {
	leading := n.elect.leading
	if n.act != nil {
		switch {
		case !leading:
			n.deactivate("it is no longer the quorum's leader")
		case !n.elect.quorum(n):
			n.deactivate("no majority of voters answered within the election timeout")
		}
		return
	}
	last, _ := n.st.mem.LastIndex()
	if !leading || n.applied < last || !n.elect.quorum(n) {
		return
	}
	c, err := controller.Restore(n.cfg.Controller, n.img.Snapshot(), n.now)
	if err != nil {
		n.halt(err)
		return
	}
	a := &active{c: c, changed: map[kafka.TopicPartition]kafka.PartitionState{},
		resync: map[int32]bool{}, heard: map[int32]uint64{}, reported: map[int32]uint64{}, stopping: map[int32]uint64{}}
	for _, b := range n.img.Snapshot().Brokers {
		a.resync[b.ID] = true // what the previous controller sent may not have arrived
	}
	n.act = a
	n.emit(Event{Kind: "active", Index: n.applied})
	a.flush(n) // a restored controller may ask recovery questions at once
}

func (n *Node) deactivate(why string) {
	if n.act == nil {
		return
	}
	n.act = nil
	n.emit(Event{Kind: "inactive", Index: n.applied, Why: why})
}

// flush proposes the records of the controller's Ready and holds what it
// must not send before they are applied.
func (a *active) flush(n *Node) {
	if !a.c.HasReady() {
		return
	}
	rd := a.c.Ready()
	a.c.Advance()
	for _, q := range rd.Asks {
		n.send(broker.NodeID(q.BrokerID), q) // a question reveals no decision
	}
	if len(rd.Records) > 0 {
		data, err := json.Marshal(Batch{Proposer: n.cfg.Voter, Term: n.term, Records: rd.Records})
		if err != nil {
			n.halt(err)
			return
		}
		if err := n.rn.Propose(data); err != nil {
			n.deactivate("raft refused its proposal: " + err.Error())
			return
		}
	}
	h := held{events: rd.Events}
	for _, ans := range rd.Answers {
		h.msgs = append(h.msgs, broker.Envelope{From: n.id, To: broker.NodeID(ans.Broker), Msg: ans.Msg})
	}
	a.hold(n, h)
}

// hold queues h until everything proposed so far is applied: an answer
// that reveals no record of its own still waits for the records of the
// decisions before it. Its index is stamped once raft has persisted the
// proposals (stamp).
func (a *active) hold(_ *Node, h held) {
	a.held = append(a.held, h)
}

// stamp gives the holds made since the last call the log's last index:
// every proposal before them is in the log by now.
func (a *active) stamp(n *Node) {
	last, _ := n.st.mem.LastIndex()
	for i := len(a.held) - 1; i >= 0 && a.held[i].at == 0; i-- {
		a.held[i].at = last
	}
	for id, at := range a.stopping {
		if at == 0 {
			a.stopping[id] = last
		}
	}
}

// committed notes the records of an entry just applied.
func (a *active) committed(recs []controller.Record) {
	for _, r := range recs {
		if r.Partition != nil {
			a.changed[r.Partition.State.TopicPartition] = r.Partition.State.Clone()
		} else {
			a.membership = true
		}
	}
}

// release sends the committed states, then what waited for them.
func (a *active) release(n *Node) {
	if len(a.changed) > 0 || a.membership {
		a.sendStates(n)
	}
	i := 0
	for ; i < len(a.held) && a.held[i].at != 0 && a.held[i].at <= n.applied; i++ {
		a.send(n, a.held[i])
	}
	a.held = a.held[i:]
}

func (a *active) send(n *Node, h held) {
	for _, e := range h.events {
		n.emit(Event{Kind: "decided", Decision: e})
	}
	for _, id := range h.full {
		a.sendFull(n, id)
	}
	n.out = append(n.out, h.msgs...)
}

// sendStates sends every live broker the partition states committed
// since the last send, with the live set, addresses and topic configs.
func (a *active) sendStates(n *Node) {
	states := slices.SortedFunc(maps.Values(a.changed), func(x, y kafka.PartitionState) int { return x.Compare(y.TopicPartition) })
	clear(a.changed)
	a.membership = false
	live := n.img.LiveBrokers()
	for _, id := range live {
		inc, _ := n.img.Incarnation(id)
		n.send(broker.NodeID(id), broker.StateUpdate{Incarnation: inc, Version: n.applied, Prev: a.sent, ControllerEpoch: n.term,
			States: states, LiveBrokers: live, Addresses: n.img.Addresses(), TopicConfigs: n.img.TopicConfigs()})
	}
	a.sent = n.applied
}

// sendFull sends broker id everything, as of the image.
func (a *active) sendFull(n *Node, id int32) {
	inc, ok := n.img.Incarnation(id)
	if !ok {
		return
	}
	n.send(broker.NodeID(id), broker.StateUpdate{Incarnation: inc, Version: n.applied, ControllerEpoch: n.term, Full: true,
		States: n.img.Metadata(), LiveBrokers: n.img.LiveBrokers(), Addresses: n.img.Addresses(), TopicConfigs: n.img.TopicConfigs()})
	// What it will have applied, and what it will be behind of if its
	// next heartbeat reports less.
	a.heard[id] = max(a.sent, n.applied)
	a.reported[id] = max(a.reported[id], n.applied)
}

// tick moves the controller's time: session expiry and what it elects.
func (a *active) tick(n *Node) {
	a.c.Tick(n.now)
	a.flush(n)
}
