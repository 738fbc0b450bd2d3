package traffic

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/watermarkhq/watermark/conformance/kitclient"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// client is a simulated producer or consumer. Each has one request in
// flight at a time and records every operation in the run's history.
type client struct {
	s        *World
	id       clientmsg.NodeID
	producer bool
	tps      []kafka.TopicPartition
	rr       int
	leaders  map[kafka.TopicPartition]int32
	// epochs are the leaders' epochs from the same metadata: a fetch names
	// its leader's epoch (KIP-320), so a leader that has since lost and
	// regained leadership fences it.
	epochs   map[kafka.TopicPartition]int32
	needMeta bool

	corr     uint64
	inflight *inflight
	nextAt   int64
	seq      int
	// nextLookup and lookups pace a consumer's offset lookups
	// (Workload.ListOffsetsEveryMs).
	nextLookup int64
	lookups    int
	pos        map[kafka.TopicPartition]int64 // consumer positions

	final *finalRead // set for the final reader
	group *groupConsumer

	// Producers run the kit's producer (conformance/kitclient); sends maps a
	// send's id to its operation in the history.
	prod  *kitclient.Producer
	sends map[uint64]int
}

// finalRead reads every partition from its log start offset (it starts at
// 0 and moves on OFFSET_OUT_OF_RANGE) to the HW that ListOffsets
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
	op       int // index in history, or -1 for a metadata request or an earliest ListOffsets
	deadline int64
	// earliest marks a ListOffsets for the log start offset, after an
	// OFFSET_OUT_OF_RANGE that did not name it (Kafka's answer does not).
	earliest bool
	// lookup marks a consumer's periodic earliest lookup
	// (Workload.ListOffsetsEveryMs): its answer moves nothing.
	lookup bool
}

// Start starts the workload's clients, and the final reader unless the
// run skips the final read.
func (s *World) Start() {
	var tps []kafka.TopicPartition
	for _, t := range s.Spec.Topics {
		for p := int32(0); p < t.Partitions; p++ {
			tps = append(tps, kafka.TopicPartition{Topic: t.Name, Partition: p})
		}
	}
	w := s.Spec.Workload
	for i := 0; i < w.Producers+w.Consumers+w.GroupConsumers; i++ {
		c := &client{
			s:        s,
			id:       clientmsg.ClientIDBase + clientmsg.NodeID(i),
			producer: i < w.Producers,
			tps:      tps,
			rr:       s.Rng.IntN(len(tps)),
			leaders:  map[kafka.TopicPartition]int32{},
			epochs:   map[kafka.TopicPartition]int32{},
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
		s.schedule(c.id, s.Rng.Int64N(s.Spec.TickMs)+s.Spec.TickMs)
	}
	if !s.Spec.NoFinalRead {
		c := &client{
			s:        s,
			id:       clientmsg.ClientIDBase + clientmsg.NodeID(len(s.clients)),
			tps:      tps,
			leaders:  map[kafka.TopicPartition]int32{},
			epochs:   map[kafka.TopicPartition]int32{},
			needMeta: true,
			pos:      map[kafka.TopicPartition]int64{},
			final:    &finalRead{target: -1},
		}
		s.clients = append(s.clients, c)
		s.schedule(c.id, s.Rng.Int64N(s.Spec.TickMs)+s.Spec.TickMs)
	}
}

// StartFinalRead starts the read of every partition to its end.
func (s *World) StartFinalRead() {
	for _, c := range s.clients {
		if c.final != nil {
			c.final.active = true
			s.Note(run.Note{Kind: run.NoteHarness, Text: "final read of every partition"})
		}
	}
}

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
			Client: int(c.id - clientmsg.ClientIDBase), Kind: linearizability.KindListOffsets,
			Topic: tp.Topic, Partition: tp.Partition, Offset: -1,
		})
		c.corr++
		s.send(clientmsg.Envelope{From: c.id, To: clientmsg.NodeID(leader), Msg: clientmsg.ListOffsetsRequest{Correlation: c.corr, TopicPartition: tp, Latest: true}})
		c.inflight = &inflight{corr: c.corr, op: op, deadline: s.Now + 1000}
		return
	}
	c.pos[tp] = f.pos
	c.fetchUpTo(tp, clientmsg.NodeID(leader), finalFetchBytes)
	f.ops = append(f.ops, c.inflight.op)
}

// afterFinalFetch advances the final read after one of its fetches. A
// fetch that failed or timed out is sent again from where the read stands
// (after new metadata): starting the partition over would read backwards,
// a nonmonotonic poll the read itself made. One that read records but not
// to the end is followed by the next at once, as a real consumer reads
// what it is given without waiting for a timer: a broker that answers
// with one batch per fetch is read at its pace, not the harness's tick's.
func (c *client) afterFinalFetch(tp kafka.TopicPartition, ok bool) {
	f := c.final
	if !ok {
		return
	}
	f.pos = c.pos[tp]
	if f.pos < f.target {
		if c.inflight == nil && !c.needMeta {
			c.tickFinal()
		}
		return
	}
	for _, i := range f.ops {
		c.s.History[i].Final = true
	}
	f.tp++
	f.target, f.pos, f.ops = -1, 0, nil
	if f.tp == len(c.tps) {
		c.s.Stats.FinalReadDone = true
		c.s.Note(run.Note{Kind: run.NoteHarness, Text: "final read complete"})
	}
}

func (c *client) tick() {
	s := c.s
	if f := c.inflight; f != nil {
		if s.Now < f.deadline {
			return
		}
		// No answer: the request or its response was lost, or the broker
		// is stuck. The operation may or may not have happened.
		if f.op >= 0 {
			c.finish(f.op, linearizability.OutcomeUnknown, errClientTimeout)
		}
		c.inflight = nil
		c.needMeta = true
		if c.final != nil && f.op >= 0 && c.s.History[f.op].Kind == linearizability.KindFetch {
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
	if s.Now < c.nextAt {
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
	if every := s.Spec.Workload.ListOffsetsEveryMs; every > 0 && s.Now >= c.nextLookup {
		c.nextLookup = s.Now + every
		c.lookups++
		c.lookUp(tp, clientmsg.NodeID(leader), c.lookups%2 == 1)
		return
	}
	c.fetch(tp, clientmsg.NodeID(leader))
}

// lookUp asks leader for tp's latest offset (recorded, as the final read's
// is: the HW, which the model bounds by the committed log) or its earliest
// (the log start, which the simulator's invariants judge).
func (c *client) lookUp(tp kafka.TopicPartition, leader clientmsg.NodeID, latest bool) {
	c.corr++
	f := &inflight{corr: c.corr, op: -1, deadline: c.s.Now + 1000, lookup: !latest}
	if latest {
		f.op = c.s.record(linearizability.Op{
			Client: int(c.id - clientmsg.ClientIDBase), Kind: linearizability.KindListOffsets,
			Topic: tp.Topic, Partition: tp.Partition, Offset: -1,
		})
	}
	c.s.send(clientmsg.Envelope{From: c.id, To: leader, Msg: clientmsg.ListOffsetsRequest{Correlation: c.corr, TopicPartition: tp, Latest: latest}})
	c.inflight = f
}

func (c *client) requestMetadata() {
	live := c.s.Host.LiveBrokers()
	to := clientmsg.VoterNode(1) // any voter answers metadata from its log
	if len(live) > 0 {
		to = live[c.s.Rng.IntN(len(live))]
	}
	c.corr++
	c.inflight = &inflight{corr: c.corr, op: -1, deadline: c.s.Now + 500}
	c.s.send(clientmsg.Envelope{From: c.id, To: to, Msg: clientmsg.MetadataRequest{Correlation: c.corr}})
}

// finalFetchBytes is what each fetch of the final read asks for: as much
// as a real consumer's fetch.max.bytes allows a partition (1 MiB,
// max.partition.fetch.bytes), so that the read takes few round trips.
const finalFetchBytes = 1 << 20

func (c *client) fetch(tp kafka.TopicPartition, leader clientmsg.NodeID) {
	c.fetchUpTo(tp, leader, 64<<10)
}

// fetchUpTo fetches tp from leader, up to maxBytes.
func (c *client) fetchUpTo(tp kafka.TopicPartition, leader clientmsg.NodeID, maxBytes int) {
	s := c.s
	w := s.Spec.Workload
	pos := c.pos[tp]
	op := s.record(linearizability.Op{
		Client: int(c.id - clientmsg.ClientIDBase), Kind: linearizability.KindFetch,
		Topic: tp.Topic, Partition: tp.Partition, Offset: pos,
	})
	c.corr++
	s.send(clientmsg.Envelope{From: c.id, To: leader, Msg: clientmsg.FetchRequest{
		Correlation: c.corr, TopicPartition: tp, Offset: pos, MaxBytes: maxBytes,
		MinBytes: 1, MaxWaitMs: w.FetchMaxWaitMs, CurrentLeaderEpoch: c.epochOf(tp),
	}})
	c.inflight = &inflight{corr: c.corr, op: op, deadline: s.Now + w.FetchMaxWaitMs + 1000}
}

// epochOf is the leader epoch a fetch of tp names: the one metadata gave
// with its leader, -1 (do not check) when metadata gave none.
func (c *client) epochOf(tp kafka.TopicPartition) int32 {
	if e, ok := c.epochs[tp]; ok {
		return e
	}
	return -1
}

func (c *client) handle(env clientmsg.Envelope) {
	if m, ok := env.Msg.(clientmsg.FetchResponse); ok &&
		(errors.Is(m.Err, kafka.ErrFencedLeaderEpoch) || errors.Is(m.Err, kafka.ErrUnknownLeaderEpoch)) {
		c.s.Reached(run.SitFencedFetch) // late answers too: they show the fence
	}
	if c.prod != nil {
		c.prod.Handle(env.From, env.Msg, c.s.Now)
		c.flushProducer()
		return
	}
	if c.group != nil {
		c.handleGroup(env)
		return
	}
	_, _ = consumerAnswers().Handle(answered{c, env}, env.Msg)
}

func (s *World) record(op linearizability.Op) int {
	op.ID = len(s.History)
	op.Call = s.Now
	op.Return = -1
	s.History = append(s.History, op)
	return op.ID
}

func (c *client) finish(i int, outcome linearizability.Outcome, err error) {
	op := &c.s.History[i]
	op.Return = c.s.Now
	op.Outcome = outcome
	setError(op, err)
}

// startProducer gives a producer client a fresh producer (kitclient): a
// new process, so a new producer id once it asks for one.
func (c *client) startProducer() {
	s := c.s
	p, err := kitclient.NewProducer(c.id, s.Spec.ProducerConfig(), rand.New(rand.NewPCG(s.Rng.Uint64(), s.Rng.Uint64())))
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
	w := s.Spec.Workload
	if !s.Over && s.Now >= c.nextAt && c.prod.Pending() < 2*max(w.MaxInFlight, 1)*len(c.tps) {
		tp := c.tps[c.rr%len(c.tps)]
		c.rr++
		c.seq++
		value := fmt.Sprintf("%sc%d-%d", w.ValuePrefix, c.id-clientmsg.ClientIDBase, c.seq)
		op := s.record(linearizability.Op{
			Client: int(c.id - clientmsg.ClientIDBase), Kind: linearizability.KindProduce,
			Topic: tp.Topic, Partition: tp.Partition, Value: value, Acks: int(w.Acks), Offset: -1,
		})
		id := c.prod.Send(kitclient.Message{Topic: tp.Topic, Partition: tp.Partition, Value: []byte(value)}, s.Now)
		c.sends[id] = op
		s.Stats.Produced++
		c.nextAt = s.Now + w.ProduceIntervalMs
	}
	c.prod.Tick(s.Now)
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
		op := &c.s.History[i]
		op.ProducerID, op.ProducerEpoch, op.Sequence = r.ProducerID, r.ProducerEpoch, r.Sequence
		switch r.Outcome {
		case kitclient.OutcomeOK:
			op.Offset = r.Offset
			c.finish(i, linearizability.OutcomeOK, nil)
			c.s.Host.OnAck()
		case kitclient.OutcomeFail:
			c.finish(i, linearizability.OutcomeFail, r.Err)
		default:
			c.finish(i, linearizability.OutcomeUnknown, r.Err)
		}
	}
}

// restartProducer kills the producer process and starts a new one: a new
// producer id, sequences from 0. What was in flight ends unknown to the
// application, which sends its last unacknowledged record again, as an
// application that cannot tell would. The new identity means no broker can
// tell the resend from a new record: it may be written twice, the limit
// spec/SEMANTICS.md states for exactly-once ("per producer session").
func (c *client) restartProducer() {
	s := c.s
	last := -1
	for _, i := range c.sends {
		if i > last {
			last = i
		}
		c.finish(i, linearizability.OutcomeUnknown, errProducerRestarted)
	}
	c.startProducer()
	s.Stats.ProducerRestarts++
	s.Note(run.Note{Kind: run.NoteFault, Fault: run.FaultRestartProducer, Node: int(c.id - clientmsg.ClientIDBase),
		Text: fmt.Sprintf("restart producer %d", c.id-clientmsg.ClientIDBase)})
	if last < 0 || s.Over {
		return
	}
	orig := s.History[last]
	op := s.record(linearizability.Op{
		Client: orig.Client, Kind: linearizability.KindProduce, Topic: orig.Topic, Partition: orig.Partition,
		Value: orig.Value, Acks: orig.Acks, Offset: -1, Resend: true,
	})
	id := c.prod.Send(kitclient.Message{Topic: orig.Topic, Partition: orig.Partition, Value: []byte(orig.Value)}, s.Now)
	c.sends[id] = op
	s.Stats.Resends++
	c.flushProducer()
}

// Errors of the clients' own, which no broker answered.
var (
	errClientTimeout     = errors.New("client timeout")
	errProducerRestarted = errors.New("producer restarted")
)

// setError records err on op: its text, and its Kafka code when a broker
// answered with one.
func setError(op *linearizability.Op, err error) {
	op.Error, op.Code = "", 0
	if err == nil {
		return
	}
	op.Error = err.Error()
	var k *kafka.Error
	if errors.As(err, &k) {
		op.Code = k.Code()
	}
}

// listEarliest asks leader for tp's log start offset, which the
// OFFSET_OUT_OF_RANGE answer of a fetch did not name.
func (c *client) listEarliest(tp kafka.TopicPartition, leader clientmsg.NodeID) {
	c.corr++
	c.s.send(clientmsg.Envelope{From: c.id, To: leader, Msg: clientmsg.ListOffsetsRequest{Correlation: c.corr, TopicPartition: tp}})
	c.inflight = &inflight{corr: c.corr, op: -1, deadline: c.s.Now + 1000, earliest: true}
}

// skipTo moves the client's position in tp to start, the log start offset
// a fetch below it was refused with (retention deleted what it would read
// next), as auto.offset.reset=earliest does: an assign op in the history,
// so the checkers see the jump as a reposition, not a skipped poll.
func (c *client) skipTo(tp kafka.TopicPartition, start int64) {
	op := c.s.record(linearizability.Op{Client: int(c.id - clientmsg.ClientIDBase), Kind: linearizability.KindAssign,
		Topic: tp.Topic, Partition: tp.Partition, Offset: start})
	c.finish(op, linearizability.OutcomeOK, nil)
	c.s.Reached(run.SitFetchBelowLogStart)
	c.pos[tp] = start
	if f := c.final; f != nil && f.tp < len(c.tps) && c.tps[f.tp] == tp {
		f.pos = start
	}
}
