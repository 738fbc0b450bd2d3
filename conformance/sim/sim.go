package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/pingcap/failpoint"
	"github.com/watermarkhq/watermark/conformance/nemesis"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/traffic"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// ErrFailpointsNotCompiled is returned for a config with failpoints when the
// binary was built without failpoint-toolexec: the run could not do what
// the config says, so it refuses to pretend.
var ErrFailpointsNotCompiled = errors.New("failpoints are not compiled in: build with failpoint-toolexec (make build / make test)")

// adminID sends the bootstrap's topic creations; answers to it are dropped.
const adminID = broker.ClientIDBase + 100000

// failpoints are process-wide in pingcap/failpoint; runs that use them take
// turns.
var failpointMu sync.Mutex

type evKind uint8

const (
	evDeliver evKind = iota
	evTick
	evClientTick
	evFault
	evRestart
	evResume
	evUnisolate
	evEnableFailpoint
	evNemesis
	evEndWorkload
	evUnslow
	evFinalRead
	evCallback
)

var evNames = [...]string{"deliver", "tick", "client-tick", "fault", "restart", "resume", "unisolate",
	"enable-failpoint", "nemesis", "end-workload", "unslow", "final-read", "callback"}

type event struct {
	at    int64
	seq   uint64
	kind  evKind
	node  broker.NodeID
	env   broker.Envelope
	fault run.Fault
	fp    int
	gen   uint64 // for the end of a fault: the fault it ends
	fn    func() // evCallback
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// node is one broker machine: its disk outlives its processes.
type node struct {
	id       broker.NodeID
	cfg      broker.Config
	disk     *storage.SimDisk
	b        *broker.Broker // nil while down
	paused   bool
	held     []broker.Envelope // delivered while paused, handled on resume
	heldOut  []broker.Envelope // sent by the step that paused, sent on resume
	isolated bool
	slowMs   int64  // extra delay on every message to or from this broker
	faulted  int    // faults in force (crash, power loss, pause, isolation)
	gen      uint64 // counts pauses, isolations and slowdowns: their ends name theirs
	fpctx    context.Context
	// msgFaults are the messages faults in force on this broker's links.
	msgFaults []msgFault
	// stopping is the clean stop under way, if any; cleanStop says the
	// process last ended by one (until the node's next death).
	stopping  *stopPlan
	cleanStop bool
}

// Sim is one simulated run. Use Run.
type Sim struct {
	traffic.World
	seq   uint64
	queue eventQueue
	steps int

	voters []*voter // the controller quorum, by voter number - 1
	// lastController is the controller state checks last saw, and
	// restored the one rebuilt from a voter's image while none is active
	// (at restoredAt: voter, applied index).
	lastController *controller.Controller
	restored       *controller.Controller
	restoredAt     [2]uint64
	nodes          []*node // by broker id; nodes[0] is nil
	incarnation    int64
	msgFaultSeq    uint64
	links          map[link]int64 // when each link's last message arrives

	acked     int
	waiting   []event // triggered by acks
	fpActive  []bool
	fpPercent []float64

	inv   *invariants
	proto *protoTracker // nil unless run.Spec.ValidateProtocol
	trace trace
}

// ScheduleClientTick implements traffic.Host.
func (s *Sim) ScheduleClientTick(id broker.NodeID, at int64) {
	s.schedule(event{at: at, kind: evClientTick, node: id})
}

// After implements traffic.Host.
func (s *Sim) After(at int64, fn func()) {
	s.schedule(event{at: at, kind: evCallback, fn: fn})
}

// Run executes cfg and returns what happened. An error means the run could
// not be carried out (bad config, failpoints not compiled in); a protocol
// violation is not an error but run.Result.Violations.
func Run(cfg run.Spec) (*run.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Failpoints) > 0 {
		if !broker.FailpointsCompiled() {
			return nil, ErrFailpointsNotCompiled
		}
		failpointMu.Lock()
		defer failpointMu.Unlock()
	}
	s, err := newSim(cfg)
	if err != nil {
		return nil, err
	}
	defer s.disableFailpoints()
	s.loop()
	return s.result(), nil
}

func newSim(cfg run.Spec) (*Sim, error) {
	s := &Sim{
		World: traffic.World{
			Spec: cfg,
			Rng:  rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		},
		links:     map[link]int64{},
		fpActive:  make([]bool, len(cfg.Failpoints)),
		fpPercent: make([]float64, len(cfg.Failpoints)),
	}
	s.Host = s
	s.trace.init(cfg.TraceTail)
	if err := s.openVoters(); err != nil {
		return nil, err
	}
	s.nodes = make([]*node, cfg.Brokers+1)
	for id := 1; id <= cfg.Brokers; id++ {
		bc := broker.Config{Settings: cfg.Broker, ID: broker.NodeID(id), Voters: cfg.Quorum.Voters}
		bc.MirrorLogs = true // the invariants read every log after every step
		n := &node{id: broker.NodeID(id), cfg: bc, disk: storage.NewSimDisk()}
		n.fpctx = failpoint.WithHook(context.Background(), s.failpointHook(n.id))
		s.nodes[id] = n
		if err := s.open(n); err != nil {
			return nil, err
		}
		s.schedule(event{at: s.Rng.Int64N(cfg.TickMs), kind: evTick, node: n.id})
	}
	if err := s.bootstrap(); err != nil {
		return nil, err
	}
	s.lastController = s.controller()
	s.inv = newInvariants(s)
	if cfg.ValidateProtocol {
		s.proto = newProtoTracker(s)
	}
	s.Start()
	for i, f := range cfg.Faults {
		s.trigger(event{kind: evFault, fault: f, fp: i}, f.When)
	}
	for i, fp := range cfg.Failpoints {
		s.trigger(event{kind: evEnableFailpoint, fp: i}, fp.When)
	}
	if len(cfg.Nemesis.Kinds) > 0 {
		s.schedule(event{at: nemesis.Delay(cfg.Nemesis, s.Rng), kind: evNemesis})
	}
	s.schedule(event{at: cfg.DurationMs, kind: evEndWorkload})
	if !cfg.NoFinalRead {
		s.schedule(event{at: cfg.DurationMs + cfg.SettleMs/2, kind: evFinalRead})
	}
	return s, nil
}

func (s *Sim) schedule(e event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.queue, e)
}

func (s *Sim) trigger(e event, t run.Trigger) {
	if t.AfterAcks > 0 {
		s.waiting = append(s.waiting, e)
		return
	}
	e.at = max(t.AtMs, s.Now)
	s.schedule(e)
}

// OnAck implements traffic.Host: it counts an acknowledged produce and
// releases what waited for it.
func (s *Sim) OnAck() {
	s.acked++
	n := 0
	for _, e := range s.waiting {
		var need int
		if e.kind == evFault {
			need = e.fault.When.AfterAcks
		} else {
			need = s.Spec.Failpoints[e.fp].When.AfterAcks
		}
		if s.acked >= need {
			e.at = s.Now
			s.schedule(e)
			continue
		}
		s.waiting[n] = e
		n++
	}
	s.waiting = s.waiting[:n]
}

func (s *Sim) end() int64 { return s.Spec.DurationMs + s.Spec.SettleMs }

func (s *Sim) loop() {
	for s.queue.Len() > 0 && (s.Spec.ContinueAfterViolation || len(s.inv.violations) == 0) {
		e := heap.Pop(&s.queue).(event)
		if e.at > s.end() {
			break
		}
		if s.Spec.MaxSteps > 0 && s.steps >= s.Spec.MaxSteps {
			s.Stats.StepLimitHit = true
			break
		}
		s.Now = e.at
		s.steps++
		s.trace.step(s.Now, e)
		if s.proto != nil {
			s.proto.beforeStep(e)
		}
		s.step(e)
		if s.proto != nil {
			s.proto.afterStep(e)
		}
		s.inv.check()
	}
	s.Stats.Steps = s.steps
	s.Stats.EndMs = s.Now
}

func (s *Sim) step(e event) {
	switch e.kind {
	case evDeliver:
		s.deliver(e.env)
	case evTick:
		s.tick(e.node)
	case evClientTick:
		s.TickClient(e.node)
		if !s.clientsDone() {
			s.schedule(event{at: s.Now + s.Spec.TickMs, kind: evClientTick, node: e.node})
		}
	case evFault:
		s.inject(e.fault)
	case evRestart:
		n := s.nodes[e.node]
		n.faulted--
		if n.b == nil {
			if err := s.start(n); err != nil {
				s.inv.fail("Recovery", fmt.Sprintf("broker %d cannot restart: %v", n.id, err))
			}
		}
	case evResume:
		if n := s.nodes[e.node]; n.gen == e.gen {
			s.resume(n)
		}
	case evUnisolate:
		n := s.nodes[e.node]
		if n.isolated && n.gen == e.gen {
			s.unisolate(n)
		}
	case evEnableFailpoint:
		s.enableFailpoint(e.fp)
	case evNemesis:
		if !s.Over {
			s.nemesis()
			s.schedule(event{at: s.Now + nemesis.Delay(s.Spec.Nemesis, s.Rng), kind: evNemesis})
		}
	case evEndWorkload:
		s.Over = true
		s.healAll()
	case evUnslow:
		if n := s.nodes[e.node]; n.gen == e.gen {
			s.unslow(n)
		}
	case evFinalRead:
		s.StartFinalRead()
	case evCallback:
		e.fn()
	}
}

func (s *Sim) tick(id broker.NodeID) {
	s.schedule(event{at: s.Now + s.Spec.TickMs, kind: evTick, node: id})
	if v := s.voterOf(id); v != nil {
		s.tickVoter(v)
		return
	}
	n := s.nodes[id]
	if n.b == nil || n.paused {
		return
	}
	s.afterBroker(n, n.b.Tick(s.Now))
}

// start boots a broker process on the node's disk with a new incarnation
// and sends its registration.
func (s *Sim) start(n *node) error {
	if err := s.open(n); err != nil {
		return err
	}
	for _, env := range n.b.TakeOutbox() {
		s.Send(env)
	}
	return nil
}

// open boots the process and leaves its first messages in its outbox.
func (s *Sim) open(n *node) error {
	s.incarnation++
	b, err := broker.Open(n.cfg, n.disk, s.incarnation, s.Now, n.fpctx)
	if err != nil {
		return err
	}
	n.b = b
	n.paused = false
	n.held = nil
	s.collectEvents(n)
	if s.inv != nil {
		s.inv.afterRecovery(n)
		s.inv.cov.up(s, n)
	}
	return nil
}

// Send implements traffic.Host: it puts a message on the network, where it
// may be dropped, and is delayed by a random amount, which also reorders
// messages.
func (s *Sim) Send(env broker.Envelope) {
	s.Stats.Messages++
	if s.inv != nil {
		s.inv.onSend(env)
	}
	if s.cut(env.From, env.To) {
		s.Stats.Dropped++
		return
	}
	if s.Spec.Network.DropRate > 0 && s.Rng.Float64() < s.Spec.Network.DropRate {
		s.Stats.Dropped++
		return
	}
	if _, ok := env.Msg.(broker.ProduceResponse); ok && s.Spec.DropsAnswer(s.Now, s.Rng) {
		s.Stats.Dropped++
		return
	}
	f := s.messageFate(env)
	if f.drop {
		s.Stats.Dropped++
		return
	}
	s.deliverAt(env, f)
	if f.twice {
		s.Stats.Duplicated++
		s.Reached(run.SitDuplicateMessage)
		if f.copyLate > 0 {
			f.reorder, f.extra = true, f.extra+f.copyLate
		}
		s.deliverAt(env, f)
	}
}

// link is the way from one node to another: it keeps its messages in
// order, as a TCP connection does.
type link struct{ from, to broker.NodeID }

// deliverAt schedules env's delivery after the network's delay, and not
// before what its link already carries unless its fate reorders it.
func (s *Sim) deliverAt(env broker.Envelope, f fate) {
	at := s.Now + s.delay(env) + f.extra
	if f.reorder {
		s.Stats.Reordered++
	} else {
		l := link{env.From, env.To}
		at = max(at, s.links[l])
		s.links[l] = at
	}
	s.schedule(event{at: at, kind: evDeliver, env: env})
}

// delay draws how long env takes on the network.
func (s *Sim) delay(env broker.Envelope) int64 {
	d := s.Spec.Network.MinDelayMs + s.slowness(env.From) + s.slowness(env.To)
	if span := s.Spec.Network.MaxDelayMs - s.Spec.Network.MinDelayMs; span > 0 {
		d += s.Rng.Int64N(span + 1)
	}
	return d
}

func (s *Sim) slowness(id broker.NodeID) int64 {
	if id > broker.ControllerID && int(id) < len(s.nodes) {
		return s.nodes[id].slowMs
	}
	return 0
}

// cut reports whether a network partition separates two nodes.
func (s *Sim) cut(a, b broker.NodeID) bool {
	isolated := func(id broker.NodeID) bool {
		return id > broker.ControllerID && int(id) < len(s.nodes) && s.nodes[id].isolated
	}
	return a != b && (isolated(a) || isolated(b))
}

func (s *Sim) deliver(env broker.Envelope) {
	if s.cut(env.From, env.To) {
		s.Stats.Dropped++
		return
	}
	switch {
	case s.voterOf(env.To) != nil:
		var elr []kafka.TopicPartition
		reg, isReg := env.Msg.(broker.RegisterBroker)
		if isReg && env.From.IsBroker() && int(env.From) < len(s.nodes) {
			n := s.nodes[env.From]
			if n.cleanStop {
				elr = s.eligibleOf(int32(env.From))
			}
			if s.proto != nil && (n.b == nil || n.b.Incarnation() != reg.Incarnation) {
				s.proto.leave("steps after a registration that arrived once its process was gone (the model registers running processes only)")
			}
		}
		s.handleVoter(s.voterOf(env.To), env)
		if len(elr) > 0 {
			s.registered(int32(env.From), elr)
		}
	case env.To >= broker.ClientIDBase:
		s.Deliver(env)
	default:
		n := s.nodes[env.To]
		switch {
		case n.b == nil:
			s.Stats.Dropped++
		case n.paused:
			n.held = append(n.held, env)
		default:
			s.inv.cov.delivered(s, env)
			s.afterBroker(n, n.b.Handle(env, s.Now))
		}
	}
}

// afterBroker sends what a broker queued, or, if a failpoint fired, carries
// out its action and drops what the broker had not sent yet.
func (s *Sim) afterBroker(n *node, err error) {
	b := n.b
	out := b.TakeOutbox()
	s.collectEvents(n)
	for _, f := range b.TakeFaults() {
		s.failpointFired(f, n.id)
	}
	if err != nil {
		var fe *broker.FailpointError
		if !errors.As(err, &fe) {
			fe = &broker.FailpointError{Name: "error", Action: broker.ActionCrash, Cause: err}
		}
		if fe.Action == broker.ActionPause {
			// The step ran to its end; what it sends leaves on resume.
			n.heldOut = append(n.heldOut, out...)
		}
		s.failpointFired(fe, n.id)
		return
	}
	if s.proto != nil {
		s.proto.onSend(out)
	}
	for _, env := range out {
		s.Send(env)
	}
	s.maybeStopped(n)
}

// decided notes a decision of the active controller, once committed.
func (s *Sim) decided(e controller.Event) {
	s.trace.note(s.Now, "controller: "+e.String())
	if s.inv != nil && e.Kind.IsElection() {
		s.inv.cov.election(s, e.State)
	}
	switch e.Kind {
	case controller.ISRChange:
		if len(e.State.ISR) < len(e.OldISR) {
			s.Stats.ISRShrinks++
		} else if len(e.State.ISR) > len(e.OldISR) {
			s.Stats.ISRExpands++
		}
		s.Note(run.ISRNote(e.State.TopicPartition, e.OldISR, e.State.ISR, e.State.PartitionEpoch))
	case controller.ElectionClean, controller.ElectionPreferred, controller.ElectionEligible, controller.ElectionShutdown:
		s.Stats.Elections++
		if e.Kind == controller.ElectionShutdown {
			s.Reached(run.SitLeaderMovedByShutdown)
		}
		n := run.ElectionNote(e.State.TopicPartition, e.State.Leader, e.State.LeaderEpoch, false)
		if e.Kind == controller.ElectionEligible {
			n.Text += " (an eligible leader replica, KIP-966: no ISR member can lead)"
			if s.proto != nil {
				s.proto.leave("steps after an election from the eligible leader replicas (the model elects from the ISR only)")
			}
		}
		s.Note(n)
	case controller.ElectionUnclean:
		s.Stats.Elections++
		s.Stats.UncleanElections++
		s.Note(run.ElectionNote(e.State.TopicPartition, e.State.Leader, e.State.LeaderEpoch, true))
	case controller.ElectionRecovery:
		s.recovered(e)
	case controller.BrokerDead:
		s.Notef(run.NoteBroker, int(e.Broker), "controller: broker %d (incarnation %d) is dead: its session expired, or it registered again after a restart", e.Broker, e.Incarnation)
	case controller.BrokerRegistered:
		s.Notef(run.NoteBroker, int(e.Broker), "controller: broker %d registered (incarnation %d)", e.Broker, e.Incarnation)
	case controller.BrokerShuttingDown:
		s.Notef(run.NoteBroker, int(e.Broker), "controller: broker %d (incarnation %d) asks to stop: its leaderships move away", e.Broker, e.Incarnation)
		if s.proto != nil {
			s.proto.leave("steps after a controlled shutdown (the model has none: its brokers only crash)")
		}
	case controller.BrokerShutDown:
		s.Notef(run.NoteBroker, int(e.Broker), "controller: broker %d (incarnation %d) leads nothing: fenced, it may stop", e.Broker, e.Incarnation)
	case controller.BrokerRevived:
		s.Notef(run.NoteBroker, int(e.Broker), "controller: broker %d is alive again (incarnation %d): it heartbeats", e.Broker, e.Incarnation)
	}
}

// checkProtoScope stops trace validation where the controller left the
// model's scope.
func (s *Sim) checkProtoScope() {
	if c := s.controller(); s.proto != nil && s.proto.stopped == "" && c != nil {
		for _, tp := range s.proto.tps {
			if c.WaitsForEligible(tp) {
				s.proto.leave("steps after a last ISR member waited for an eligible leader replica (the model elects it on its return)")
			}
			if p, ok := c.Partition(tp); ok && slices.ContainsFunc(p.Replicas, func(r int32) bool { return c.LostData(r, tp) }) {
				s.proto.leave("steps after a replica came back having lost committed records (the model's disks keep what they synced)")
			}
		}
	}
}

func (s *Sim) collectEvents(n *node) {
	for _, e := range n.b.TakeEvents() {
		s.trace.note(s.Now, e.String())
		switch e.Kind {
		case "warning":
			s.Notef(run.NoteBroker, int(n.id), "broker %d: %s: %s", n.id, e.TP, e.Detail)
		case broker.EventOffsetsAppendFailed:
			s.Reached(run.SitOffsetsAppendFailed)
		case "retention", partition.EventReset.String():
			if e.Kind == "retention" {
				s.Reached(run.SitRetention)
			} else {
				s.Reached(run.SitFollowerReset)
			}
			if s.proto != nil {
				s.proto.leave("steps after retention deleted segments (the model's logs keep every record)")
			}
		}
	}
}

// LiveBrokers implements traffic.Host: the brokers whose process runs.
func (s *Sim) LiveBrokers() []broker.NodeID {
	var ids []broker.NodeID
	for _, n := range s.nodes[1:] {
		if n.b != nil {
			ids = append(ids, n.id)
		}
	}
	return ids
}

// Noted implements traffic.Host: every note is part of the trace.
func (s *Sim) Noted(n run.Note) { s.trace.note(s.Now, n.Text) }

func (s *Sim) clientsDone() bool {
	return s.Over && s.Now >= s.end()
}
