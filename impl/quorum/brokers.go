package quorum

import (
	"slices"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// onBrokerRequests adds the handlers of what brokers send a controller.
// A voter that is not the active controller answers each request with
// where to go instead (NotController) and decides nothing, so that only
// the leader of a term ever proposes; metadata it answers from its
// committed image, as any voter may.
func onBrokerRequests(h *kafka.Handlers[inbound]) {
	kafka.On(h, func(in inbound, m broker.RegisterBroker) error {
		if a := in.active(); a != nil {
			a.register(in.n, in.from, m)
		}
		return nil
	})
	kafka.On(h, func(in inbound, m broker.Heartbeat) error {
		if a := in.active(); a != nil {
			a.heartbeat(in.n, in.from, m)
		}
		return nil
	})
	kafka.On(h, func(in inbound, m kafka.AlterPartition) error {
		a := in.active()
		if a == nil {
			in.n.send(in.from, kafka.AlterPartitionAnswer{TopicPartition: m.TopicPartition, ProposalID: m.ProposalID, Err: kafka.ErrNotController})
			return nil
		}
		m.LeaderID = int32(in.from) // the sender is who the network says
		a.c.AlterPartition(m, in.n.now)
		a.flush(in.n)
		return nil
	})
	kafka.On(h, func(in inbound, m kafka.ReplicaLogInfo) error {
		if a := in.active(); a != nil {
			m.BrokerID = int32(in.from)
			_ = a.c.ReplicaLogInfo(m, in.n.now) // refused: an answer to a recovery that moved on
			a.flush(in.n)
		}
		return nil
	})
	kafka.On(h, func(in inbound, m broker.CreateTopic) error {
		a := in.active()
		if a == nil {
			in.n.send(in.from, broker.CreateTopicResponse{Correlation: m.Correlation, Err: kafka.ErrNotController})
			return nil
		}
		a.c.CreateTopic(int32(in.from), m, in.n.now)
		a.flush(in.n)
		return nil
	})
	kafka.On(h, func(in inbound, m broker.MetadataRequest) error {
		img := in.n.img
		in.n.send(in.from, broker.MetadataResponse{Correlation: m.Correlation, Partitions: img.Metadata(), LiveBrokers: img.LiveBrokers(), Addresses: img.Addresses()})
		return nil
	})
}

// active returns the active controller, or tells a broker sender where
// the active one is and returns nil.
func (in inbound) active() *active {
	n := in.n
	if n.act != nil {
		return n.act
	}
	if in.from.IsBroker() {
		leader := broker.NodeID(0)
		if n.lead != 0 && n.lead != uint64(n.cfg.Voter) {
			leader = broker.VoterNode(int(n.lead))
		}
		n.send(in.from, broker.NotController{Epoch: n.term, Leader: leader})
	}
	return nil
}

// register admits a broker process; it is sent the whole state once its
// registration is committed.
func (a *active) register(n *Node, from broker.NodeID, m broker.RegisterBroker) {
	id := int32(from)
	lost := m.LostData
	if m.EmptyDisk {
		lost = replicaOf(a.c, id)
	}
	reg := controller.Registration{Lost: lost, PreviousIncarnation: m.PreviousIncarnation, Synced: m.Synced, Address: m.Address}
	if err := a.c.Register(id, m.Incarnation, n.now, reg); err != nil {
		return // a delayed registration of an earlier process
	}
	delete(a.resync, id)
	delete(a.stopping, id)
	a.flush(n)
	a.hold(n, held{full: []int32{id}})
}

// replicaOf lists the partitions broker id is a replica of.
func replicaOf(c *controller.Controller, id int32) []kafka.TopicPartition {
	var tps []kafka.TopicPartition
	for _, p := range c.Metadata() {
		if slices.Contains(p.Replicas, id) {
			tps = append(tps, p.TopicPartition)
		}
	}
	return tps
}

// heartbeat keeps a broker's session, or begins its controlled shutdown;
// a broker that fell behind the updates gets the whole state again.
func (a *active) heartbeat(n *Node, from broker.NodeID, m broker.Heartbeat) {
	id := int32(from)
	if m.WantShutDown {
		a.controlledShutdown(n, id, m)
		return
	}
	if a.c.Heartbeat(id, m.Incarnation, n.now) != nil {
		return // refused: the broker re-registers
	}
	a.reported[id] = max(a.reported[id], m.MetadataVersion)
	behind := m.MetadataVersion < a.heard[id]
	a.heard[id] = a.sent
	a.flush(n) // a heartbeat may revive a broker
	n.send(from, broker.HeartbeatAnswer{Incarnation: m.Incarnation, ControllerEpoch: n.term})
	if a.resync[id] || behind {
		delete(a.resync, id)
		a.hold(n, held{full: []int32{id}})
	}
}

// controlledShutdown answers a heartbeat that asks to shut down: the
// broker may stop once it leads nothing and every active broker has
// applied the metadata that moved its leaderships away (Kafka's
// controlledShutdownOffset against the lowest active broker's metadata
// offset); the controller then fences it.
func (a *active) controlledShutdown(n *Node, id int32, m broker.Heartbeat) {
	leadsNothing, err := a.c.ControlledShutdown(id, m.Incarnation, n.now)
	if err != nil {
		return // another process's, or an unknown broker's
	}
	a.flush(n) // the moved leaderships are proposed before any answer
	a.reported[id] = max(a.reported[id], m.MetadataVersion)
	if _, ok := a.stopping[id]; !ok {
		a.stopping[id] = 0 // the index of what flush proposed: stamped once in the log
	}
	at := a.stopping[id]
	ok := leadsNothing && a.c.IsAlive(id) && at != 0 && at <= n.applied
	for _, b := range a.c.LiveBrokers() {
		if b != id && !a.c.ShuttingDown(b) && a.reported[b] < at {
			ok = false // b may not know yet that it leads
		}
	}
	if ok {
		if err := a.c.ShutDown(id, m.Incarnation, n.now); err == nil {
			a.flush(n)
		}
	}
	done := leadsNothing && !a.c.IsAlive(id)
	a.hold(n, held{msgs: []broker.Envelope{{From: n.id, To: broker.NodeID(id),
		Msg: broker.ShutdownAnswer{Incarnation: m.Incarnation, ShouldShutDown: done, ControllerEpoch: n.term}}}})
}
