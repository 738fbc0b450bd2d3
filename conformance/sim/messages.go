package sim

import (
	"slices"
	"strconv"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// messageKind names a message as run.MessageKinds does; "" for one a
// messages fault cannot select (the bootstrap's topic creation).
func messageKind(msg any) string {
	switch m := msg.(type) {
	case broker.RegisterBroker:
		return "register"
	case broker.Heartbeat:
		return "heartbeat"
	case broker.StateUpdate:
		return "state-update"
	case kafka.AlterPartition:
		return "alter-partition"
	case kafka.AlterPartitionAnswer:
		return "alter-partition-response"
	case kafka.ReplicaLogInfoRequest:
		return "replica-log-info"
	case kafka.ReplicaLogInfo:
		return "replica-log-info-response"
	case partition.FetchRequest:
		return "replica-fetch"
	case partition.FetchResponse:
		return "replica-fetch-response"
	case partition.EpochEndRequest:
		return "epoch-end"
	case partition.EpochEndResponse:
		return "epoch-end-response"
	case broker.ProduceRequest:
		return "produce"
	case broker.ProduceResponse:
		return "produce-response"
	case broker.FetchRequest:
		return "fetch"
	case broker.FetchResponse:
		return "fetch-response"
	case broker.InitProducerIDRequest:
		return "init-producer-id"
	case broker.InitProducerIDResponse:
		return "init-producer-id-response"
	case broker.ListOffsetsRequest:
		return "list-offsets"
	case broker.ListOffsetsResponse:
		return "list-offsets-response"
	case broker.EpochEndRequest:
		return "offset-for-leader-epoch"
	case broker.EpochEndResponse:
		return "offset-for-leader-epoch-response"
	case broker.MetadataRequest:
		return "metadata"
	case broker.MetadataResponse:
		return "metadata-response"
	case broker.GroupRequest:
		if _, ok := m.Req.(group.CommitRequest); ok {
			return "offset-commit"
		}
		return "group"
	case broker.FindCoordinatorRequest:
		return "group"
	case broker.GroupResponse, broker.FindCoordinatorResponse:
		return "group-response"
	}
	return ""
}

// msgFault is a messages fault in force on one broker's links.
type msgFault struct {
	run.MessageFault
	id uint64 // ends it
}

// selects reports whether m strikes env, a message to or from broker
// self.
func selects(m *run.MessageFault, self broker.NodeID, env broker.Envelope) bool {
	out := env.From == self
	if (m.Direction == "in" && out) || (m.Direction == "out" && !out) {
		return false
	}
	peer := env.To
	if !out {
		peer = env.From
	}
	switch m.Peer {
	case "", "any":
	case "controller":
		if peer != broker.ControllerID {
			return false
		}
	case "clients":
		if peer < broker.ClientIDBase {
			return false
		}
	case "brokers":
		if peer <= broker.ControllerID || peer >= broker.ClientIDBase {
			return false
		}
	default:
		if strconv.Itoa(int(peer)) != m.Peer {
			return false
		}
	}
	kind := messageKind(env.Msg)
	// "group" names every group request, commits too.
	return len(m.Kinds) == 0 || slices.Contains(m.Kinds, kind) || (kind == "offset-commit" && slices.Contains(m.Kinds, "group"))
}

// fate is what the network does to one message.
type fate struct {
	drop, twice, reorder bool
	extra                int64 // delay on top of the network's
	copyLate             int64 // a duplicate's second copy: this much later, out of order
}

// messageFate draws what the messages faults in force do to env.
func (s *Sim) messageFate(env broker.Envelope) (f fate) {
	for _, id := range []broker.NodeID{env.From, env.To} {
		if id <= broker.ControllerID || int(id) >= len(s.nodes) {
			continue
		}
		for i := range s.nodes[id].msgFaults {
			m := &s.nodes[id].msgFaults[i].MessageFault
			if !selects(m, id, env) {
				continue
			}
			if m.Drop > 0 && s.Rng.Float64() < m.Drop {
				return fate{drop: true}
			}
			if m.Duplicate > 0 && s.Rng.Float64() < m.Duplicate {
				f.twice = true
				if m.CopyLateMs > 0 {
					f.copyLate = max(f.copyLate, s.Rng.Int64N(m.CopyLateMs+1))
				}
			}
			if m.Reorder > 0 && s.Rng.Float64() < m.Reorder {
				f.reorder = true
			}
			if m.DelayMs > 0 {
				f.extra += s.Rng.Int64N(m.DelayMs + 1)
			}
			f.extra += m.HoldMs
		}
	}
	return f
}

// strikeMessages puts messages fault f in force on broker n's links for
// dur ms.
func (s *Sim) strikeMessages(n *node, f run.Fault, dur int64) {
	s.msgFaultSeq++
	id := s.msgFaultSeq
	n.msgFaults = append(n.msgFaults, msgFault{MessageFault: *f.Messages.Clone(), id: id})
	n.faulted++
	s.Stats.Faults++
	m := f.Messages
	s.fault(run.FaultMessages, n.id, "messages of broker %d (kinds %v, peer %q, direction %q): drop %.2f, duplicate %.2f, reorder %.2f, delay up to %d ms, held %d ms, for %d ms",
		n.id, m.Kinds, m.Peer, m.Direction, m.Drop, m.Duplicate, m.Reorder, m.DelayMs, m.HoldMs, dur)
	s.After(s.Now+dur, func() {
		i := slices.IndexFunc(n.msgFaults, func(x msgFault) bool { return x.id == id })
		if i >= 0 {
			n.msgFaults = slices.Delete(n.msgFaults, i, i+1)
			n.faulted--
			s.Notef(run.NoteHeal, int(n.id), "messages of broker %d are delivered as usual again", n.id)
		}
	})
}
