package run

import (
	"fmt"
	"strings"
)

// A FaultDef is one kind of fault, defined once for every runner: what it
// strikes, what a target must offer to carry it out (Available), and how
// it strikes (Inject), composed of the primitive operations each runner
// implements its own way (Striker). The simulator and the live runner
// look a fault's definition up (Def) instead of switching on its kind.
type FaultDef struct {
	Kind FaultKind
	// Scope is what it strikes.
	Scope Scope
	// Down: it stops the broker's process, and comes back after ForMs
	// (Fault.Repeat applies).
	Down bool
	// Unfolds: it strikes in steps over time (Striker.Unfold), each step a
	// fault of its own.
	Unfolds bool
	// Needs is what every fault of the kind needs of a target.
	Needs Capabilities
	// needsFor is what one fault needs besides, by its options (nil:
	// nothing).
	needsFor func(f Fault) Capabilities
	// strike carries f out through st on broker id (0 unless Scope is
	// ScopeBroker) for ms (Spec.Duration).
	strike func(st Striker, f Fault, id int, ms int64) error
}

// Scope is what a fault strikes.
type Scope int

// Scopes.
const (
	ScopeBroker   Scope = iota // one broker: Node, or the one Role picks (Striker.Broker)
	ScopeReplicas              // the replicas of a partition, which it picks itself as it unfolds
	ScopeCluster               // every broker
	ScopeNetwork               // the network as a whole
	ScopeClient                // one of the harness's clients: Node is its index
)

// Striker is a runner as a fault sees it: the primitive operations that
// the simulator carries out on its simulated machines and network, and
// the live runner with signals, proxies and the user's commands. A
// primitive that finds nothing to do (a crash of a broker that is down
// already) does nothing; one the runner cannot do at all returns an error
// naming the runner and what it cannot do, and Available has refused
// every fault that needs it before the run.
type Striker interface {
	// Broker is the broker f strikes now: Node, or the one its Role picks
	// (the leader, a follower, the coordinator); false, noted, when there
	// is none.
	Broker(f Fault) (int, bool)
	// Unfold is the steps of a fault that strikes in steps, resolved to
	// brokers now; nil when it has nothing to strike now.
	Unfold(f Fault) []Step
	// Later strikes with f afterMs from now.
	Later(afterMs int64, f Fault)
	// Notef records a note of kind about broker node (0: none).
	Notef(kind NoteKind, node int, format string, args ...any)

	// Crash kills broker id's process (its page cache survives) and
	// restarts it on its data after downMs.
	Crash(id int, downMs int64) error
	// PowerLoss cuts the power of broker id's machine (what it did not
	// sync is lost, the last write may tear); it comes back after downMs.
	PowerLoss(id int, downMs int64) error
	// PowerLossAll cuts every broker's power at once; each comes back
	// after downMs.
	PowerLossAll(downMs int64) error
	// ReplaceDisk kills broker id and brings it back after downMs on an
	// empty disk.
	ReplaceDisk(id int, downMs int64) error
	// DamageLog stops broker id (a crash, or with f.Clean a clean stop)
	// and flips bytes of its logs as f says while it is down; it comes
	// back after downMs.
	DamageLog(id int, f Fault, downMs int64) error
	// Stop stops broker id as SIGTERM does; it comes back downMs after
	// its process ended, and with powerOff its machine loses power once
	// it is down.
	Stop(id int, downMs int64, powerOff bool) error
	// Pause stops broker id's process for forMs; messages to it wait.
	Pause(id int, forMs int64) error
	// Isolate cuts broker id off from every other node for forMs (0:
	// until the final heal).
	Isolate(id int, forMs int64) error
	// Slow adds delayMs to every message to or from broker id for forMs.
	Slow(id int, delayMs, forMs int64) error
	// Messages puts m in force on broker id's links for forMs.
	Messages(id int, m *MessageFault, forMs int64) error
	// Heal ends every network partition.
	Heal() error
	// RestartProducer restarts producer client i (0-based).
	RestartProducer(i int) error
	// CrashConsumer kills group consumer i (0-based); a new member starts
	// after downMs.
	CrashConsumer(i int, downMs int64) error
}

// Step is one part of a fault that unfolds over time: Fault strikes
// AfterMs after the fault began, resolved to its broker.
type Step struct {
	AfterMs int64
	Fault   Fault
}

// StrikeError is a fault a runner failed to carry out.
type StrikeError struct {
	Kind FaultKind
	Node int // the broker it struck; 0 for a fault on no one broker
	Err  error
}

func (e *StrikeError) Error() string {
	if e.Node > 0 {
		return fmt.Sprintf("%s broker %d failed: %v", e.Kind, e.Node, e.Err)
	}
	return fmt.Sprintf("%s failed: %v", e.Kind, e.Err)
}

func (e *StrikeError) Unwrap() error { return e.Err }

// faultDefs holds every kind's definition, one each (FaultKinds).
var faultDefs = []FaultDef{
	{Kind: FaultCrash, Down: true, Needs: Capabilities{Crash: true},
		strike: func(st Striker, _ Fault, id int, ms int64) error { return st.Crash(id, ms) }},
	{Kind: FaultPowerLoss, Down: true, Needs: Capabilities{PowerLoss: true},
		strike: func(st Striker, _ Fault, id int, ms int64) error { return st.PowerLoss(id, ms) }},
	{Kind: FaultPause, Needs: Capabilities{Pause: true},
		strike: func(st Striker, _ Fault, id int, ms int64) error { return st.Pause(id, ms) }},
	{Kind: FaultIsolate, Needs: Capabilities{Isolate: true},
		strike: func(st Striker, _ Fault, id int, ms int64) error { return st.Isolate(id, ms) }},
	{Kind: FaultSlow, Needs: Capabilities{Slow: true},
		strike: func(st Striker, f Fault, id int, ms int64) error { return st.Slow(id, f.DelayMs, ms) }},
	{Kind: FaultHeal, Scope: ScopeNetwork, Needs: Capabilities{Isolate: true},
		strike: func(st Striker, _ Fault, _ int, _ int64) error { return st.Heal() }},
	{Kind: FaultRestartProducer, Scope: ScopeClient,
		strike: func(st Striker, f Fault, _ int, _ int64) error { return st.RestartProducer(f.Node) }},
	{Kind: FaultCrashConsumer, Scope: ScopeClient,
		strike: func(st Striker, f Fault, _ int, ms int64) error { return st.CrashConsumer(f.Node, ms) }},
	{Kind: FaultReplaceDisk, Down: true, Needs: Capabilities{ReplaceDisk: true},
		strike: func(st Striker, _ Fault, id int, ms int64) error { return st.ReplaceDisk(id, ms) }},
	{Kind: FaultPowerLossAll, Scope: ScopeCluster, Needs: Capabilities{PowerLoss: true},
		strike: func(st Striker, _ Fault, _ int, ms int64) error { return st.PowerLossAll(ms) }},
	{Kind: FaultMessages, Needs: Capabilities{Messages: true},
		strike: func(st Striker, f Fault, id int, ms int64) error { return st.Messages(id, f.Messages, ms) }},
	// Its steps are crashes and isolations (nemesis.Unfold), or a slowed
	// follower with DelayMs.
	{Kind: FaultBounceLeader, Scope: ScopeReplicas, Unfolds: true, Needs: Capabilities{Crash: true, Isolate: true},
		needsFor: func(f Fault) Capabilities { return Capabilities{Slow: f.DelayMs > 0} }},
	{Kind: FaultDamageLog, Down: true, Needs: Capabilities{ReplaceDisk: true},
		needsFor: func(f Fault) Capabilities { return Capabilities{Stop: f.Clean} },
		strike:   func(st Striker, f Fault, id int, ms int64) error { return st.DamageLog(id, f, ms) }},
	{Kind: FaultStop, Down: true, Needs: Capabilities{Stop: true},
		needsFor: func(f Fault) Capabilities { return Capabilities{PowerLoss: f.PowerOff} },
		strike:   func(st Striker, f Fault, id int, ms int64) error { return st.Stop(id, ms, f.PowerOff) }},
	// Its steps are stops, one broker after another.
	{Kind: FaultRollingStop, Scope: ScopeCluster, Unfolds: true, Needs: Capabilities{Stop: true},
		needsFor: func(f Fault) Capabilities { return Capabilities{PowerLoss: f.PowerOff} }},
}

var defByKind = func() map[FaultKind]*FaultDef {
	m := make(map[FaultKind]*FaultDef, len(faultDefs))
	for i := range faultDefs {
		m[faultDefs[i].Kind] = &faultDefs[i]
	}
	return m
}()

// Def is kind's definition; nil for a kind that is not one of FaultKinds.
func Def(kind FaultKind) *FaultDef { return defByKind[kind] }

// OnBroker reports whether the kind strikes one broker, Node or the one
// Role picks (the others strike a partition's replicas, the cluster, the
// network or a client).
func (k FaultKind) OnBroker() bool {
	d := Def(k)
	return d != nil && d.Scope == ScopeBroker
}

// Down reports whether the kind stops the broker's process.
func (k FaultKind) Down() bool {
	d := Def(k)
	return d != nil && d.Down
}

// NeedsOf is what f needs of a target: its kind's Needs and what its
// options add.
func (d *FaultDef) NeedsOf(f Fault) Capabilities {
	if d.needsFor == nil {
		return d.Needs
	}
	return d.Needs.with(d.needsFor(f))
}

// Available says whether a target that offers have can carry out faults
// of the kind: nil, or an error naming what it lacks and how to get it.
func (d *FaultDef) Available(have Capabilities) error {
	if lack := d.Needs.Lacking(have); len(lack) > 0 {
		return fmt.Errorf("%s needs %s, which this target does not offer", d.Kind, strings.Join(lack, ", "))
	}
	return nil
}

// Inject strikes with f now through st, as d defines it: a fault that
// unfolds (or repeats) has its steps struck in turn, each later; a fault
// on one broker strikes the one st resolves it to now. f is valid
// (Spec.Validate) and of d's kind.
func (d *FaultDef) Inject(st Striker, s *Spec, f Fault) error {
	if d.Unfolds || f.Repeat > 0 {
		steps := st.Unfold(f)
		if steps == nil {
			st.Notef(NoteHarness, 0, "%s: no leader or no follower to strike now, skipped", f.Kind)
		}
		for _, step := range steps {
			st.Later(step.AfterMs, step.Fault)
		}
		return nil
	}
	id := 0
	if d.Scope == ScopeBroker {
		var ok bool
		if id, ok = st.Broker(f); !ok {
			return nil
		}
	}
	if err := d.strike(st, f, id, s.Duration(f)); err != nil {
		return &StrikeError{Kind: f.Kind, Node: id, Err: err}
	}
	return nil
}

// Needs is what s needs of a target to carry it out: what every fault
// kind it may inject needs (its schedule's and its nemesis's), what its
// scheduled faults' options add, and failpoints if it switches any.
func (s *Spec) Needs() Capabilities {
	var need Capabilities
	for _, k := range s.Kinds() {
		if d := Def(k); d != nil {
			need = need.with(d.Needs)
		}
	}
	for _, f := range s.Faults {
		if d := Def(f.Kind); d != nil {
			need = need.with(d.NeedsOf(f))
		}
	}
	need.Failpoints = need.Failpoints || len(s.Failpoints) > 0
	return need
}
