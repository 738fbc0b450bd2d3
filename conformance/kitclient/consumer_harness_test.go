package kitclient

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/quorum"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// The harness below runs real brokers and a controller in memory, as the
// broker package's tests do: one FIFO network, a logical clock advanced by
// hand in 10 ms ticks, every node fed through Handle and Tick. Consumers
// are nodes too; the test stands in for their application (Poll, Commit,
// Seek) and can stop one (it neither ticks nor hears anything) or hold
// chosen messages on their way.

const (
	liveTickMs  = 10
	liveAdminID = broker.ClientIDBase + 999 // creates topics, produces
)

// liveConsumer is one consumer node and what it did.
type liveConsumer struct {
	id      broker.NodeID
	c       *Consumer
	stopped bool
	events  []ConsumerEvent
	sent    []broker.Envelope
	records map[kafka.TopicPartition][]ConsumerRecord // everything polled
}

type liveCluster struct {
	t         *testing.T
	now       int64
	corr      uint64
	ctrl      *quorum.Node
	brokers   []*broker.Broker // by id; [0] is nil
	consumers []*liveConsumer
	queue     []broker.Envelope
	inbox     []broker.Envelope // answers to the admin

	// hold, when set, keeps matching messages in held instead of sending
	// them; release puts them back on the network.
	hold func(env broker.Envelope) bool
	held []broker.Envelope
}

func newLiveCluster(t *testing.T, brokers int) *liveCluster {
	t.Helper()
	// A crashed broker is out of the controller's view after 1.5 s.
	ctrl, err := quorum.Single(controller.Config{SessionTimeoutMs: 1500}, 0)
	require.NoError(t, err)
	lc := &liveCluster{t: t, ctrl: ctrl, brokers: make([]*broker.Broker, brokers+1)}
	for i := 1; i <= brokers; i++ {
		id := broker.NodeID(i)
		cfg := broker.DefaultConfig(id)
		cfg.MinInsyncReplicas = 1
		cfg.ReplicaFetchWaitMaxMs = 200
		cfg.RequestTimeoutMs = 2000
		cfg.HeartbeatIntervalMs, cfg.HWCheckpointIntervalMs = 100, 0
		cfg.OffsetsTopicPartitions = 3
		// The coordinator's default minimum session (Kafka's 6 s) is
		// above the consumer's simulator default of 3 s.
		cfg.Config = group.Config{MinSessionTimeoutMs: 500, MaxSessionTimeoutMs: 600_000}
		b, err := broker.Open(cfg, storage.NewSimDisk(), int64(i), 0, nil)
		require.NoError(t, err)
		lc.brokers[i] = b
		lc.takeBroker(b)
	}
	lc.settle()
	lc.tick(200)
	return lc
}

// crash stops broker id for good; messages to it are lost.
func (lc *liveCluster) crash(id broker.NodeID) {
	lc.brokers[id] = nil
	lc.queue = slices.DeleteFunc(lc.queue, func(env broker.Envelope) bool { return env.To == id })
}

// leader is the controller's leader of tp.
func (lc *liveCluster) leader(tp kafka.TopicPartition) broker.NodeID {
	lc.t.Helper()
	st, ok := lc.ctrl.Controller().Partition(tp)
	require.True(lc.t, ok, "no partition %s", tp)
	return broker.NodeID(st.Leader)
}

func (lc *liveCluster) takeBroker(b *broker.Broker) {
	lc.queue = append(lc.queue, b.TakeOutbox()...)
	b.TakeEvents()
	b.TakeFaults()
}

// addConsumer starts a consumer node. Bootstrap defaults to every broker.
func (lc *liveCluster) addConsumer(cfg ConsumerConfig) *liveConsumer {
	lc.t.Helper()
	if len(cfg.Bootstrap) == 0 {
		for i := 1; i < len(lc.brokers); i++ {
			cfg.Bootstrap = append(cfg.Bootstrap, int32(i))
		}
	}
	id := broker.ClientIDBase + broker.NodeID(len(lc.consumers))
	c, err := NewConsumer(id, cfg, rand.New(rand.NewPCG(uint64(id), 7)))
	require.NoError(lc.t, err)
	n := &liveConsumer{id: id, c: c, records: map[kafka.TopicPartition][]ConsumerRecord{}}
	lc.consumers = append(lc.consumers, n)
	return n
}

// collect moves what a consumer has to say onto the network and its log.
func (lc *liveCluster) collect(n *liveConsumer) {
	out, ev := n.c.Ready()
	n.events = append(n.events, ev...)
	for _, env := range out {
		require.Equal(lc.t, n.id, env.From)
		n.sent = append(n.sent, env)
		if lc.hold != nil && lc.hold(env) {
			lc.held = append(lc.held, env)
			continue
		}
		lc.queue = append(lc.queue, env)
	}
}

func (lc *liveCluster) release() {
	lc.queue = append(lc.queue, lc.held...)
	lc.held = nil
	lc.settle()
}

func (lc *liveCluster) consumer(id broker.NodeID) *liveConsumer {
	for _, n := range lc.consumers {
		if n.id == id {
			return n
		}
	}
	return nil
}

func (lc *liveCluster) deliver(env broker.Envelope) {
	switch {
	case env.To == broker.VoterNode(1):
		lc.ctrl.Handle(env, lc.now)
		lc.queue = append(lc.queue, lc.ctrl.TakeOutbox()...)
		lc.ctrl.TakeEvents()
	case env.To == liveAdminID:
		lc.inbox = append(lc.inbox, env)
	case env.To >= broker.ClientIDBase:
		n := lc.consumer(env.To)
		if n == nil || n.stopped {
			return
		}
		n.c.Handle(env.From, env.Msg, lc.now)
		lc.collect(n)
	default:
		b := lc.brokers[env.To]
		if b == nil {
			return // crashed: the message is lost with its connection
		}
		require.NoError(lc.t, b.Handle(env, lc.now))
		lc.takeBroker(b)
	}
}

func (lc *liveCluster) settle() {
	lc.t.Helper()
	for i := 0; len(lc.queue) > 0; i++ {
		require.Less(lc.t, i, 1_000_000, "the network never quiets down")
		env := lc.queue[0]
		lc.queue = lc.queue[1:]
		lc.deliver(env)
	}
}

// tick advances the clock by ms, firing every node's timer each tick.
func (lc *liveCluster) tick(ms int64) {
	lc.t.Helper()
	for end := lc.now + ms; lc.now < end; {
		lc.now = min(lc.now+liveTickMs, end)
		lc.ctrl.Tick(lc.now)
		lc.queue = append(lc.queue, lc.ctrl.TakeOutbox()...)
		lc.ctrl.TakeEvents()
		for _, b := range lc.brokers[1:] {
			if b == nil {
				continue
			}
			require.NoError(lc.t, b.Tick(lc.now))
			lc.takeBroker(b)
		}
		for _, n := range lc.consumers {
			if !n.stopped {
				n.c.Tick(lc.now)
				lc.collect(n)
			}
		}
		lc.settle()
	}
}

// tickUntil ticks until cond holds, failing after limitMs.
func (lc *liveCluster) tickUntil(limitMs int64, cond func() bool, what string) {
	lc.t.Helper()
	for end := lc.now + limitMs; !cond(); {
		require.Less(lc.t, lc.now, end, "after %d ms: %s", limitMs, what)
		lc.tick(liveTickMs)
	}
}

func (lc *liveCluster) createTopic(name string, partitions int32, rf int) {
	lc.t.Helper()
	lc.corr++
	lc.queue = append(lc.queue, broker.Envelope{From: liveAdminID, To: broker.VoterNode(1),
		Msg: broker.CreateTopic{Correlation: lc.corr, Name: name, Partitions: partitions, ReplicationFactor: rf}})
	lc.settle()
	lc.tick(100)
	resp := liveTake[broker.CreateTopicResponse](lc)
	require.Len(lc.t, resp, 1)
	require.NoError(lc.t, resp[0].Err)
}

// produce appends values to tp with acks=all through its leader and
// returns the base offset.
func (lc *liveCluster) produce(tp kafka.TopicPartition, values ...string) int64 {
	lc.t.Helper()
	leader := lc.leader(tp)
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Value: []byte(v), Timestamp: lc.now}
	}
	lc.corr++
	lc.queue = append(lc.queue, broker.Envelope{From: liveAdminID, To: leader,
		Msg: broker.ProduceRequest{Correlation: lc.corr, TopicPartition: tp, Acks: partition.AcksAll,
			TimeoutMs: 1000, Batch: record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence, Records: recs}}})
	lc.settle()
	lc.tickUntil(1000, func() bool { return len(liveInbox[broker.ProduceResponse](lc)) > 0 }, "produce answered")
	resp := liveTake[broker.ProduceResponse](lc)
	require.Len(lc.t, resp, 1)
	require.NoError(lc.t, resp[0].Err)
	return resp[0].BaseOffset
}

func liveInbox[T any](lc *liveCluster) []T {
	var out []T
	for _, env := range lc.inbox {
		if m, ok := env.Msg.(T); ok {
			out = append(out, m)
		}
	}
	return out
}

func liveTake[T any](lc *liveCluster) []T {
	out := liveInbox[T](lc)
	lc.inbox = slices.DeleteFunc(lc.inbox, func(env broker.Envelope) bool { _, ok := env.Msg.(T); return ok })
	return out
}

// poll runs the consumer's Poll and keeps what it returned.
func (lc *liveCluster) poll(n *liveConsumer) []Delivery {
	ds := n.c.Poll()
	for _, d := range ds {
		n.records[d.TP] = append(n.records[d.TP], d.Records...)
	}
	lc.collect(n)
	lc.settle()
	return ds
}

// pollUntil ticks and polls until tp has want records polled in total.
func (lc *liveCluster) pollUntil(n *liveConsumer, tp kafka.TopicPartition, want int, limitMs int64) {
	lc.t.Helper()
	lc.tickUntil(limitMs, func() bool {
		lc.poll(n)
		return len(n.records[tp]) >= want
	}, "records polled")
}

// do runs an application call on a consumer and settles what it sent.
func (lc *liveCluster) do(n *liveConsumer, f func(c *Consumer)) {
	f(n.c)
	lc.collect(n)
	lc.settle()
}

func polledValues(rs []ConsumerRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Value))
	}
	return out
}

func polledOffsets(rs []ConsumerRecord) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.Offset)
	}
	return out
}

// eventsOf returns a consumer's events of type T, in order.
func eventsOf[T ConsumerEvent](n *liveConsumer) []T {
	var out []T
	for _, e := range n.events {
		if x, ok := e.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// sentOf counts a consumer's messages of type T.
func sentOf[T any](n *liveConsumer) int {
	k := 0
	for _, env := range n.sent {
		if _, ok := env.Msg.(T); ok {
			k++
		}
	}
	return k
}

// lastAssigned is the partitions of a consumer's latest Assigned event.
func lastAssigned(n *liveConsumer) (Assigned, bool) {
	as := eventsOf[*Assigned](n)
	if len(as) == 0 {
		return Assigned{}, false
	}
	return *as[len(as)-1], true
}
