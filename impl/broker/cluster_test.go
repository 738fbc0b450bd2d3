package broker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/quorum"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// The harness below drives brokers the way the simulator does, minus the
// randomness: one FIFO network, a logical clock advanced by hand, and
// every broker and the controller fed through Handle and Tick. Tests read as
// a sequence of client requests, pauses, crashes and ticks.

const (
	clientID = broker.ClientIDBase     // the test's producer and consumer
	adminID  = broker.ClientIDBase + 1 // sends CreateTopic
	tickMs   = 10                      // the period of every node's timer

	// sessionTimeoutMs is Kafka's broker.session.timeout.ms. A restarted
	// broker registers only once its old session has ended (KRaft's
	// DUPLICATE_BROKER_REGISTRATION), so start waits for that: up to
	// this long since the crashed process's last heartbeat.
	sessionTimeoutMs = 9000
	fetchWaitMs      = 200 // replica.fetch.wait.max.ms
	heartbeatMs      = 100
)

// testConfig is broker id's configuration in these tests: Kafka's
// defaults, with HW checkpoints on every change and 3 offsets partitions.
func testConfig(id broker.NodeID) broker.Config {
	cfg := broker.DefaultConfig(id)
	cfg.HWCheckpointIntervalMs = 0
	cfg.OffsetsTopicPartitions = 3
	return cfg
}

// opts shapes a test cluster; the zero value is three brokers with
// min.insync.replicas=1 and Kafka's replica lag time.
type opts struct {
	brokers int
	minISR  int
	lagMs   int64
	flush   bool
	// tweak, when set, changes every broker's configuration last.
	tweak func(*broker.Config)
	// checkpointMs is hw_checkpoint_interval_ms, which also times the
	// producer snapshots; 0 checkpoints every change and writes none.
	checkpointMs int64
	// segmentBytes is log_segment_bytes; 0 keeps Kafka's default.
	segmentBytes int64
	// fpctx gives a broker a failpoint hook; brokers not named here run
	// with a nil context, where failpoints never fire.
	fpctx map[broker.NodeID]context.Context
	// recovery is the controller's unclean_recovery; none by default.
	recovery controller.RecoveryStrategy
}

// node is one broker machine: its disk outlives its processes.
type node struct {
	id     broker.NodeID
	cfg    broker.Config
	disk   *storage.SimDisk
	fpctx  context.Context
	b      *broker.Broker // nil while down
	paused bool           // neither ticks nor handles; messages wait in held
	held   []broker.Envelope
}

type cluster struct {
	t     *testing.T
	now   int64
	inc   int64 // last incarnation handed out
	corr  uint64
	ctrl  *quorum.Node
	nodes []*node // by broker id; nodes[0] is nil
	queue []broker.Envelope
	inbox []broker.Envelope // what reached the client and the admin
	fired []broker.FailpointError
}

// newCluster starts the brokers and lets them register.
func newCluster(t *testing.T, o opts) *cluster {
	t.Helper()
	if o.brokers == 0 {
		o.brokers = 3
	}
	if o.minISR == 0 {
		o.minISR = 1
	}
	if o.lagMs == 0 {
		o.lagMs = 30_000
	}
	// Eligible leader replicas as run.Settings.ControllerConfig derives them.
	ctrl, err := quorum.Single(controller.Config{SessionTimeoutMs: sessionTimeoutMs, EligibleMinISR: o.minISR,
		UncleanRecovery: o.recovery, UncleanRecoveryTimeoutMs: 2000}, 0)
	require.NoError(t, err)
	c := &cluster{t: t, ctrl: ctrl, nodes: make([]*node, o.brokers+1)}
	for i := 1; i <= o.brokers; i++ {
		id := broker.NodeID(i)
		cfg := testConfig(id)
		cfg.MinInsyncReplicas = o.minISR
		cfg.ReplicaLagTimeMaxMs = o.lagMs
		cfg.ReplicaFetchWaitMaxMs = fetchWaitMs
		cfg.RequestTimeoutMs = 2000
		cfg.HeartbeatIntervalMs = heartbeatMs
		cfg.FlushEveryAppend = o.flush
		cfg.HWCheckpointIntervalMs = o.checkpointMs
		if o.segmentBytes > 0 {
			cfg.LogSegmentBytes = o.segmentBytes
		}
		if o.tweak != nil {
			o.tweak(&cfg)
		}
		n := &node{
			id:    id,
			cfg:   cfg,
			disk:  storage.NewSimDisk(),
			fpctx: o.fpctx[id],
		}
		c.nodes[i] = n
		c.start(id)
	}
	c.settle()
	return c
}

// start boots a process on the node's disk with a new incarnation.
func (c *cluster) start(id broker.NodeID) *broker.Broker {
	c.t.Helper()
	n := c.nodes[id]
	require.Nil(c.t, n.b, "broker %d is already running", id)
	// The controller takes the new process only once the old one's
	// session has ended.
	if old, ok := c.ctrl.Controller().Incarnation(int32(id)); ok && c.ctrl.Controller().IsAlive(int32(id)) {
		c.tickUntil(2*sessionTimeoutMs, func() bool { return !c.ctrl.Controller().IsAlive(int32(id)) },
			fmt.Sprintf("broker %d's old session (incarnation %d) never ended", id, old))
	}
	c.inc++
	b, err := broker.Open(n.cfg, n.disk, c.inc, c.now, n.fpctx)
	require.NoError(c.t, err)
	n.b, n.paused, n.held = b, false, nil
	c.after(n, nil)
	return b
}

// crash kills a broker's process; its page cache survives.
func (c *cluster) crash(id broker.NodeID) {
	n := c.down(id)
	n.disk.Crash()
}

// powerLoss kills a broker's machine; what it did not sync is lost.
func (c *cluster) powerLoss(id broker.NodeID) {
	n := c.down(id)
	n.disk.PowerLoss(rand.New(rand.NewPCG(1, 2)))
}

// down ends a process. Messages on their way to it are lost with it, as
// they would be with its TCP connections.
func (c *cluster) down(id broker.NodeID) *node {
	n := c.nodes[id]
	require.NotNil(c.t, n.b, "broker %d is not running", id)
	n.b, n.paused, n.held = nil, false, nil
	c.queue = slices.DeleteFunc(c.queue, func(env broker.Envelope) bool { return env.To == id })
	return n
}

// pause stops a broker as SIGSTOP would: messages to it wait.
func (c *cluster) pause(ids ...broker.NodeID) {
	for _, id := range ids {
		c.nodes[id].paused = true
	}
}

// resume lets paused brokers go on with what waited for them.
func (c *cluster) resume(ids ...broker.NodeID) {
	for _, id := range ids {
		n := c.nodes[id]
		n.paused = false
		held := n.held
		n.held = nil
		c.queue = append(held, c.queue...)
	}
	c.settle()
}

// broker returns broker id's running process.
func (c *cluster) broker(id broker.NodeID) *broker.Broker {
	c.t.Helper()
	require.NotNil(c.t, c.nodes[id].b, "broker %d is not running", id)
	return c.nodes[id].b
}

// replica returns broker id's replica of tp.
func (c *cluster) replica(id broker.NodeID, tp kafka.TopicPartition) *partition.Replica {
	c.t.Helper()
	r, ok := c.broker(id).Replica(tp)
	require.True(c.t, ok, "broker %d hosts no replica of %s", id, tp)
	return r
}

// state is the controller's view of tp.
func (c *cluster) state(tp kafka.TopicPartition) kafka.PartitionState {
	c.t.Helper()
	s, ok := c.ctrl.Controller().Partition(tp)
	require.True(c.t, ok, "controller knows no %s", tp)
	return s
}

// after queues what a broker sent, or, when a failpoint fired, drops it and
// carries out the failpoint's actions as the simulator does: faults for
// other brokers first, then the one that stopped this broker. A broker
// taken down this way stays down until the test starts it. A storage
// failure fails the test.
func (c *cluster) after(n *node, err error) {
	c.t.Helper()
	out := n.b.TakeOutbox()
	n.b.TakeEvents()
	faults := n.b.TakeFaults()
	if err != nil {
		var fe *broker.FailpointError
		require.ErrorAs(c.t, err, &fe, "broker %d", n.id)
		require.NotEqual(c.t, "storage", fe.Name, "broker %d: %v", n.id, err)
		faults = append(faults, fe)
	}
	for _, fe := range faults {
		c.fired = append(c.fired, *fe)
		if t := c.nodes[fe.Target]; t.b != nil {
			switch fe.Action {
			case broker.ActionCrash:
				c.crash(t.id)
			case broker.ActionPowerLoss:
				c.powerLoss(t.id)
			case broker.ActionPause:
				c.pause(t.id)
			}
		}
	}
	if err == nil {
		c.queue = append(c.queue, out...)
	}
}

func (c *cluster) deliver(env broker.Envelope) {
	switch {
	case env.To == broker.VoterNode(1):
		c.ctrl.Handle(env, c.now)
		c.queue = append(c.queue, c.ctrl.TakeOutbox()...)
		c.ctrl.TakeEvents()
	case env.To >= broker.ClientIDBase:
		c.inbox = append(c.inbox, env)
	default:
		n := c.nodes[env.To]
		switch {
		case n.b == nil:
		case n.paused:
			n.held = append(n.held, env)
		default:
			c.after(n, n.b.Handle(env, c.now))
		}
	}
}

// settle delivers messages in FIFO order until none is in flight.
func (c *cluster) settle() {
	c.t.Helper()
	for i := 0; len(c.queue) > 0; i++ {
		require.Less(c.t, i, 1_000_000, "the network never quiets down")
		env := c.queue[0]
		c.queue = c.queue[1:]
		c.deliver(env)
	}
}

// tick advances the clock by ms, firing every node's timer each tickMs and
// settling the network after each round.
func (c *cluster) tick(ms int64) {
	c.t.Helper()
	for end := c.now + ms; c.now < end; {
		c.now = min(c.now+tickMs, end)
		c.ctrl.Tick(c.now)
		c.queue = append(c.queue, c.ctrl.TakeOutbox()...)
		c.ctrl.TakeEvents()
		for _, n := range c.nodes[1:] {
			if n.b != nil && !n.paused {
				c.after(n, n.b.Tick(c.now))
			}
		}
		c.settle()
	}
}

// tickUntil ticks until cond holds, failing after limitMs.
func (c *cluster) tickUntil(limitMs int64, cond func() bool, what string) {
	c.t.Helper()
	for end := c.now + limitMs; !cond(); {
		require.Less(c.t, c.now, end, "after %d ms: %s", limitMs, what)
		c.tick(tickMs)
	}
}

func (c *cluster) nextCorr() uint64 {
	c.corr++
	return c.corr
}

// createTopic creates a topic through the controller and lets every
// replica take its role and send its first fetch.
func (c *cluster) createTopic(name string, partitions int32, rf int) {
	c.t.Helper()
	corr := c.nextCorr()
	c.queue = append(c.queue, broker.Envelope{From: adminID, To: broker.VoterNode(1),
		Msg: broker.CreateTopic{Correlation: corr, Name: name, Partitions: partitions, ReplicationFactor: rf}})
	c.settle()
	resp := takeOne[broker.CreateTopicResponse](c)
	require.Equal(c.t, corr, resp.Correlation)
	require.NoError(c.t, resp.Err)
}

// send puts a client request on the network and settles it.
func (c *cluster) send(to broker.NodeID, msg kafka.Message) {
	c.t.Helper()
	c.queue = append(c.queue, broker.Envelope{From: clientID, To: to, Msg: msg})
	c.settle()
}

// produce sends one batch of values to broker to and returns the request.
func (c *cluster) produce(to broker.NodeID, tp kafka.TopicPartition, acks partition.Acks, values ...string) broker.ProduceRequest {
	c.t.Helper()
	req := produceRequest(c.nextCorr(), tp, acks, values...)
	c.send(to, req)
	return req
}

func produceRequest(corr uint64, tp kafka.TopicPartition, acks partition.Acks, values ...string) broker.ProduceRequest {
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Value: []byte(v), Timestamp: int64(i)}
	}
	return broker.ProduceRequest{Correlation: corr, TopicPartition: tp, Acks: acks, TimeoutMs: 1000,
		Batch: record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence, Records: recs}}
}

// produceOK produces with acks=all and requires the answer at once.
func (c *cluster) produceOK(to broker.NodeID, tp kafka.TopicPartition, values ...string) int64 {
	c.t.Helper()
	req := c.produce(to, tp, partition.AcksAll, values...)
	resp := takeOne[broker.ProduceResponse](c)
	require.Equal(c.t, req.Correlation, resp.Correlation)
	require.NoError(c.t, resp.Err)
	return resp.BaseOffset
}

// fetch sends a consumer fetch that does not check the leader epoch.
func (c *cluster) fetch(to broker.NodeID, tp kafka.TopicPartition, offset int64, minBytes int, maxWaitMs int64) broker.FetchRequest {
	c.t.Helper()
	req := broker.FetchRequest{Correlation: c.nextCorr(), TopicPartition: tp, Offset: offset,
		MaxBytes: 1 << 20, MinBytes: minBytes, MaxWaitMs: maxWaitMs, CurrentLeaderEpoch: -1}
	c.send(to, req)
	return req
}

// read fetches from offset without waiting and requires no error.
func (c *cluster) read(to broker.NodeID, tp kafka.TopicPartition, offset int64) broker.FetchResponse {
	c.t.Helper()
	req := c.fetch(to, tp, offset, 0, 0)
	resp := takeOne[broker.FetchResponse](c)
	require.Equal(c.t, req.Correlation, resp.Correlation)
	require.NoError(c.t, resp.Err)
	return resp
}

// listOffset asks broker to for tp's earliest or latest offset.
func (c *cluster) listOffset(to broker.NodeID, tp kafka.TopicPartition, latest bool) broker.ListOffsetsResponse {
	c.t.Helper()
	req := broker.ListOffsetsRequest{Correlation: c.nextCorr(), TopicPartition: tp, Latest: latest}
	c.send(to, req)
	resp := takeOne[broker.ListOffsetsResponse](c)
	require.Equal(c.t, req.Correlation, resp.Correlation)
	return resp
}

// handleDirect hands one client message to a broker outside the pump, so
// the test sees the error and the outbox exactly as the caller would.
func handleDirect(c *cluster, id broker.NodeID, msg kafka.Message) ([]broker.Envelope, error) {
	b := c.broker(id)
	err := b.Handle(broker.Envelope{From: clientID, To: id, Msg: msg}, c.now)
	return b.TakeOutbox(), err
}

func produceResponses(out []broker.Envelope) []broker.ProduceResponse {
	var resps []broker.ProduceResponse
	for _, env := range out {
		if r, ok := env.Msg.(broker.ProduceResponse); ok {
			resps = append(resps, r)
		}
	}
	return resps
}

// take removes the messages of type T that reached the client or admin.
func take[T any](c *cluster) []T {
	var out []T
	n := 0
	for _, env := range c.inbox {
		if m, ok := env.Msg.(T); ok {
			out = append(out, m)
			continue
		}
		c.inbox[n] = env
		n++
	}
	c.inbox = c.inbox[:n]
	return out
}

// takeOne requires exactly one message of type T and returns it.
func takeOne[T any](c *cluster) T {
	c.t.Helper()
	out := take[T](c)
	require.Len(c.t, out, 1, "want exactly one %T", *new(T))
	return out[0]
}

// values lists the record values of batches, in offset order.
func values(batches []record.Batch) []string {
	var out []string
	for _, b := range batches {
		recs, err := b.DecodeRecords(nil)
		if err != nil {
			panic(err)
		}
		for _, r := range recs {
			out = append(out, string(r.Value))
		}
	}
	return out
}

// storedValues reads tp's log back from a copy of a broker's disk, as a
// restart would, without touching the disk itself (recovery may truncate).
func storedValues(t *testing.T, d *storage.SimDisk, tp kafka.TopicPartition) []string {
	t.Helper()
	l, _, err := storage.OpenLog(d.Clone(), fmt.Sprintf("p/%s/%d", tp.Topic, tp.Partition), storage.LogConfig{})
	require.NoError(t, err)
	return values(l.Batches())
}
