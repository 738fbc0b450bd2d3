package broker

import (
	"slices"

	"github.com/watermarkhq/watermark/impl/controller"
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
}

// NewControllerNode starts a controller with cfg.
func NewControllerNode(cfg controller.Config) (*ControllerNode, error) {
	c, err := controller.New(cfg)
	if err != nil {
		return nil, err
	}
	return &ControllerNode{c: c}, nil
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

func (n *ControllerNode) send(to NodeID, msg any) {
	n.out = append(n.out, Envelope{From: ControllerID, To: to, Msg: msg})
}

// Handle processes one message.
func (n *ControllerNode) Handle(env Envelope, now int64) {
	switch m := env.Msg.(type) {
	case RegisterBroker:
		if err := n.c.RegisterBroker(int32(env.From), m.Incarnation, now); err != nil {
			return // a delayed registration of an earlier process
		}
		n.flush()
		n.send(env.From, StateUpdate{
			Incarnation: m.Incarnation,
			Full:        true,
			States:      n.c.Metadata(),
			LiveBrokers: n.c.LiveBrokers(),
		})
		return
	case Heartbeat:
		_ = n.c.Heartbeat(int32(env.From), m.Incarnation, now) // refused: the broker re-registers
	case AlterISR:
		res := n.c.AlterPartition(controller.AlterPartitionRequest{
			TopicPartition:     controller.TopicPartition(m.TopicPartition),
			BrokerID:           int32(env.From),
			BrokerIncarnation:  m.Incarnation,
			LeaderEpoch:        m.LeaderEpoch,
			PartitionEpoch:     m.PartitionEpoch,
			NewISR:             m.NewISR,
			NewISRIncarnations: m.NewISRIncarnations, // KIP-903: additions must come from live processes
		}, now)
		n.flush()
		n.send(env.From, AlterISRAnswer{TopicPartition: m.TopicPartition, ProposalID: m.ProposalID, Code: res.Error, State: res.State})
		return
	case CreateTopic:
		err := n.c.CreateTopic(m.Name, m.Partitions, m.ReplicationFactor, now)
		n.flush()
		n.send(env.From, CreateTopicResponse{Correlation: m.Correlation, Err: err})
		return
	case MetadataRequest:
		n.send(env.From, MetadataResponse{Correlation: m.Correlation, Partitions: n.c.Metadata(), LiveBrokers: n.c.LiveBrokers()})
	}
	n.flush()
}

// Tick advances logical time: session expiry and the elections it causes.
func (n *ControllerNode) Tick(now int64) {
	n.c.Tick(now)
	n.flush()
}

// flush turns the controller's Ready into StateUpdates for all live brokers.
func (n *ControllerNode) flush() {
	if !n.c.HasReady() {
		return
	}
	rd := n.c.Ready()
	n.events = append(n.events, rd.Events...)
	var states []PartitionState
	seen := map[controller.TopicPartition]bool{}
	for _, u := range rd.Updates {
		for _, s := range u.States {
			if !seen[s.TopicPartition] {
				seen[s.TopicPartition] = true
				states = append(states, s)
			}
		}
	}
	if len(states) == 0 {
		return
	}
	slices.SortFunc(states, func(a, b PartitionState) int {
		return compareTP(TopicPartition(a.TopicPartition), TopicPartition(b.TopicPartition))
	})
	live := n.c.LiveBrokers()
	for _, id := range live {
		inc, _ := n.c.Incarnation(id)
		n.send(NodeID(id), StateUpdate{Incarnation: inc, States: states, LiveBrokers: live})
	}
}
