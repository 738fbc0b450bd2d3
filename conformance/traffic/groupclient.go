package traffic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/watermarkhq/watermark/conformance/kitclient"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// groupConsumer is a group member application: the kit's consumer
// (conformance/kitclient), and an application that processes what it polls
// one record per ProcessPerTick and commits per run.CommitMode. It records
// the consumer's events and every record it processes in the history.
type groupConsumer struct {
	index int // among the group consumers, for faults
	cons  *kitclient.Consumer
	down  bool // crashed; a new process starts at restart
	// queue is polled records not processed yet, in order.
	queue []queued
	// commits maps a before-process commit's id to the batch it releases.
	commits map[uint64][]queued
	// commitOps maps a commit's id to its operations in the history,
	// recorded when it is called: a commit in flight when the process
	// dies stays open, its outcome unknown, as it is.
	commitOps  map[uint64][]int
	generation int32
	member     string
	seeks      int
}

type queued struct {
	tp   kafka.TopicPartition
	gen  int32
	rec  kitclient.ConsumerRecord
	last bool // the last record of its delivery: commit after it
}

// startGroupConsumer gives c a fresh consumer process: a new member.
func (c *client) startGroupConsumer() {
	s := c.s
	cons, err := kitclient.NewConsumer(c.id, s.Spec.ConsumerConfig(), rand.New(rand.NewPCG(s.Rng.Uint64(), s.Rng.Uint64())))
	if err != nil {
		panic(err) // Validate checked the same configuration
	}
	g := c.group
	g.cons, g.down, g.queue, g.commits, g.commitOps = cons, false, nil, map[uint64][]queued{}, map[uint64][]int{}
	g.generation, g.member = -1, ""
}

// crashGroupConsumer kills the member's process: no LeaveGroup, nothing
// processed or committed any more; its coordinator must time it out.
func (c *client) crashGroupConsumer(downMs int64) {
	g := c.group
	if g.down {
		return
	}
	g.down = true
	c.s.Stats.ConsumerCrashes++
	c.s.Note(run.Note{Kind: run.NoteFault, Fault: run.FaultCrashConsumer, Node: g.index, Member: g.member,
		Text: fmt.Sprintf("crash consumer %d (member %s)", g.index, g.member)})
	if downMs > c.s.Spec.Workload.ConsumerSessionTimeoutMs && g.member != "" {
		c.s.Reached(run.SitMemberDownPastSession)
	}
	c.s.Host.After(c.s.Now+downMs, func() {
		c.startGroupConsumer()
		c.s.Note(run.Note{Kind: run.NoteHeal, Fault: run.FaultCrashConsumer, Node: g.index, Text: fmt.Sprintf("restart consumer %d", g.index)})
	})
}

func (c *client) tickGroup() {
	g := c.group
	s := c.s
	if g.down {
		return
	}
	g.cons.Tick(s.Now)
	c.flushGroup()
	// Take what was polled; commit first in before-process mode.
	for _, d := range g.cons.Poll() {
		batch := make([]queued, len(d.Records))
		for i, r := range d.Records {
			batch[i] = queued{tp: d.TP, gen: d.Generation, rec: r, last: i == len(d.Records)-1}
		}
		if len(batch) == 0 {
			continue
		}
		if s.Spec.Workload.CommitMode == run.CommitBeforeProcess {
			next := batch[len(batch)-1].rec.Offset + 1
			id := c.commit(d.TP, next)
			g.commits[id] = batch
			continue
		}
		g.queue = append(g.queue, batch...)
	}
	// Process a few records a tick, so that a crash can land mid-batch.
	for n := max(s.Spec.Workload.ProcessPerTick, 1); n > 0 && len(g.queue) > 0; n-- {
		q := g.queue[0]
		g.queue = g.queue[1:]
		if !slices.Contains(g.cons.Assignment(), q.tp) {
			continue // revoked since it was polled (Revoked drops these too)
		}
		s.recordAt(linearizability.Op{
			Client: int(c.id - clientmsg.ClientIDBase), Kind: linearizability.KindProcess,
			Group: s.Spec.Workload.Group, Generation: q.gen, Member: g.member,
			Topic: q.tp.Topic, Partition: q.tp.Partition, Offset: q.rec.Offset, Value: string(q.rec.Value),
			Outcome: linearizability.OutcomeOK,
		}, s.Now, s.Now)
		if q.last && s.Spec.Workload.CommitMode == run.CommitAfterProcess {
			c.commit(q.tp, q.rec.Offset+1)
		}
	}
	if s.Spec.Workload.SeekBackEveryMs > 0 && !s.Over && s.Now/s.Spec.Workload.SeekBackEveryMs > int64(g.seeks) {
		g.seeks++
		// Back from what the application has processed, not from what
		// the consumer returned: the queue's records are dropped and
		// must be read again, or the seek would skip them.
		unprocessed := map[kafka.TopicPartition]int64{}
		for _, q := range g.queue {
			if at, ok := unprocessed[q.tp]; !ok || q.rec.Offset < at {
				unprocessed[q.tp] = q.rec.Offset
			}
		}
		for _, tp := range g.cons.Assignment() {
			if pos, ok := g.cons.Position(tp); ok && pos > 0 {
				if at, ok := unprocessed[tp]; ok {
					pos = min(pos, at)
				}
				_ = g.cons.Seek(tp, max(pos-5, 0), s.Now)
				s.Stats.Seeks++
			}
		}
		g.queue = nil
	}
	c.flushGroup()
}

func (c *client) handleGroup(env clientmsg.Envelope) {
	g := c.group
	if g.down {
		return
	}
	g.cons.Handle(env.From, env.Msg, c.s.Now)
	c.flushGroup()
}

// flushGroup sends what the consumer queued and writes its events to the
// history.
func (c *client) flushGroup() {
	g := c.group
	s := c.s
	out, events := g.cons.Ready()
	for _, env := range out {
		s.send(env)
	}
	h := groupEvents{c: c, client: int(c.id - clientmsg.ClientIDBase), group: s.Spec.Workload.Group}
	for _, e := range events {
		e.Tell(h)
	}
}

// groupEvents writes a group consumer's events to the history, one method
// per kind (kitclient.ConsumerEvents).
type groupEvents struct {
	c      *client
	client int    // the client's number in the history
	group  string // the workload's group
}

func (h groupEvents) OnJoined(e *kitclient.Joined) {
	g, s := h.c.group, h.c.s
	client, group := h.client, h.group
	g.generation, g.member = e.Generation, e.MemberID
	s.Stats.Rebalances++
	s.recordAt(linearizability.Op{Client: client, Kind: linearizability.KindJoin, Group: group,
		Generation: e.Generation, Member: e.MemberID, Outcome: linearizability.OutcomeOK, Offset: -1, Broker: int32(e.Coordinator)}, e.CallMs, e.ReturnMs)
}

func (h groupEvents) OnAssigned(e *kitclient.Assigned) {
	s := h.c.s
	client, group := h.client, h.group
	if e.Generation < 0 {
		return
	}
	for _, tp := range e.Partitions {
		s.recordAt(linearizability.Op{Client: client, Kind: linearizability.KindAssignment, Group: group,
			Generation: e.Generation, Member: e.MemberID, Topic: tp.Topic, Partition: tp.Partition,
			Outcome: linearizability.OutcomeOK, Offset: -1, Broker: int32(e.Coordinator)}, e.CallMs, e.ReturnMs)
	}
}

func (h groupEvents) OnRevoked(e *kitclient.Revoked) {
	g := h.c.group
	// onPartitionsRevoked: what was polled and not processed is
	// dropped; whoever gets the partition next starts from the
	// committed offset. (Processing it after a reassignment to
	// this same member would skip ahead of the new position.)
	g.queue = slices.DeleteFunc(g.queue, func(q queued) bool { return slices.Contains(e.Partitions, q.tp) })
}

func (h groupEvents) OnOffsetsFetched(e *kitclient.OffsetsFetched) {
	s := h.c.s
	client, group := h.client, h.group
	s.recordAt(linearizability.Op{Client: client, Kind: linearizability.KindOffsetFetch, Group: group,
		Topic: e.TP.Topic, Partition: e.TP.Partition, Offset: e.Offset, Outcome: linearizability.OutcomeOK, Broker: int32(e.Coordinator)}, e.CallMs, e.ReturnMs)
}

func (h groupEvents) OnPositioned(e *kitclient.Positioned) {
	s := h.c.s
	client := h.client
	s.recordAt(linearizability.Op{Client: client, Kind: linearizability.KindAssign,
		Topic: e.TP.Topic, Partition: e.TP.Partition, Offset: e.Offset, Outcome: linearizability.OutcomeOK}, e.CallMs, e.ReturnMs)
}

func (h groupEvents) OnFetched(e *kitclient.Fetched) {
	s := h.c.s
	client := h.client
	s.Stats.ConsumerFetches++
	op := linearizability.Op{Client: client, Kind: linearizability.KindFetch,
		Topic: e.TP.Topic, Partition: e.TP.Partition, Offset: e.Offset, HW: e.HW, LogStart: max(e.LogStart, 0), Outcome: linearizability.OutcomeOK}
	if e.Err != nil {
		op.Outcome = linearizability.OutcomeFail
		setError(&op, e.Err)
		if errors.Is(e.Err, kafka.ErrOffsetOutOfRange) && e.LogStart > e.Offset {
			s.Reached(run.SitFetchBelowLogStart)
		}
	}
	for _, r := range e.Records {
		op.Records = append(op.Records, linearizability.Record{Offset: r.Offset, Value: string(r.Value)})
	}
	s.recordAt(op, e.CallMs, e.ReturnMs)
}

func (h groupEvents) OnCommitted(e *kitclient.Committed) {
	g, s := h.c.group, h.c.s
	outcome := linearizability.OutcomeOK
	switch {
	case e.Unknown:
		outcome = linearizability.OutcomeUnknown
	case e.Err != nil:
		outcome = linearizability.OutcomeFail
	}
	if e.Err == nil && !e.Unknown {
		s.Stats.Commits++
	}
	for _, i := range g.commitOps[e.ID] {
		op := &s.History[i]
		op.Generation, op.Member = e.Generation, e.MemberID
		if op.Generation < 0 {
			op.Generation, op.Member = linearizability.NoGeneration, ""
		}
		op.Return, op.Outcome, op.Broker = e.ReturnMs, outcome, int32(e.Coordinator)
		setError(op, e.Err)
	}
	delete(g.commitOps, e.ID)
	// Before-process: the batch is processed only if the commit
	// certainly took effect; otherwise the next owner reads it.
	if batch, ok := g.commits[e.ID]; ok {
		delete(g.commits, e.ID)
		if e.Err == nil && !e.Unknown {
			g.queue = append(g.queue, batch...)
		}
	}
}

// OnNoOffset implements kitclient.ConsumerEvents: the consumer then starts
// where auto.offset.reset says, and a Positioned event records it.
func (groupEvents) OnNoOffset(*kitclient.NoOffset) {}

// OnGroupFailed implements kitclient.ConsumerEvents: the member's
// operations end as they do; nothing more is recorded.
func (groupEvents) OnGroupFailed(*kitclient.GroupFailed) {}

// recordAt appends a finished operation with its own call and return times.
func (s *World) recordAt(op linearizability.Op, call, ret int64) {
	op.ID = len(s.History)
	op.Call, op.Return = call, ret
	s.History = append(s.History, op)
}

// groupConsumer returns group consumer i's client.
func (s *World) groupConsumer(i int) *client {
	w := s.Spec.Workload
	return s.clients[w.Producers+w.Consumers+i]
}

// commit commits next for tp and records the operation now, open until
// its Committed event. The generation and member are filled in then (the
// consumer stamps the commit with them when it sends it); a commit that
// never resolves keeps the member's last known ones.
func (c *client) commit(tp kafka.TopicPartition, next int64) uint64 {
	g := c.group
	s := c.s
	id := g.cons.Commit(map[kafka.TopicPartition]int64{tp: next}, s.Now)
	gen, member := g.generation, g.member
	if gen < 0 || member == "" {
		gen, member = linearizability.NoGeneration, ""
	}
	op := s.record(linearizability.Op{Client: int(c.id - clientmsg.ClientIDBase), Kind: linearizability.KindCommit,
		Group: s.Spec.Workload.Group, Generation: gen, Member: member, Topic: tp.Topic, Partition: tp.Partition, Offset: next})
	g.commitOps[id] = append(g.commitOps[id], op)
	return id
}
