package kitclient

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// session is the identity an idempotent producer writes under: a PID and
// epoch from InitProducerID. Sequences count per (session, partition).
type session struct {
	pid   int64
	epoch int16
}

// noSession marks no session: a non-idempotent producer, a batch without a
// sequence, a producer waiting for a PID.
var noSession = session{pid: record.NoProducerID, epoch: -1}

// leaderInfo is what metadata says about one partition.
type leaderInfo struct {
	leader int32 // -1: offline
	epoch  int32
}

// control is a metadata or InitProducerID request in flight.
//
// Invariant: corr == 0 <=> no request in flight.
type control struct {
	corr     uint64
	to       clientmsg.NodeID
	deadline int64
	number   uint64 // metadata only: requests sent so far, this one included
}

// Producer is the reference producer. It is not safe for concurrent use:
// the caller serializes Send, Handle, Tick, UpdateMetadata and Ready.
type Producer struct {
	id   clientmsg.NodeID
	cfg  Config
	rng  *rand.Rand
	part *Partitioner
	now  int64

	lastID uint64 // of Send
	corr   uint64 // of requests

	// Metadata.
	clusterView
	meta          control
	metaSent      uint64 // metadata requests sent so far
	metaWanted    bool
	metaNotBefore int64

	// Idempotence. sess is the session partitions adopt; noSession while
	// there is none or it was abandoned and a new PID is on its way.
	sess         session
	pid          control
	pidNotBefore int64

	parts   map[kafka.TopicPartition]*partState
	order   []*partState // sorted by topic, partition: every pass uses it
	pending []*batch     // sends whose topic is not in metadata yet, in Send order
	byCorr  map[uint64]*batch

	unreported int // sends without a Result yet
	out        []clientmsg.Envelope
	results    []Result
}

// NewProducer returns a producer that sends as node id, drawing every
// random choice (round-robin starts, which broker to ask) from rng.
func NewProducer(id clientmsg.NodeID, cfg Config, rng *rand.Rand) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("%w: nil rng", ErrInvalidConfig)
	}
	cfg.Bootstrap = slices.Clone(cfg.Bootstrap)
	return &Producer{
		id:          id,
		cfg:         cfg,
		rng:         rng,
		part:        NewPartitioner(rng),
		clusterView: newClusterView(0),
		sess:        noSession,
		parts:       map[kafka.TopicPartition]*partState{},
		byCorr:      map[uint64]*batch{},
		// Correlation ids start at a random point: a real client's new
		// process has new connections and never sees its predecessor's
		// answers, but in the simulator they reach the same node id.
		corr: rng.Uint64() >> 1,
	}, nil
}

// Send queues m and returns the send's ID, which its Result carries. The
// record's timestamp is now.
func (p *Producer) Send(m Message, now int64) uint64 {
	p.advance(now)
	p.lastID++
	b := &batch{
		id:       p.lastID,
		tp:       kafka.TopicPartition{Topic: m.Topic, Partition: m.Partition},
		records:  []record.Record{{Key: cloneBytes(m.Key), Value: cloneBytes(m.Value), Timestamp: now}},
		deadline: now + p.cfg.DeliveryTimeoutMs,
		sess:     noSession,
		seq:      record.NoSequence,
		sentSess: noSession,
		sentSeq:  record.NoSequence,
	}
	p.unreported++
	if m.Topic == "" || m.Partition < -1 {
		b.tp.Partition = -1
		p.emit(b.resultOf(OutcomeFail, -1, fmt.Errorf("%w: topic %q partition %d", ErrInvalidMessage, m.Topic, m.Partition)))
		return b.id
	}
	if n, ok := p.topics[m.Topic]; ok {
		if ps := p.assign(b, n); ps != nil {
			p.settle(ps)
		}
		p.maybeRequestControl()
		return b.id
	}
	p.pending = append(p.pending, b)
	p.metaWanted = true
	p.maybeRequestControl()
	return b.id
}

// UpdateMetadata installs partition states and live brokers learnt outside
// the producer (the simulator's view, a test). It counts as fresh metadata
// for every partition. Nothing is sent until the next Send, Handle or Tick,
// which carry the time.
func (p *Producer) UpdateMetadata(parts []kafka.PartitionState, live []int32) {
	p.applyMetadata(parts, live)
	for _, ps := range p.order {
		ps.stale = false
	}
}

// Handle takes a message addressed to the producer: ProduceResponse,
// MetadataResponse or InitProducerIDResponse. Answers to requests the
// producer no longer waits for (timed out, or from another node than the
// one asked) are dropped, as Kafka drops them with the connection.
func (p *Producer) Handle(from clientmsg.NodeID, msg kafka.Message, now int64) {
	p.advance(now)
	_, _ = producerHandlers().Handle(toProducer{p, from}, msg)
}

// toProducer is what a producer's handler gets besides its message.
type toProducer struct {
	p    *Producer
	from clientmsg.NodeID
}

// producerHandlers is the producer's table of what it does with each
// answer it receives.
var producerHandlers = sync.OnceValue(func() *kafka.Handlers[toProducer] {
	h := &kafka.Handlers[toProducer]{}
	kafka.On(h, func(in toProducer, m clientmsg.ProduceResponse) error { in.p.handleProduce(in.from, m); return nil })
	kafka.On(h, func(in toProducer, m clientmsg.MetadataResponse) error { in.p.handleMetadata(in.from, m); return nil })
	kafka.On(h, func(in toProducer, m clientmsg.InitProducerIDResponse) error {
		in.p.handleInitProducerID(in.from, m)
		return nil
	})
	return h
})

func (p *Producer) handleProduce(from clientmsg.NodeID, m clientmsg.ProduceResponse) {
	b, ok := p.byCorr[m.Correlation]
	if !ok || b.to != from || b.tp != m.TopicPartition {
		return
	}
	ps := p.parts[b.tp]
	p.endAttempt(ps, b)
	p.afterAttempt(ps, b, m.Err, m.BaseOffset)
	p.settle(ps)
	p.maybeRequestControl()
}

func (p *Producer) handleMetadata(from clientmsg.NodeID, m clientmsg.MetadataResponse) {
	if p.meta.corr == 0 || m.Correlation != p.meta.corr || from != p.meta.to {
		return
	}
	if m.Err != nil {
		// As a timeout, but now: ask another broker.
		p.silent = p.meta.to
		p.meta = control{}
		p.metaWanted = true
		p.maybeRequestControl()
		return
	}
	number := p.meta.number
	p.meta = control{}
	p.metaNotBefore = p.now + p.cfg.RetryBackoffMs
	p.applyMetadata(m.Partitions, m.LiveBrokers)
	for _, ps := range p.order {
		if ps.stale && ps.staleAfter < number {
			ps.stale = false
		}
	}
	p.settleAll()
}

func (p *Producer) handleInitProducerID(from clientmsg.NodeID, m clientmsg.InitProducerIDResponse) {
	if p.pid.corr == 0 || m.Correlation != p.pid.corr || from != p.pid.to {
		return
	}
	p.pid = control{}
	if m.Err != nil {
		p.pidNotBefore = p.now + p.cfg.RetryBackoffMs
		p.maybeRequestControl()
		return
	}
	p.sess = session{pid: m.ProducerID, epoch: m.ProducerEpoch}
	p.settleAll()
}

// Tick advances logical time: requests without an answer time out, sends
// past their delivery timeout complete, backoffs end.
func (p *Producer) Tick(now int64) {
	p.advance(now)
	if p.meta.corr != 0 && p.now >= p.meta.deadline {
		p.silent = p.meta.to
		p.meta = control{}
		p.metaWanted = true
	}
	if p.pid.corr != 0 && p.now >= p.pid.deadline {
		p.silent = p.pid.to
		p.pid = control{}
	}
	p.expirePending()
	for _, ps := range p.order {
		for _, b := range ps.queue {
			if b.state == stateInFlight && p.now >= b.respDeadline {
				p.endAttempt(ps, b)
				p.afterAttempt(ps, b, ErrResponseTimeout, -1)
			}
		}
		p.expire(ps)
	}
	p.settleAll()
}

// Ready returns the messages to send, in order, and the sends completed
// since the last call. The caller owns both slices.
func (p *Producer) Ready() ([]clientmsg.Envelope, []Result) {
	out, res := p.out, p.results
	p.out, p.results = nil, nil
	return out, res
}

// Pending is the number of sends without a Result yet.
func (p *Producer) Pending() int { return p.unreported }

// Session returns the producer id and epoch new batches are written under,
// or record.NoProducerID and -1 when there is none (not idempotent, or a
// PID is being requested).
func (p *Producer) Session() (int64, int16) { return p.sess.pid, p.sess.epoch }

func (p *Producer) advance(now int64) {
	if now > p.now {
		p.now = now
	}
}

func (p *Producer) send(to clientmsg.NodeID, msg kafka.Message) {
	p.out = append(p.out, clientmsg.Envelope{From: p.id, To: to, Msg: msg})
}

func (p *Producer) emit(r Result) {
	p.results = append(p.results, r)
	p.unreported--
}

// settleAll runs settle over every partition, in order, then asks for
// what is missing.
func (p *Producer) settleAll() {
	for _, ps := range p.order {
		p.settle(ps)
	}
	if len(p.pending) > 0 {
		p.metaWanted = true
	}
	p.maybeRequestControl()
}

// maybeRequestControl sends a metadata or InitProducerID request when one
// is wanted, none is in flight, and its backoff has passed.
func (p *Producer) maybeRequestControl() {
	if p.cfg.Idempotent && p.sess == noSession && p.pid.corr == 0 && p.now >= p.pidNotBefore && p.unreported > 0 {
		if to, ok := p.pickBroker(); ok {
			p.corr++
			p.pid = control{corr: p.corr, to: to, deadline: p.now + p.cfg.MetadataTimeoutMs}
			p.send(to, clientmsg.InitProducerIDRequest{Correlation: p.corr})
		}
	}
	if p.metaWanted && p.meta.corr == 0 && p.now >= p.metaNotBefore {
		if to, ok := p.pickBroker(); ok {
			p.corr++
			p.metaSent++
			p.meta = control{corr: p.corr, to: to, deadline: p.now + p.cfg.MetadataTimeoutMs, number: p.metaSent}
			p.metaWanted = false
			p.send(to, clientmsg.MetadataRequest{Correlation: p.corr})
		}
	}
}

// pickBroker chooses a broker to ask for metadata or a producer id.
func (p *Producer) pickBroker() (clientmsg.NodeID, bool) { return p.pick(p.cfg.Bootstrap, p.rng) }

// applyMetadata merges partition states (clusterView.merge), then
// partitions waiting sends whose topic became known.
func (p *Producer) applyMetadata(parts []kafka.PartitionState, live []int32) {
	p.merge(parts, live)
	if len(p.pending) == 0 {
		return
	}
	waiting := p.pending[:0]
	for _, b := range p.pending {
		if n, ok := p.topics[b.tp.Topic]; ok {
			p.assign(b, n)
			continue
		}
		waiting = append(waiting, b)
	}
	clear(p.pending[len(waiting):])
	p.pending = waiting
}

// assign gives b its partition and queues it there, or fails it when an
// explicit partition does not exist. It returns the partition's state, or
// nil when b failed.
func (p *Producer) assign(b *batch, partitions int32) *partState {
	if b.tp.Partition >= partitions {
		p.emit(b.resultOf(OutcomeFail, -1, fmt.Errorf("%s: %w (topic has %d partitions)", b.tp, kafka.ErrUnknownTopicOrPartition, partitions)))
		return nil
	}
	b.tp.Partition = p.part.Partition(b.tp.Topic, b.tp.Partition, b.records[0].Key, int(partitions), p.available(b.tp.Topic, partitions))
	ps := p.partition(b.tp)
	ps.queue = append(ps.queue, b)
	return ps
}

// available lists the partitions of topic that have a leader, ascending.
func (p *Producer) available(topic string, partitions int32) []int32 {
	var ids []int32
	for i := int32(0); i < partitions; i++ {
		if l, ok := p.leaders[kafka.TopicPartition{Topic: topic, Partition: i}]; ok && l.leader >= 0 {
			ids = append(ids, i)
		}
	}
	return ids
}

// partition returns the state of tp, creating it on first use.
func (p *Producer) partition(tp kafka.TopicPartition) *partState {
	if ps, ok := p.parts[tp]; ok {
		return ps
	}
	ps := &partState{tp: tp, sess: noSession}
	p.parts[tp] = ps
	i, _ := slices.BinarySearchFunc(p.order, tp, func(s *partState, tp kafka.TopicPartition) int {
		if c := cmp.Compare(s.tp.Topic, tp.Topic); c != 0 {
			return c
		}
		return cmp.Compare(s.tp.Partition, tp.Partition)
	})
	p.order = slices.Insert(p.order, i, ps)
	return ps
}

// expirePending fails waiting-for-metadata sends past their delivery
// timeout. Nothing was sent for them, so they certainly were not written.
func (p *Producer) expirePending() {
	n := 0
	for _, b := range p.pending {
		if p.now >= b.deadline {
			p.emit(b.resultOf(OutcomeFail, -1, fmt.Errorf("%w: topic %q: %w", ErrDeliveryTimeout, b.tp.Topic, kafka.ErrUnknownTopicOrPartition)))
			continue
		}
		p.pending[n] = b
		n++
	}
	clear(p.pending[n:])
	p.pending = p.pending[:n]
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
