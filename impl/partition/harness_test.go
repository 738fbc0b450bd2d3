package partition

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// This file wires replicas together in-process: a network of queued
// messages, a fake controller that accepts or refuses ISR proposals, a
// durable copy of each replica's log and checkpoints that survives a crash,
// and a logical clock. Every Ready is applied the way a broker applies it,
// and the harness checks after each one that the replica asked storage for
// exactly what it holds in memory.

// controllerID addresses the fake controller; brokers are numbered from 1.
const controllerID int32 = 0

var testTP = kafka.TopicPartition{Topic: "t", Partition: 0}

// Errors of the fake controller, as the real one names them.
var (
	errFencedAlter    = errors.New("alter isr: fenced leader epoch")
	errInvalidVersion = errors.New("alter isr: invalid update version")
	errIneligible     = errors.New("alter isr: ineligible replica")
)

// testConfig is DefaultConfig scaled down so that scenarios need few ticks.
// queryConfig is testConfig on the OffsetsForLeaderEpoch path
// (TruncateToEpochQuery).
func queryConfig(id int32) Config {
	cfg := testConfig(id)
	cfg.Truncation = TruncateToEpochQuery
	return cfg
}

func testConfig(id int32) Config {
	cfg := DefaultConfig(id)
	cfg.ReplicaLagTimeMaxMs = 1000
	cfg.ReplicaFetchWaitMaxMs = 100
	cfg.RequestTimeoutMs = 500
	cfg.RetryBackoffMs = 50
	return cfg
}

// durable is what a broker's disk holds for the partition.
type durable struct {
	log    []record.Batch
	start  int64 // where an empty log starts (a reset)
	hw     int64
	epochs storage.EpochCache
}

func (d *durable) leo() int64 {
	if len(d.log) == 0 {
		return d.start
	}
	return d.log[len(d.log)-1].NextOffset()
}

// durable is the Log of a replica built with NewOnLog (onLog).
var _ Log = (*durable)(nil)

// LEO implements Log.
func (d *durable) LEO() int64 { return d.leo() }

// StartOffset implements Log.
func (d *durable) StartOffset() int64 {
	if len(d.log) == 0 {
		return d.start
	}
	return d.log[0].BaseOffset
}

// Read implements Log.
func (d *durable) Read(offset int64, maxBytes int) ([]record.Batch, error) {
	return readBatches(d.log, offset, math.MaxInt64, maxBytes), nil
}

// onLog builds the harness's replicas on their disks (NewOnLog), as a
// broker builds them, instead of with every batch in memory (New).
var onLog = false

type node struct {
	id       int32
	r        *Replica // nil while down
	inc      int64    // incarnation of the running (or last) process
	disk     durable
	isolated bool
	lastHW   int64 // for the leader's monotonic-HW check
	lastEp   int32
	// New clamps a checkpointed HW or epoch cache that runs past the log in
	// memory only; until the replica next reports a change, the files on
	// disk legitimately differ from it (see bugs_test.go).
	staleHW, staleEpochs bool
}

// cluster is a partition replicated over a few brokers.
type cluster struct {
	t     testing.TB
	cfg   func(id int32) Config
	now   int64
	ids   []int32
	nodes map[int32]*node
	net   []envelope
	held  []envelope // follower fetches a leader holds: they found nothing new
	ctrl  kafka.PartitionState
	// syncController answers ISR changes at once, as if the controller
	// and its metadata were never late and never lost.
	syncController bool

	incarnations int64 // processes started so far
	nextProduce  uint64
	completions  map[uint64]Completion
	answeredNow  map[uint64]bool // produces answered by the call itself
	out          []string        // what happened, for scenario files
}

// newCluster starts replicas with empty logs; none has a role until the
// first elect.
func newCluster(t testing.TB, cfg func(id int32) Config, ids ...int32) *cluster {
	t.Helper()
	if cfg == nil {
		cfg = testConfig
	}
	c := &cluster{t: t, cfg: cfg, ids: ids, nodes: map[int32]*node{}, completions: map[uint64]Completion{}, answeredNow: map[uint64]bool{}}
	c.ctrl = kafka.PartitionState{Leader: -1, LeaderEpoch: 0, ISR: slices.Clone(ids), Replicas: slices.Clone(ids)}
	for _, id := range ids {
		n := &node{id: id, lastEp: -1}
		c.nodes[id] = n
		c.boot(n)
	}
	return c
}

func (c *cluster) boot(n *node) {
	c.t.Helper()
	c.incarnations++
	n.inc = c.incarnations
	cfg := c.cfg(n.id)
	cfg.Incarnation = n.inc
	r, err := load(cfg, slices.Clone(n.disk.log), n.disk.hw, n.disk.epochs.Clone())
	if onLog {
		r, err = NewOnLog(cfg, testTP, &n.disk, n.disk.hw, n.disk.epochs.Clone(), nil)
	}
	require.NoError(c.t, err)
	n.r = r
	n.lastEp = -1
	n.staleHW = r.HW() != n.disk.hw
	n.staleEpochs = !slices.Equal(entries(r.epochs), entries(n.disk.epochs))
}

func (c *cluster) replica(id int32) *Replica {
	c.t.Helper()
	n := c.nodes[id]
	require.NotNil(c.t, n, "no broker %d", id)
	require.NotNil(c.t, n.r, "broker %d is down", id)
	return n.r
}

func (c *cluster) logf(format string, args ...any) {
	c.out = append(c.out, fmt.Sprintf(format, args...))
}

// takeOutput returns and clears what was logged.
func (c *cluster) takeOutput() []string {
	out := c.out
	c.out = nil
	return out
}

// apply does what a broker does with a replica's Ready: storage first, then
// messages and completions. It checks that storage ends up holding what the
// replica holds, so a Ready that forgets a truncation or an append fails.
func (c *cluster) apply(n *node) {
	r := n.r
	rd := drain(r)
	d := &n.disk
	if rd.StartAt >= 0 {
		d.log, d.start = nil, rd.StartAt
	}
	if rd.Truncate >= 0 {
		i := len(d.log)
		for i > 0 && d.log[i-1].LastOffset() >= rd.Truncate {
			i--
		}
		d.log = slices.Clone(d.log[:i])
	}
	for _, b := range rd.Append {
		if b.BaseOffset != d.leo() {
			c.t.Fatalf("broker %d: Ready appends a batch at %d to a stored log ending at %d", n.id, b.BaseOffset, d.leo())
		}
		d.log = append(d.log, b.Clone())
	}
	if !sameLog(r.Log(), d.log) {
		require.Equal(c.t, r.Log(), d.log, "broker %d: stored log differs from the replica's after applying Ready", n.id)
	}
	if rd.HWChanged {
		if rd.HW != r.HW() {
			c.t.Fatalf("broker %d: Ready.HW %d, replica HW %d", n.id, rd.HW, r.HW())
		}
		d.hw = rd.HW
		n.staleHW = false
	} else if !n.staleHW && d.hw != r.HW() {
		c.t.Fatalf("broker %d: HW moved from %d to %d without HWChanged", n.id, d.hw, r.HW())
	}
	if rd.EpochsChanged {
		d.epochs = r.EpochCache()
		n.staleEpochs = false
	}
	if !n.staleEpochs && !slices.Equal(entries(d.epochs), entries(r.epochs)) {
		c.t.Fatalf("broker %d: epoch cache changed from %s to %s without EpochsChanged", n.id, d.epochs.String(), r.epochs.String())
	}
	for _, m := range rd.Messages {
		switch m := m.(type) {
		case FetchRequest:
			c.send(n.id, m.To, m)
		case EpochEndRequest:
			c.send(n.id, m.To, m)
		case kafka.AlterPartition:
			if c.syncController {
				c.handleAlterISR(m)
				for _, e := range c.take(msgs(controllerID, -1, "")) {
					c.deliverOne(e)
				}
				continue
			}
			c.send(n.id, controllerID, m)
		default:
			c.t.Fatalf("broker %d: unknown message %T", n.id, m)
		}
	}
	for _, e := range rd.Events {
		c.logf("%d: %s: %s", n.id, e.Kind, e.Detail)
	}
	for _, comp := range completions(rd) {
		if _, dup := c.completions[comp.ID]; dup || c.answeredNow[comp.ID] {
			c.t.Fatalf("broker %d: produce %d answered twice", n.id, comp.ID)
		}
		c.completions[comp.ID] = comp
		c.logf("complete id=%d offset=%d %s", comp.ID, comp.BaseOffset, errString(comp.Err))
	}
	c.checkInvariants(n)
}

// sameLog compares two logs batch by batch, record by record.
func sameLog(a, b []record.Batch) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.BaseOffset != y.BaseOffset || x.LeaderEpoch != y.LeaderEpoch || x.ProducerID != y.ProducerID ||
			x.BaseSequence != y.BaseSequence || len(x.Records) != len(y.Records) {
			return false
		}
		for j := range x.Records {
			if string(x.Records[j].Value) != string(y.Records[j].Value) || string(x.Records[j].Key) != string(y.Records[j].Key) {
				return false
			}
		}
	}
	return true
}

// checkInvariants asserts the Replica's documented invariants.
func (c *cluster) checkInvariants(n *node) {
	r := n.r
	next := int64(0)
	for i, b := range r.Log() {
		if b.BaseOffset != next || len(b.Records) == 0 {
			c.t.Fatalf("broker %d: batch %d at %d with %d records, want offset %d (invariant 1)", n.id, i, b.BaseOffset, len(b.Records), next)
		}
		next = b.NextOffset()
	}
	if next != r.LEO() {
		c.t.Fatalf("broker %d: LEO %d, log ends at %d", n.id, r.LEO(), next)
	}
	if r.HW() < 0 || r.HW() > r.LEO() {
		c.t.Fatalf("broker %d: HW %d outside [0, LEO %d] (invariant 2)", n.id, r.HW(), r.LEO())
	}
	if e, ok := r.epochs.Latest(); ok && e > r.LeaderEpoch() {
		c.t.Fatalf("broker %d: epoch cache %s ahead of epoch %d (invariant 4)", n.id, r.epochs.String(), r.LeaderEpoch())
	}
	if r.Role() == RoleLeader {
		if r.LeaderEpoch() == n.lastEp && r.HW() < n.lastHW {
			c.t.Fatalf("broker %d: leader HW went back from %d to %d in epoch %d (invariant 3)", n.id, n.lastHW, r.HW(), n.lastEp)
		}
		if e, _ := r.epochs.Latest(); e != r.LeaderEpoch() {
			c.t.Fatalf("broker %d: leader of epoch %d with epoch cache %s (invariant 4)", n.id, r.LeaderEpoch(), r.epochs.String())
		}
		n.lastHW, n.lastEp = r.HW(), r.LeaderEpoch()
	} else {
		n.lastEp = -1
	}
}

// elect makes leader lead in a new epoch with the given ISR (the current
// one when isr is nil) and tells every live broker, or only those in to.
func (c *cluster) elect(leader int32, isr []int32, to ...int32) {
	c.t.Helper()
	c.ctrl.Leader = leader
	c.ctrl.LeaderEpoch++
	c.ctrl.PartitionEpoch++
	if isr != nil {
		c.ctrl.ISR = sortedClone(isr)
	}
	if len(to) == 0 {
		to = c.ids
	}
	for _, id := range to {
		c.publishTo(id)
	}
}

// publishTo hands the controller's current state to one broker now.
func (c *cluster) publishTo(id int32) {
	c.t.Helper()
	n := c.nodes[id]
	if n.r == nil {
		return
	}
	n.r.UpdateState(cloneState(c.ctrl), c.now)
	c.apply(n)
}

func cloneState(s kafka.PartitionState) kafka.PartitionState {
	s.ISR = slices.Clone(s.ISR)
	s.Replicas = slices.Clone(s.Replicas)
	return s
}

// produce sends one batch holding values to broker id.
func (c *cluster) produce(id int32, acks Acks, values ...string) (uint64, ProduceResult) {
	c.t.Helper()
	c.nextProduce++
	b := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence}
	for _, v := range values {
		b.Records = append(b.Records, record.Record{Value: []byte(v)})
	}
	n := c.nodes[id]
	require.NotNil(c.t, n.r, "broker %d is down", id)
	res := produceAt(n.r, c.nextProduce, ProduceRequest{Acks: acks, Batch: b}, c.now)
	c.answeredNow[c.nextProduce] = !res.Parked
	c.apply(n)
	return c.nextProduce, res
}

// crash stops a broker. Its disk keeps what it stored; with loseFrom >= 0
// a power loss also drops the stored batches at or after loseFrom (they were
// not synced). Messages to it are lost.
func (c *cluster) crash(id int32, loseFrom int64) {
	n := c.nodes[id]
	n.r = nil
	if loseFrom >= 0 {
		i := len(n.disk.log)
		for i > 0 && n.disk.log[i-1].LastOffset() >= loseFrom {
			i--
		}
		n.disk.log = slices.Clone(n.disk.log[:i])
	}
	c.net = slices.DeleteFunc(c.net, func(e envelope) bool { return e.to == id })
	c.held = slices.DeleteFunc(c.held, func(e envelope) bool { return e.to == id || e.from == id })
}

// restart boots a crashed broker from its disk and gives it the
// controller's current state, as a registering broker gets it.
func (c *cluster) restart(id int32) {
	c.t.Helper()
	n := c.nodes[id]
	require.Nil(c.t, n.r, "broker %d is up", id)
	c.boot(n)
	c.publishTo(id)
}

// load replaces broker id's disk and boots it from there, without a role:
// a broker restarted with a history the test chose.
func (c *cluster) load(id int32, log []record.Batch, hw int64, ec storage.EpochCache) {
	c.t.Helper()
	n := c.nodes[id]
	n.disk = durable{log: slices.Clone(log), hw: hw, epochs: ec.Clone()}
	c.boot(n)
}

// values lists the record values of a log, in offset order.
func values(log []record.Batch) []string {
	var out []string
	for _, b := range log {
		for _, r := range b.Records {
			out = append(out, string(r.Value))
		}
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return "err=" + err.Error()
}

func (c *cluster) describe() string {
	var sb strings.Builder
	for _, id := range c.ids {
		n := c.nodes[id]
		if n.r == nil {
			fmt.Fprintf(&sb, "%d: down log=%s hw=%d\n", id, formatLog(n.disk.log), n.disk.hw)
			continue
		}
		sb.WriteString(Describe(n.r))
		sb.WriteByte('\n')
	}
	return sb.String()
}

func entries(ec storage.EpochCache) []storage.EpochEntry { return ec.Entries() }
