package partition

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// The harness's network and fake controller: messages queue in order, and
// a test delivers, drops, holds or reorders them; the controller answers
// ISR changes as the real one does.

// envelope is one message in flight.
type envelope struct {
	from, to int32
	msg      any
	force    bool  // a held fetch whose wait is over: answer it even if empty
	heldAt   int64 // 1 + when the leader started holding it; 0: never held
	leaderAt string
}

// send queues a message. One to a broker that is down is lost at once, as
// a refused connection: a later incarnation never sees it.
func (c *cluster) send(from, to int32, m any) {
	e := envelope{from: from, to: to, msg: m}
	if n := c.nodes[to]; n != nil && n.r == nil {
		c.logf("drop %s", formatEnvelope(e))
		return
	}
	c.net = append(c.net, e)
}

// deliverOne hands one message to its addressee and applies what follows.
func (c *cluster) deliverOne(e envelope) {
	if e.to == controllerID {
		if c.nodes[e.from].isolated {
			c.logf("drop %s", formatEnvelope(e))
			return
		}
		c.logf("%s", formatEnvelope(e))
		c.handleAlterISR(e.msg.(kafka.AlterPartition))
		return
	}
	n := c.nodes[e.to]
	from := c.nodes[e.from]
	if n.r == nil || n.isolated || (from != nil && from.isolated) {
		c.logf("drop %s", formatEnvelope(e))
		return
	}
	r := n.r
	switch m := e.msg.(type) {
	case FetchRequest:
		mark := len(c.out)
		resp := replicaFetchAt(r, m, c.now)
		c.apply(n)
		line := formatEnvelope(e)
		hold := !e.force && c.wouldHold(m, resp)
		if hold {
			if e.heldAt != 0 {
				line = "" // held again: shown the first time only
			} else {
				line += " (held)"
			}
			e.heldAt, e.leaderAt = c.now+1, leaderMark(r)
			c.held = append(c.held, e)
		} else {
			if e.heldAt != 0 {
				line += " (released)"
			}
			c.send(n.id, e.from, resp)
		}
		if line != "" {
			c.out = slices.Insert(c.out, mark, line)
		}
	case EpochEndRequest:
		c.logf("%s", formatEnvelope(e))
		c.send(n.id, e.from, epochEndAt(r, m))
	case FetchResponse:
		c.logf("%s", formatEnvelope(e))
		r.HandleFetchResponse(m, c.now)
		c.apply(n)
	case EpochEndResponse:
		c.logf("%s", formatEnvelope(e))
		r.HandleEpochEndResponse(m, c.now)
		c.apply(n)
	case kafka.AlterPartitionAnswer:
		c.logf("%s", formatEnvelope(e))
		r.HandleAlterPartitionAnswer(m, c.now)
		c.apply(n)
	case kafka.PartitionState:
		c.logf("%s", formatEnvelope(e))
		r.UpdateState(m, c.now)
		c.apply(n)
	default:
		c.t.Fatalf("cannot deliver %T", e.msg)
	}
}

// wouldHold says whether the leader, like a broker, would park this fetch:
// it returned nothing and tells the follower nothing it does not know.
// Held fetches are answered once the leader's LEO or HW moves, or after
// replica.fetch.wait.max.ms (see tick), so deliver reaches quiescence.
func (c *cluster) wouldHold(req FetchRequest, resp FetchResponse) bool {
	if resp.Err != nil || resp.Diverging || len(resp.Batches) > 0 {
		return false
	}
	f := c.nodes[req.ReplicaID]
	if f == nil || f.r == nil {
		return true
	}
	return f.r.HW() == min(resp.HW, f.r.LEO())
}

func leaderMark(r *Replica) string {
	return fmt.Sprintf("%s/%d/%d/%d", r.Role(), r.LeaderEpoch(), r.LEO(), r.HW())
}

// releaseHeld moves back to the network the held fetches whose leader has
// moved on, and, when expire is set, those whose wait is over.
func (c *cluster) releaseHeld(expire bool) int {
	released := 0
	n := 0
	for _, e := range c.held {
		leader := c.nodes[e.to]
		switch {
		case leader.r == nil:
			released++ // the leader died: the fetch dies with it
		case leaderMark(leader.r) != e.leaderAt:
			c.net = append(c.net, e)
			released++
		case expire && c.now-(e.heldAt-1) >= leader.r.cfg.ReplicaFetchWaitMaxMs:
			e.force = true
			c.net = append(c.net, e)
			released++
		default:
			c.held[n] = e
			n++
		}
	}
	c.held = c.held[:n]
	return released
}

// matcher selects messages by sender, addressee and kind (-1/"" = any).
type matcher struct {
	from, to int32
	kind     string
	except   []string // kinds left in the network
}

func (m matcher) match(e envelope) bool {
	k := kindOf(e.msg)
	return (m.from < 0 || e.from == m.from) && (m.to < 0 || e.to == m.to) &&
		(m.kind == "" || m.kind == k) && !slices.Contains(m.except, k)
}

// anyMsg matches every message.
var anyMsg = matcher{from: -1, to: -1}

// msgs matches messages of one kind ("" = any) from and to brokers (-1 = any).
func msgs(from, to int32, kind string) matcher { return matcher{from: from, to: to, kind: kind} }

// deliver delivers matching messages, and what they cause, until none is
// left and every remaining fetch is held. It fails on a livelock.
func (c *cluster) deliver(m matcher) {
	for steps := 0; ; steps++ {
		if steps >= 10000 {
			c.t.Fatalf("no quiescence after %d deliveries; last:\n%s", steps, strings.Join(c.out[max(0, len(c.out)-12):], "\n"))
		}
		i := slices.IndexFunc(c.net, m.match)
		if i < 0 {
			if c.releaseHeld(false) > 0 {
				continue
			}
			return
		}
		e := c.net[i]
		c.net = slices.Delete(c.net, i, i+1)
		c.deliverOne(e)
	}
}

// drop removes matching messages from the network.
func (c *cluster) drop(m matcher) int {
	n := 0
	kept := c.net[:0]
	for _, e := range c.net {
		if m.match(e) {
			c.logf("drop %s", formatEnvelope(e))
			n++
			continue
		}
		kept = append(kept, e)
	}
	c.net = kept
	return n
}

// take removes and returns the matching messages, for tests that deliver
// them by hand or out of order.
func (c *cluster) take(m matcher) []envelope {
	var out, kept []envelope
	for _, e := range c.net {
		if m.match(e) {
			out = append(out, e)
		} else {
			kept = append(kept, e)
		}
	}
	c.net = kept
	return out
}

// tick advances the clock by ms and ticks every live broker; held fetches
// whose wait is over go back to the network. Nothing is delivered.
func (c *cluster) tick(ms int64) {
	c.now += ms
	before := len(c.net)
	for _, id := range c.ids {
		if n := c.nodes[id]; n.r != nil {
			n.r.Tick(c.now)
			c.apply(n)
		}
	}
	for _, e := range c.net[before:] {
		c.logf("sent %s", formatEnvelope(e))
	}
	c.releaseHeld(true)
}

// run lets ms of healthy time pass in steps of step ms, delivering
// everything after each tick.
func (c *cluster) run(ms, step int64, m matcher) {
	for end := c.now + ms; c.now < end; {
		c.tick(min(step, end-c.now))
		c.deliver(m)
	}
}

// handleAlterISR is the fake controller: it checks a proposal as the real
// controller does (leader epoch, partition epoch, then that added members
// are up in the incarnation the leader saw), applies it, answers the leader
// and publishes the new state.
func (c *cluster) handleAlterISR(req kafka.AlterPartition) {
	resp := kafka.AlterPartitionAnswer{TopicPartition: req.TopicPartition, ProposalID: req.ProposalID}
	accepted := false
	switch {
	case req.LeaderEpoch != c.ctrl.LeaderEpoch || req.LeaderID != c.ctrl.Leader:
		resp.Err = errFencedAlter
	case req.PartitionEpoch != c.ctrl.PartitionEpoch:
		resp.Err = errInvalidVersion
	case !c.eligible(req):
		resp.Err = errIneligible
	default:
		c.ctrl.ISR = sortedClone(req.NewISR)
		c.ctrl.PartitionEpoch++
		accepted = true
	}
	resp.State = cloneState(c.ctrl)
	c.send(controllerID, req.LeaderID, resp)
	if accepted {
		// Like KRaft metadata, the new state then reaches every replica,
		// the leader included.
		for _, id := range c.ids {
			c.send(controllerID, id, cloneState(c.ctrl))
		}
	}
}

// eligible is the controller's KIP-903 check: a broker added to the ISR
// must be up, in the incarnation the leader saw it fetch from.
func (c *cluster) eligible(req kafka.AlterPartition) bool {
	for i, id := range req.NewISR {
		if slices.Contains(c.ctrl.ISR, id) {
			continue
		}
		n := c.nodes[id]
		if n == nil || n.r == nil {
			return false
		}
		if req.NewISRIncarnations != nil && req.NewISRIncarnations[i] != n.inc {
			return false
		}
	}
	return true
}

// netOf lists the matching messages in flight without removing them.
func (c *cluster) netOf(m matcher) []envelope {
	var out []envelope
	for _, e := range c.net {
		if m.match(e) {
			out = append(out, e)
		}
	}
	return out
}
