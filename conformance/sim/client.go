package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/watermarkhq/watermark/impl/broker"
	refclient "github.com/watermarkhq/watermark/impl/client"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// client is a simulated producer or consumer. Each has one request in
// flight at a time and records every operation in the run's history.
type client struct {
	s        *world
	id       broker.NodeID
	producer bool
	tps      []kafka.TopicPartition
	rr       int
	leaders  map[kafka.TopicPartition]int32
	needMeta bool

	corr     uint64
	inflight *inflight
	nextAt   int64
	seq      int
	pos      map[kafka.TopicPartition]int64 // consumer positions

	final *finalRead // set for the final reader
	group *groupConsumer

	// Producers run the reference producer (impl/client); sends maps a
	// send's id to its operation in the history.
	prod  *refclient.Producer
	sends map[uint64]int
}

// finalRead reads every partition from offset 0 to the HW that ListOffsets
// reports, once all faults have healed. Its fetches are marked Final only
// when a partition's pass completes, so a pass cut short by a late fault
// claims nothing.
type finalRead struct {
	active bool
	tp     int   // index of the partition being read
	target int64 // HW to read up to; -1 until ListOffsets answers
	pos    int64
	ops    []int // this pass's fetches
}

type inflight struct {
	corr     uint64
	op       int // index in history, or -1 for a metadata request
	deadline int64
}

func (s *world) startClients() {
	var tps []kafka.TopicPartition
	for _, t := range s.cfg.Topics {
		for p := int32(0); p < t.Partitions; p++ {
			tps = append(tps, kafka.TopicPartition{Topic: t.Name, Partition: p})
		}
	}
	w := s.cfg.Workload
	for i := 0; i < w.Producers+w.Consumers+w.GroupConsumers; i++ {
		c := &client{
			s:        s,
			id:       broker.ClientIDBase + broker.NodeID(i),
			producer: i < w.Producers,
			tps:      tps,
			rr:       s.rng.IntN(len(tps)),
			leaders:  map[kafka.TopicPartition]int32{},
			needMeta: true,
			pos:      map[kafka.TopicPartition]int64{},
		}
		if c.producer {
			c.startProducer()
		}
		if i >= w.Producers+w.Consumers {
			c.group = &groupConsumer{index: i - w.Producers - w.Consumers}
			c.startGroupConsumer()
		}
		s.clients = append(s.clients, c)
		s.schedule(c.id, s.rng.Int64N(s.cfg.TickMs)+s.cfg.TickMs)
	}
	if !s.cfg.NoFinalRead {
		c := &client{
			s:        s,
			id:       broker.ClientIDBase + broker.NodeID(len(s.clients)),
			tps:      tps,
			leaders:  map[kafka.TopicPartition]int32{},
			needMeta: true,
			pos:      map[kafka.TopicPartition]int64{},
			final:    &finalRead{target: -1},
		}
		s.clients = append(s.clients, c)
		s.schedule(c.id, s.rng.Int64N(s.cfg.TickMs)+s.cfg.TickMs)
	}
}

func (s *world) startFinalRead() {
	for _, c := range s.clients {
		if c.final != nil {
			c.final.active = true
			s.note("final read of every partition")
		}
	}
}

// FinalReadDone reports whether the final read covered every partition.
func (r *Result) FinalReadDone() bool { return r.Stats.FinalReadDone }

func (c *client) tickFinal() {
	f := c.final
	s := c.s
	if !f.active || f.tp >= len(c.tps) {
		return
	}
	if c.needMeta {
		c.requestMetadata()
		return
	}
	tp := c.tps[f.tp]
	leader, ok := c.leaders[tp]
	if !ok || leader < 0 {
		c.needMeta = true
		return
	}
	if f.target < 0 {
		op := s.record(linearizability.Op{
			Client: int(c.id - broker.ClientIDBase), Kind: linearizability.KindListOffsets,
			Topic: tp.Topic, Partition: tp.Partition, Offset: -1,
		})
		c.corr++
		s.send(broker.Envelope{From: c.id, To: broker.NodeID(leader), Msg: broker.ListOffsetsRequest{Correlation: c.corr, TopicPartition: tp, Latest: true}})
		c.inflight = &inflight{corr: c.corr, op: op, deadline: s.now + 1000}
		return
	}
	c.pos[tp] = f.pos
	c.fetch(tp, broker.NodeID(leader))
	f.ops = append(f.ops, c.inflight.op)
}

// afterFinalFetch advances the final read after one of its fetches.
func (c *client) afterFinalFetch(tp kafka.TopicPartition, ok bool) {
	f := c.final
	if !ok {
		f.target, f.pos, f.ops = -1, 0, nil
		return
	}
	f.pos = c.pos[tp]
	if f.pos < f.target {
		return
	}
	for _, i := range f.ops {
		c.s.history[i].Final = true
	}
	f.tp++
	f.target, f.pos, f.ops = -1, 0, nil
	if f.tp == len(c.tps) {
		c.s.stats.FinalReadDone = true
		c.s.note("final read complete")
	}
}

func (c *client) tick() {
	s := c.s
	if f := c.inflight; f != nil {
		if s.now < f.deadline {
			return
		}
		// No answer: the request or its response was lost, or the broker
		// is stuck. The operation may or may not have happened.
		if f.op >= 0 {
			c.finish(f.op, linearizability.OutcomeUnknown, "client timeout")
		}
		c.inflight = nil
		c.needMeta = true
		if c.final != nil && f.op >= 0 && c.s.history[f.op].Kind == linearizability.KindFetch {
			c.afterFinalFetch(c.tps[c.final.tp], false)
		}
	}
	if c.final != nil {
		c.tickFinal()
		return
	}
	if c.group != nil {
		c.tickGroup()
		return
	}
	if c.producer {
		c.tickProducer()
		return
	}
	if s.now < c.nextAt {
		return
	}
	if c.needMeta {
		c.requestMetadata()
		return
	}
	tp := c.tps[c.rr%len(c.tps)]
	c.rr++
	leader, ok := c.leaders[tp]
	if !ok || leader < 0 {
		c.needMeta = true
		return
	}
	c.fetch(tp, broker.NodeID(leader))
}

func (c *client) requestMetadata() {
	live := c.s.liveBrokers()
	to := broker.ControllerID
	if len(live) > 0 {
		to = live[c.s.rng.IntN(len(live))]
	}
	c.corr++
	c.inflight = &inflight{corr: c.corr, op: -1, deadline: c.s.now + 500}
	c.s.send(broker.Envelope{From: c.id, To: to, Msg: broker.MetadataRequest{Correlation: c.corr}})
}

func (c *client) fetch(tp kafka.TopicPartition, leader broker.NodeID) {
	s := c.s
	w := s.cfg.Workload
	pos := c.pos[tp]
	op := s.record(linearizability.Op{
		Client: int(c.id - broker.ClientIDBase), Kind: linearizability.KindFetch,
		Topic: tp.Topic, Partition: tp.Partition, Offset: pos,
	})
	c.corr++
	s.send(broker.Envelope{From: c.id, To: leader, Msg: broker.FetchRequest{
		Correlation: c.corr, TopicPartition: tp, Offset: pos, MaxBytes: 64 << 10,
		MinBytes: 1, MaxWaitMs: w.FetchMaxWaitMs, CurrentLeaderEpoch: -1,
	}})
	c.inflight = &inflight{corr: c.corr, op: op, deadline: s.now + w.FetchMaxWaitMs + 1000}
}

func (c *client) handle(env broker.Envelope) {
	if c.prod != nil {
		c.prod.Handle(env.From, env.Msg, c.s.now)
		c.flushProducer()
		return
	}
	if c.group != nil {
		c.handleGroup(env)
		return
	}
	f := c.inflight
	switch m := env.Msg.(type) {
	case broker.MetadataResponse:
		if f == nil || f.corr != m.Correlation {
			return
		}
		c.inflight = nil
		for _, p := range m.Partitions {
			c.leaders[p.TopicPartition] = p.Leader
		}
		c.needMeta = false
	case broker.FetchResponse:
		if f == nil || f.corr != m.Correlation {
			return
		}
		c.inflight = nil
		op := &c.s.history[f.op]
		if m.Err != nil {
			c.finish(f.op, linearizability.OutcomeFail, m.Err.Error())
			c.needMeta = true
			if c.final != nil {
				c.afterFinalFetch(m.TopicPartition, false)
			}
			return
		}
		op.HW = m.HW
		next := op.Offset
		for _, b := range m.Batches {
			for i, r := range b.Records {
				off := b.BaseOffset + int64(i)
				if off < op.Offset {
					continue
				}
				op.Records = append(op.Records, linearizability.Record{Offset: off, Value: string(r.Value)})
				next = off + 1
			}
		}
		c.pos[m.TopicPartition] = next
		c.finish(f.op, linearizability.OutcomeOK, "")
		if c.final != nil {
			c.afterFinalFetch(m.TopicPartition, true)
		}
	case broker.ListOffsetsResponse:
		if f == nil || f.corr != m.Correlation {
			return
		}
		c.inflight = nil
		op := &c.s.history[f.op]
		if m.Err != nil {
			c.finish(f.op, linearizability.OutcomeFail, m.Err.Error())
			c.needMeta = true
			return
		}
		op.Offset = m.Offset
		c.finish(f.op, linearizability.OutcomeOK, "")
		if c.final != nil {
			c.final.target = m.Offset
			c.final.pos = 0
		}
	}
}

func (s *world) record(op linearizability.Op) int {
	op.ID = len(s.history)
	op.Call = s.now
	op.Return = -1
	s.history = append(s.history, op)
	return op.ID
}

func (c *client) finish(i int, outcome linearizability.Outcome, errText string) {
	op := &c.s.history[i]
	op.Return = c.s.now
	op.Outcome = outcome
	op.Error = errText
}

// startProducer gives a producer client a fresh reference producer: a new
// process, so a new producer id once it asks for one.
func (c *client) startProducer() {
	s := c.s
	p, err := refclient.NewProducer(c.id, s.cfg.producerConfig(), rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64())))
	if err != nil {
		panic(err) // Validate checked the same configuration
	}
	c.prod = p
	c.sends = map[uint64]int{}
}

// tickProducer sends the next record when it is due, round-robin over the
// partitions, and lets the producer retry and time out what is in flight.
func (c *client) tickProducer() {
	s := c.s
	w := s.cfg.Workload
	if !s.workloadOver && s.now >= c.nextAt && c.prod.Pending() < 2*max(w.MaxInFlight, 1)*len(c.tps) {
		tp := c.tps[c.rr%len(c.tps)]
		c.rr++
		c.seq++
		value := fmt.Sprintf("c%d-%d", c.id-broker.ClientIDBase, c.seq)
		op := s.record(linearizability.Op{
			Client: int(c.id - broker.ClientIDBase), Kind: linearizability.KindProduce,
			Topic: tp.Topic, Partition: tp.Partition, Value: value, Acks: int(w.Acks), Offset: -1,
		})
		id := c.prod.Send(refclient.Message{Topic: tp.Topic, Partition: tp.Partition, Value: []byte(value)}, s.now)
		c.sends[id] = op
		s.stats.Produced++
		c.nextAt = s.now + w.ProduceIntervalMs
	}
	c.prod.Tick(s.now)
	c.flushProducer()
}

// flushProducer sends what the producer queued and closes the operations of
// the sends it finished.
func (c *client) flushProducer() {
	out, results := c.prod.Ready()
	for _, env := range out {
		c.s.send(env)
	}
	for _, r := range results {
		i, ok := c.sends[r.ID]
		if !ok {
			continue
		}
		delete(c.sends, r.ID)
		op := &c.s.history[i]
		op.ProducerID, op.ProducerEpoch, op.Sequence = r.ProducerID, r.ProducerEpoch, r.Sequence
		errText := ""
		if r.Err != nil {
			errText = r.Err.Error()
		}
		switch r.Outcome {
		case refclient.OutcomeOK:
			op.Offset = r.Offset
			c.finish(i, linearizability.OutcomeOK, "")
			c.s.onAck()
		case refclient.OutcomeFail:
			c.finish(i, linearizability.OutcomeFail, errText)
		default:
			c.finish(i, linearizability.OutcomeUnknown, errText)
		}
	}
}

// restartProducer kills the producer process and starts a new one: a new
// producer id, sequences from 0. What was in flight ends unknown to the
// application, which sends its last unacknowledged record again, as an
// application that cannot tell would. The new identity means no broker can
// tell the resend from a new record: it may be written twice, the limit
// SEMANTICS.md states for exactly-once ("per producer session").
func (c *client) restartProducer() {
	s := c.s
	last := -1
	for _, i := range c.sends {
		if i > last {
			last = i
		}
		c.finish(i, linearizability.OutcomeUnknown, "producer restarted")
	}
	c.startProducer()
	s.stats.ProducerRestarts++
	s.note(fmt.Sprintf("restart producer %d", c.id-broker.ClientIDBase))
	if last < 0 || s.workloadOver {
		return
	}
	orig := s.history[last]
	op := s.record(linearizability.Op{
		Client: orig.Client, Kind: linearizability.KindProduce, Topic: orig.Topic, Partition: orig.Partition,
		Value: orig.Value, Acks: orig.Acks, Offset: -1, Resend: true,
	})
	id := c.prod.Send(refclient.Message{Topic: orig.Topic, Partition: orig.Partition, Value: []byte(orig.Value)}, s.now)
	c.sends[id] = op
	s.stats.Resends++
	c.flushProducer()
}
