package sim

import (
	"fmt"
	"slices"
	"sort"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// Trace validation: with run.Spec.ValidateProtocol, every step of the run that
// is a step of the replication protocol for a partition is checked against
// spec/protocol's model, as etcd's raft checks its traces against its TLA+
// spec.
//
// The check is a refinement check, one step at a time. Around each step the
// simulator maps the implementation's state of the partition to a model
// State (the abstraction function: logs as entries, record offsets as batch
// indexes, epochs shifted by one so that the model's 0 means "none yet",
// incarnations as registration ordinals), names the model Action the step
// is, and asks the model whether that action is enabled in the state before
// and leads to the state after, sending what the implementation sent
// (protocol.Model.CheckTransition). Rebuilding the model state from the
// implementation at every step, instead of replaying the model from its
// initial state, keeps each verdict about one step: a difference is reported
// where it happens and does not carry over.
//
// Steps checked: a replica fetch, an OffsetsForLeaderEpoch question and
// their answers reaching their broker; a controller state reaching a broker
// (the replica becomes leader or follower, truncating by its rule, or a
// leader learns the ISR); an acks=all produce appended by the leader; the
// controller's steps (deaths, registrations, revivals, ISR changes,
// elections); a broker process crash. Steps not checked, each counted in
// run.ProtocolReport.Skipped: a broker tick (resends after a timeout), messages
// handled together when a paused broker resumes, power losses (the prefix
// that survived is the disk's business), answers carrying an error (the
// model's leader drops such requests), and steps whose record offsets do not
// fall on batch boundaries of the log they are read against.

// protoTracker maps one run onto the model.
type protoTracker struct {
	s      *Sim
	model  protocol.Model
	report run.ProtocolReport
	// stopped, once set, says why no later step can be judged: the run
	// left what the model describes (a broker back on an empty disk).
	stopped string
	tps     []kafka.TopicPartition
	// values names each batch (by leader epoch, base offset and first
	// value) with the model's record value.
	values map[batchKey]int32
	// ordinal[b] lists the incarnations the controller registered for
	// broker b, in order: the model's incarnation is the position + 1.
	ordinal map[int32][]int64
	// down remembers a dead process's replicas as they were when it died.
	down map[downKey]protocol.Replica
	// sent are the partition messages sent during the current step, and
	// inflight those sent before, mapped to the model, by their request id.
	sent     []broker.Envelope
	inflight map[protoKey]protocol.Msg
	// offline[b] is the epoch broker b's process learned with no leader.
	offline map[downKey]int32
	before  map[kafka.TopicPartition]*protocol.State
	killed  []int32 // brokers whose process died in this step
	memo    map[downKey]*logMemo
	// proposals keeps each ISR proposal's leader as it was when it sent it.
	proposals map[proposalKey]protocol.Replica
}

type proposalKey struct {
	tp kafka.TopicPartition
	id uint64
}

// logMemo is a replica's log as model entries, kept between steps: a log
// changes by appends, or by a truncation (which the replica counts), or in
// a new process.
type logMemo struct {
	inc     int64
	truncs  uint64
	entries []protocol.Entry
}

type batchKey struct {
	epoch int32
	base  int64
	first string
}

type downKey struct {
	b  int32
	tp kafka.TopicPartition
}

type protoKey struct {
	kind     protocol.MsgKind
	from, to int32
	id       uint64
	tp       kafka.TopicPartition
}

func newProtoTracker(s *Sim) *protoTracker {
	cfg := s.Spec
	v := variant.ModelOf(cfg.Settings)
	if cfg.ProtocolModel != nil {
		v = *cfg.ProtocolModel
	}
	t := &protoTracker{
		s:         s,
		model:     protocol.Model{Variant: v},
		report:    run.ProtocolReport{Checked: map[string]int{}, Skipped: map[string]int{}},
		tps:       s.Spec.Partitions(),
		values:    map[batchKey]int32{},
		ordinal:   map[int32][]int64{},
		down:      map[downKey]protocol.Replica{},
		inflight:  map[protoKey]protocol.Msg{},
		offline:   map[downKey]int32{},
		before:    map[kafka.TopicPartition]*protocol.State{},
		memo:      map[downKey]*logMemo{},
		proposals: map[proposalKey]protocol.Replica{},
	}
	return t
}

func (t *protoTracker) skip(reason string) { t.report.Skipped[reason]++ }

// kind classifies a step: which partitions it concerns, and whether it is
// checked at all.
func (t *protoTracker) concerns(e event) ([]kafka.TopicPartition, string) {
	switch e.kind {
	case evDeliver:
		if e.env.To.Voter() != 0 {
			return t.tps, ""
		}
		if e.env.To >= broker.ClientIDBase {
			return nil, ""
		}
		n := t.s.nodes[e.env.To]
		if n.b == nil || n.paused || t.s.cut(e.env.From, e.env.To) {
			return nil, ""
		}
		if k, ok := t.keyOf(e.env); ok {
			return t.only(k.tp), ""
		}
		var tps []kafka.TopicPartition
		if ok, _ := deliveredTo().Handle(concern{t, &tps}, e.env.Msg); ok {
			return tps, ""
		}
	case evTick:
		if e.node.Voter() != 0 {
			return t.tps, ""
		}
		return nil, "broker tick (timeouts, resends)"
	case evFault:
		switch e.fault.Kind {
		case run.FaultCrash:
			return t.tps, ""
		case run.FaultPowerLoss, run.FaultPowerLossAll:
			return nil, "power loss"
		}
	case evResume:
		return nil, "paused broker resumes (held messages)"
	}
	return nil, ""
}

func (t *protoTracker) only(tp kafka.TopicPartition) []kafka.TopicPartition {
	if slices.Contains(t.tps, tp) {
		return []kafka.TopicPartition{tp}
	}
	return nil
}

// beforeStep maps the partitions the step concerns.
func (t *protoTracker) beforeStep(e event) {
	clear(t.before)
	t.sent = t.sent[:0]
	t.killed = t.killed[:0]
	if t.report.Failure != "" {
		return
	}
	if t.stopped != "" {
		t.skip(t.stopped)
		return
	}
	tps, skip := t.concerns(e)
	if skip != "" {
		t.skip(skip)
	}
	for _, tp := range tps {
		if st, ok := t.abstract(tp); ok {
			t.before[tp] = st
		}
	}
}

// afterStep checks the step on each partition it concerns.
func (t *protoTracker) afterStep(e event) {
	t.registerIncarnations()
	if len(t.killed) > 0 && e.kind != evFault {
		// A failpoint stopped a broker inside the step, after some of
		// its effects and before others: no single model action, and
		// the model's crash happens between steps.
		for range t.before {
			t.skip("a failpoint crashed a broker inside the step")
		}
		clear(t.before)
	}
	var keys []protoKey
	for _, env := range t.sent {
		if k, ok := t.mapSent(env); ok {
			keys = append(keys, k)
		}
	}
	t.sent = t.sent[:0]
	for tp, before := range t.before {
		var sent []protocol.Msg
		for _, k := range keys {
			if k.tp == tp {
				sent = append(sent, t.inflight[k])
			}
		}
		after, ok := t.abstract(tp)
		if !ok {
			t.skip("offsets off batch boundaries")
			continue
		}
		if err := t.check(e, tp, before, after, sent); err != nil && t.report.Failure == "" {
			t.report.Failure = fmt.Sprintf("%s, step %d at %d ms: %v", tp, t.s.steps, t.s.Now, err)
			t.report.AtMs, t.report.Step = t.s.Now, t.s.steps
		}
	}
}

// leave stops validation from this step on: the run did something the
// model has no action for.
func (t *protoTracker) leave(reason string) {
	if t.stopped == "" {
		t.stopped = reason
	}
	for range t.before {
		t.skip(reason)
	}
	clear(t.before)
}

// onSend is called with what a broker sent in this step.
func (t *protoTracker) onSend(out []broker.Envelope) { t.sent = append(t.sent, out...) }

// onKill is called before a broker's process dies.
func (t *protoTracker) onKill(n *node) {
	t.killed = append(t.killed, int32(n.id))
	for _, tp := range t.tps {
		if st, ok := t.abstract(tp); ok {
			if i := t.index(tp, int32(n.id)); i >= 0 {
				t.down[downKey{int32(n.id), tp}] = st.Replicas[i]
			}
		}
	}
}

// registerIncarnations keeps the registration ordinals current.
func (t *protoTracker) registerIncarnations() {
	ctrl := t.s.controller()
	for id := int32(1); int(id) < len(t.s.nodes); id++ {
		inc, ok := ctrl.Incarnation(id)
		if !ok {
			continue
		}
		if l := t.ordinal[id]; len(l) == 0 || l[len(l)-1] != inc {
			t.ordinal[id] = append(l, inc)
		}
	}
}

// inc is the model's incarnation for broker b's process inc: its
// registration ordinal; a process not yet registered gets the next one.
func (t *protoTracker) inc(b int32, inc int64) int32 {
	l := t.ordinal[b]
	if i := slices.Index(l, inc); i >= 0 {
		return int32(i + 1)
	}
	return int32(len(l) + 1)
}

func (t *protoTracker) state(tp kafka.TopicPartition) (kafka.PartitionState, bool) {
	return t.s.controller().Partition(tp)
}

// index is the model id of broker b in tp's assignment.
func (t *protoTracker) index(tp kafka.TopicPartition, b int32) int32 {
	p, ok := t.state(tp)
	if !ok {
		return -1
	}
	return int32(slices.Index(p.Replicas, b))
}

func (t *protoTracker) id(p kafka.PartitionState, b int32) int32 {
	if b < 0 {
		return protocol.None
	}
	return int32(slices.Index(p.Replicas, b))
}

func (t *protoTracker) set(p kafka.PartitionState, ids []int32) uint32 {
	var out uint32
	for _, b := range ids {
		if i := t.id(p, b); i >= 0 {
			out |= 1 << uint(i)
		}
	}
	return out
}

func epoch(e int32) int32 {
	if e < 0 {
		return -1
	}
	return e + 1
}

// offsetIndex maps a record offset to the batch index it starts, in log;
// -1 when it is inside a batch or past the end.
func offsetIndex(log []record.Batch, off int64) int32 {
	if off < 0 {
		return -1
	}
	i := sort.Search(len(log), func(i int) bool { return log[i].BaseOffset >= off })
	if i < len(log) && log[i].BaseOffset == off {
		return int32(i)
	}
	if i == len(log) && (len(log) == 0 && off == 0 || len(log) > 0 && log[len(log)-1].NextOffset() == off) {
		return int32(len(log))
	}
	return -1
}

func (t *protoTracker) entries(bs []record.Batch) []protocol.Entry {
	out := make([]protocol.Entry, len(bs))
	for i := range bs {
		b := &bs[i]
		k := batchKey{epoch: b.LeaderEpoch, base: b.BaseOffset}
		k.first = string(firstValue(b))
		v, ok := t.values[k]
		if !ok {
			v = int32(len(t.values) + 1)
			t.values[k] = v
		}
		out[i] = protocol.Entry{Value: v, Epoch: epoch(b.LeaderEpoch)}
	}
	return out
}

// logEntries maps r's log, reusing what was mapped at earlier steps.
func (t *protoTracker) logEntries(k downKey, r *partition.Replica, inc int64) []protocol.Entry {
	log := r.Log()
	m := t.memo[k]
	if m == nil || m.inc != inc || m.truncs != r.Truncations() || len(m.entries) > len(log) {
		m = &logMemo{inc: inc, truncs: r.Truncations()}
		t.memo[k] = m
	}
	if n := len(m.entries); n < len(log) {
		m.entries = append(m.entries, t.entries(log[n:])...)
	}
	return m.entries[:len(log):len(log)]
}

// abstract maps the implementation's state of tp to a model State; false
// when an offset does not fall on a batch boundary.
func (t *protoTracker) abstract(tp kafka.TopicPartition) (*protocol.State, bool) {
	p, ok := t.state(tp)
	if !ok {
		return nil, false
	}
	ctrl := t.s.controller()
	n := len(p.Replicas)
	st := &protocol.State{Replicas: make([]protocol.Replica, n)}
	st.Ctrl = protocol.Controller{Leader: t.id(p, p.Leader), Epoch: epoch(p.LeaderEpoch), ISR: t.set(p, p.ISR), N: int32(n)}
	for i, b := range p.Replicas {
		if ctrl.IsAlive(b) {
			st.Ctrl.Alive |= 1 << uint(i)
		}
		if inc, ok := ctrl.Incarnation(b); ok {
			st.Ctrl.Inc[i] = t.inc(b, inc)
		}
		r, ok := t.replica(tp, p, b, st.Ctrl.Inc[i])
		if !ok {
			return nil, false
		}
		st.Replicas[i] = r
	}
	return st, true
}

// replica maps broker b's replica of tp. A process the controller has not
// registered is down to the model: it acts on nothing until it is.
func (t *protoTracker) replica(tp kafka.TopicPartition, p kafka.PartitionState, b int32, registered int32) (protocol.Replica, bool) {
	n := t.s.nodes[b]
	var r *partition.Replica
	if n.b != nil {
		r, _ = n.b.Replica(tp)
	}
	if r == nil {
		d, ok := t.down[downKey{b, tp}]
		d.Up, d.Epoch, d.Leader, d.Await, d.Query, d.ISR, d.Known = false, 0, protocol.None, protocol.AwaitNothing, 0, 0, [protocol.MaxReplicas]protocol.Known{}
		if !ok {
			d.Inc = registered
		}
		return d, true
	}
	log := r.Log()
	out := protocol.Replica{Inc: t.inc(b, n.b.Incarnation()), Log: t.logEntries(downKey{b, tp}, r, n.b.Incarnation()), Leader: protocol.None}
	cache := r.EpochCache()
	for _, e := range cache.Entries() {
		i := offsetIndex(log, e.StartOffset)
		if i < 0 {
			return out, false
		}
		out.Epochs = append(out.Epochs, protocol.EpochStart{Epoch: epoch(e.Epoch), Start: i})
	}
	if out.HW = offsetIndex(log, r.HW()); out.HW < 0 {
		return out, false
	}
	if out.Inc != registered {
		// Running, not registered: down to the model, still the
		// incarnation the controller knows until it registers.
		out.Inc = registered
		return out, true
	}
	out.Up = true
	switch r.Role() {
	case partition.RoleLeader:
		out.Epoch, out.Leader = epoch(r.LeaderEpoch()), t.id(p, b)
		out.ISR = t.set(p, r.ISR())
		for j, f := range p.Replicas {
			out.Known[j] = protocol.Known{LEO: -1}
			if pr, ok := r.FollowerProgress(f); ok {
				k := protocol.Known{LEO: -1, Inc: t.inc(f, pr.Incarnation)}
				if pr.Incarnation == 0 {
					k.Inc = 0
				}
				if pr.LEO >= 0 {
					if k.LEO = offsetIndex(log, pr.LEO); k.LEO < 0 {
						return out, false
					}
				}
				out.Known[j] = k
			}
		}
	case partition.RoleFollower:
		out.Epoch, out.Leader, out.Await = epoch(r.LeaderEpoch()), t.id(p, r.Leader()), protocol.AwaitFetch
		if q, ok := r.AwaitingEpoch(); ok {
			out.Await, out.Query = protocol.AwaitEpoch, epoch(q)
		}
	default:
		// No role: either it learned an epoch with no leader, or it has
		// learned nothing since it started.
		if e, ok := t.offline[downKey{b, tp}]; ok && e == r.LeaderEpoch() && n.b.Incarnation() == t.ordinal[b][len(t.ordinal[b])-1] {
			out.Epoch = epoch(e)
		}
	}
	return out, true
}

// mapSent maps a partition message a broker sent to the model's message and
// keeps it until it arrives; false for messages the model has no
// counterpart of (answers carrying errors, other partitions).
func (t *protoTracker) mapSent(env broker.Envelope) (protoKey, bool) {
	if m, ok := env.Msg.(kafka.AlterPartition); ok {
		if st, ok := t.abstract(m.TopicPartition); ok {
			if i := t.index(m.TopicPartition, int32(env.From)); i >= 0 {
				t.proposals[proposalKey{m.TopicPartition, m.ProposalID}] = st.Replicas[i]
			}
		}
		return protoKey{}, false
	}
	k, ok := t.keyOf(env)
	if !ok || !slices.Contains(t.tps, k.tp) {
		return protoKey{}, false
	}
	tp, from, to := k.tp, k.from, k.to
	sender := t.s.nodes[env.From]
	if sender.b == nil || from < 0 || to < 0 {
		return protoKey{}, false
	}
	r, ok := sender.b.Replica(tp)
	if !ok {
		return protoKey{}, false
	}
	log := r.Log()
	inc := t.inc(int32(env.From), sender.b.Incarnation())
	out := mapped{t: t, env: env, k: k, from: from, to: to, log: log, inc: inc}
	if ok, _ := sentToModel().Handle(&out, env.Msg); !ok {
		return protoKey{}, false
	}
	return out.key, out.ok
}

// keep stores a mapped message until it arrives; a message whose offsets
// could not be mapped is not kept, and its arrival is not checked.
func (t *protoTracker) keep(k protoKey, m protocol.Msg, ok bool) (protoKey, bool) {
	if !ok {
		t.skip("offsets off batch boundaries")
		return k, false
	}
	t.inflight[k] = m
	return k, true
}

// keyOf names a partition message for the inflight map.
func (t *protoTracker) keyOf(env broker.Envelope) (protoKey, bool) {
	var k protoKey
	if ok, _ := replicationKeys().Handle(&k, env.Msg); !ok {
		return k, false
	}
	p, ok := t.state(k.tp)
	if !ok {
		return k, false
	}
	k.from, k.to = t.id(p, int32(env.From)), t.id(p, int32(env.To))
	return k, true
}
