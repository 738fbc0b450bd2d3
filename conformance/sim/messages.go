package sim

import (
	"slices"
	"strconv"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

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
		if peer.Voter() == 0 {
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
	if len(m.Kinds) == 0 {
		return true
	}
	// A kind's family selects it too: "group" every group request,
	// commits included (kafka.Row.Family).
	kind := env.Msg.Kind()
	row, _ := kafka.RowOf(kind)
	return slices.Contains(m.Kinds, string(kind)) || (row.Family != "" && slices.Contains(m.Kinds, string(row.Family)))
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

// strikeMessages puts messages fault m in force on broker n's links for
// dur ms.
func (s *Sim) strikeMessages(n *node, m *run.MessageFault, dur int64) {
	s.msgFaultSeq++
	id := s.msgFaultSeq
	n.msgFaults = append(n.msgFaults, msgFault{MessageFault: *m.Clone(), id: id})
	n.faulted++
	s.Stats.Faults++
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
