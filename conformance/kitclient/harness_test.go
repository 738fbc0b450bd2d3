package kitclient

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

// fakeEntry is one record in a fake partition log.
type fakeEntry struct {
	value string
	pid   int64
	epoch int16
	seq   int32
}

// fakeBatch is a batch a fake partition remembers for a producer.
type fakeBatch struct {
	first, last int32
	base        int64
}

// fakeProducerState is a fake partition's memory of one PID.
type fakeProducerState struct {
	epoch   int16
	batches []fakeBatch // the last partition.DedupWindow, oldest first
}

// fakePartition is a partition as the fake cluster keeps it: one log, no
// replicas. Data loss is modelled by truncating the log and rebuilding the
// producer state from what is left, as a new leader would.
type fakePartition struct {
	leader      int32
	leaderEpoch int32
	log         []fakeEntry
	producers   map[int64]*fakeProducerState
}

func (fp *fakePartition) observe(e fakeEntry, offset int64) {
	if e.pid == record.NoProducerID {
		return
	}
	st := fp.producers[e.pid]
	if st == nil || e.epoch > st.epoch {
		st = &fakeProducerState{epoch: e.epoch}
		fp.producers[e.pid] = st
	}
	st.batches = append(st.batches, fakeBatch{first: e.seq, last: e.seq, base: offset})
	if len(st.batches) > partition.DedupWindow {
		st.batches = st.batches[1:]
	}
}

// check applies spec/SEMANTICS.md's idempotence rules to a one-record batch:
// it returns the original offset of a duplicate, or an error, or (-1, nil)
// to append.
func (fp *fakePartition) check(pid int64, epoch int16, seq int32) (int64, error) {
	st := fp.producers[pid]
	switch {
	case st == nil && seq == 0:
		return -1, nil
	case st == nil:
		return -1, kafka.ErrUnknownProducerID
	case epoch < st.epoch:
		return -1, kafka.ErrInvalidProducerEpoch
	case epoch > st.epoch && seq != 0:
		return -1, kafka.ErrOutOfOrderSequence
	case epoch > st.epoch:
		return -1, nil
	}
	for _, b := range st.batches {
		if b.first == seq {
			return b.base, nil
		}
	}
	if last := st.batches[len(st.batches)-1].last; seq != last+1 {
		return -1, kafka.ErrOutOfOrderSequence
	}
	return -1, nil
}

// fakeCluster answers the producer's requests the way the reference broker
// does, with hooks to inject faults.
type fakeCluster struct {
	brokers []int32
	parts   map[kafka.TopicPartition]*fakePartition
	lastPID int64

	// refuse, when set, may refuse a produce before the append.
	refuse func(req broker.ProduceRequest) error
	// afterAppend, when set, may fail a produce after the append.
	afterAppend func(req broker.ProduceRequest) error
	// metadataLeader, when set, overrides the leader metadata reports (a
	// lagging broker).
	metadataLeader func(tp kafka.TopicPartition) (int32, bool)
}

func newFakeCluster(brokers []int32) *fakeCluster {
	return &fakeCluster{brokers: brokers, parts: map[kafka.TopicPartition]*fakePartition{}}
}

func (fc *fakeCluster) createTopic(topic string, partitions int32) {
	for i := range partitions {
		fc.parts[kafka.TopicPartition{Topic: topic, Partition: i}] = &fakePartition{
			leader:    fc.brokers[int(i)%len(fc.brokers)],
			producers: map[int64]*fakeProducerState{},
		}
	}
}

// moveLeader makes leader lead tp in a new leader epoch.
func (fc *fakeCluster) moveLeader(tp kafka.TopicPartition, leader int32) {
	fp := fc.parts[tp]
	fp.leader = leader
	fp.leaderEpoch++
}

// truncate loses tp's records from offset on (acks=1 loss, an unclean
// election) and rebuilds producer state from the rest.
func (fc *fakeCluster) truncate(tp kafka.TopicPartition, offset int64) {
	fp := fc.parts[tp]
	fp.log = fp.log[:offset]
	fp.producers = map[int64]*fakeProducerState{}
	for i, e := range fp.log {
		fp.observe(e, int64(i))
	}
}

func (fc *fakeCluster) values(tp kafka.TopicPartition) []string {
	var vs []string
	for _, e := range fc.parts[tp].log {
		vs = append(vs, e.value)
	}
	return vs
}

func (fc *fakeCluster) states() []kafka.PartitionState {
	var out []kafka.PartitionState
	for tp, fp := range fc.parts {
		leader := fp.leader
		if fc.metadataLeader != nil {
			if l, ok := fc.metadataLeader(tp); ok {
				leader = l
			}
		}
		s := kafka.PartitionState{Leader: leader, LeaderEpoch: fp.leaderEpoch, Replicas: slices.Clone(fc.brokers), ISR: slices.Clone(fc.brokers)}
		s.Topic, s.Partition = tp.Topic, tp.Partition
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b kafka.PartitionState) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// handle processes one request at broker `to` and returns its answer, if
// any.
func (fc *fakeCluster) handle(to broker.NodeID, msg kafka.Message) (kafka.Message, bool) {
	switch m := msg.(type) {
	case broker.MetadataRequest:
		return broker.MetadataResponse{Correlation: m.Correlation, Partitions: fc.states(), LiveBrokers: slices.Clone(fc.brokers)}, true
	case broker.InitProducerIDRequest:
		fc.lastPID++
		return broker.InitProducerIDResponse{Correlation: m.Correlation, ProducerID: fc.lastPID}, true
	case broker.ProduceRequest:
		resp := fc.produce(to, m)
		return resp, m.Acks != partition.AcksNone
	}
	return nil, false
}

func (fc *fakeCluster) produce(to broker.NodeID, req broker.ProduceRequest) broker.ProduceResponse {
	resp := broker.ProduceResponse{Correlation: req.Correlation, TopicPartition: req.TopicPartition, BaseOffset: -1}
	fp, ok := fc.parts[req.TopicPartition]
	switch {
	case !ok:
		resp.Err = kafka.ErrUnknownTopicOrPartition
		return resp
	case broker.NodeID(fp.leader) != to:
		resp.Err = kafka.ErrNotLeader
		return resp
	}
	if fc.refuse != nil {
		if resp.Err = fc.refuse(req); resp.Err != nil {
			return resp
		}
	}
	if req.Batch.ProducerID != record.NoProducerID {
		dup, err := fp.check(req.Batch.ProducerID, req.Batch.ProducerEpoch, req.Batch.BaseSequence)
		if err != nil || dup >= 0 {
			resp.Err, resp.BaseOffset = err, dup
			return resp
		}
	}
	resp.BaseOffset = int64(len(fp.log))
	for i, r := range req.Batch.Records {
		e := fakeEntry{value: string(r.Value), pid: req.Batch.ProducerID, epoch: req.Batch.ProducerEpoch, seq: record.NoSequence}
		if req.Batch.ProducerID != record.NoProducerID {
			e.seq = req.Batch.BaseSequence + int32(i)
		}
		fp.log = append(fp.log, e)
		fp.observe(e, int64(len(fp.log)-1))
	}
	if fc.afterAppend != nil {
		if err := fc.afterAppend(req); err != nil {
			resp.Err, resp.BaseOffset = err, -1
		}
	}
	return resp
}

// world drives a producer against a fake cluster: it delivers the producer's
// messages at once, unless told to hold or drop them, and ticks logical time.
type world struct {
	t  *testing.T
	p  *Producer
	fc *fakeCluster
	// now is the logical time in ms.
	now int64

	// hold keeps produce requests in held instead of delivering them.
	hold bool
	held []broker.Envelope
	// dropRequest and dropResponse lose messages.
	dropRequest  func(env broker.Envelope) bool
	dropResponse func(req, resp kafka.Message) bool
	// mangle, when set, replaces each response the producer gets.
	mangle func(to broker.NodeID, req, resp kafka.Message) kafka.Message

	sent    []broker.Envelope // every message the producer sent
	results map[uint64]Result
	order   []Result // in the order Ready returned them
	values  map[uint64]string
}

func newWorld(t *testing.T, cfg Config, fc *fakeCluster, seed uint64) *world {
	t.Helper()
	if len(cfg.Bootstrap) == 0 {
		cfg.Bootstrap = slices.Clone(fc.brokers)
	}
	p, err := NewProducer(broker.ClientIDBase, cfg, rand.New(rand.NewPCG(seed, seed+1)))
	require.NoError(t, err)
	return &world{t: t, p: p, fc: fc, results: map[uint64]Result{}, values: map[uint64]string{}}
}

func (n *world) send(topic string, part int32, value string) uint64 {
	id := n.p.Send(Message{Topic: topic, Partition: part, Value: []byte(value)}, n.now)
	n.values[id] = value
	n.drain()
	return id
}

// drain delivers messages back and forth until the producer has nothing
// more to say at this instant.
func (n *world) drain() {
	for range 1000 {
		out, res := n.p.Ready()
		for _, r := range res {
			_, dup := n.results[r.ID]
			require.False(n.t, dup, "send %d completed twice", r.ID)
			n.results[r.ID] = r
			n.order = append(n.order, r)
		}
		if len(out) == 0 {
			return
		}
		for _, env := range out {
			require.Equal(n.t, broker.ClientIDBase, env.From)
			n.sent = append(n.sent, env)
			if _, ok := env.Msg.(broker.ProduceRequest); ok && n.hold {
				n.held = append(n.held, env)
				continue
			}
			n.deliver(env)
		}
	}
	n.t.Fatal("producer never went quiet")
}

func (n *world) deliver(env broker.Envelope) {
	if n.dropRequest != nil && n.dropRequest(env) {
		return
	}
	resp, ok := n.fc.handle(env.To, env.Msg)
	if !ok || (n.dropResponse != nil && n.dropResponse(env.Msg, resp)) {
		return
	}
	if n.mangle != nil {
		resp = n.mangle(env.To, env.Msg, resp)
	}
	n.p.Handle(env.To, resp, n.now)
}

// release delivers the held requests in the given order (indexes into
// held), or all in order when none is given.
func (n *world) release(idx ...int) {
	held := n.held
	n.held = nil
	if len(idx) == 0 {
		for i := range held {
			idx = append(idx, i)
		}
	}
	for _, i := range idx {
		n.deliver(held[i])
	}
	n.drain()
}

// run ticks every 10 ms for ms milliseconds.
func (n *world) run(ms int64) {
	for end := n.now + ms; n.now < end; {
		n.now += 10
		n.p.Tick(n.now)
		n.drain()
	}
}

// runUntilDone ticks until every send has a result, for at most ms.
func (n *world) runUntilDone(ms int64) {
	for end := n.now + ms; n.p.Pending() > 0 && n.now < end; {
		n.now += 10
		n.p.Tick(n.now)
		n.drain()
	}
	require.Zero(n.t, n.p.Pending(), "sends still pending at %d ms", n.now)
}

// produces returns the produce requests sent so far.
func (n *world) produces() []broker.ProduceRequest {
	var out []broker.ProduceRequest
	for _, env := range n.sent {
		if r, ok := env.Msg.(broker.ProduceRequest); ok {
			out = append(out, r)
		}
	}
	return out
}

// count returns how many messages of msg's type the producer sent.
func count[T any](n *world) int {
	c := 0
	for _, env := range n.sent {
		if _, ok := env.Msg.(T); ok {
			c++
		}
	}
	return c
}
