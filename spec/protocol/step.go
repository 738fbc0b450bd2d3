package protocol

import (
	"errors"
	"fmt"
	"slices"
)

// Truncation is how a follower finds where its log may diverge from its new
// leader's.
type Truncation uint8

const (
	// TruncateEpoch is truncation on fetch, Kafka's follower path since
	// KAFKA-10554, with KIP-279's rule and KIP-320's fencing: a follower
	// fetches from its LEO naming its latest cached epoch; a leader that
	// does not hold that epoch up to the fetch offset answers with the
	// largest epoch it holds at or below it and where it ends (a diverging
	// answer, no records, no progress noted), and the follower truncates to
	// the smaller end of that epoch if it holds it, else to the end of its
	// own largest epoch below, and fetches again. Safe.
	TruncateEpoch Truncation = iota
	// TruncateHW truncates to the follower's own HW (Kafka before 0.11).
	// The HW lags the leader's, so acknowledged records are dropped.
	// Reference: KIP-101, scenarios 1 and 2.
	TruncateHW
	// TruncateEpochKIP101 is KIP-101 as Kafka 0.11 shipped it: the leader
	// answers with an end offset only and the follower truncates to it,
	// with no epoch to compare. Reference: KAFKA-6361, KIP-279.
	TruncateEpochKIP101
	// TruncateEpochNoBump is TruncateEpochQuery, except that a follower
	// told to follow the same leader in a newer epoch keeps fetching
	// without truncating. Reference: KAFKA-7164.
	TruncateEpochNoBump
	// TruncateEpochQuery is KIP-101 with KIP-279's rule, as Kafka did
	// before truncation on fetch: a new follower asks where its latest
	// epoch ended (OffsetsForLeaderEpoch), truncates to the smaller end of
	// the largest epoch both logs hold, and asks again about an older
	// epoch when the leader answers with one it does not hold; only then
	// does it fetch. Safe.
	TruncateEpochQuery
)

var truncationNames = [...]string{"epoch", "hw", "epoch-kip101", "epoch-no-bump", "epoch-query"}

// onFetch reports whether followers settle divergence on fetch answers.
func (t Truncation) onFetch() bool { return t == TruncateEpoch }

func (t Truncation) String() string { return truncationNames[t] }

// Variant is the protocol's parameters.
type Variant struct {
	Truncation Truncation
	// Unclean lets a replica outside the ISR lead when no ISR member is
	// alive (unclean.leader.election.enable).
	Unclean bool
	// HWBelowMinISR lets a leader advance HW, and so acknowledge acks=all
	// writes, while its ISR is smaller than MinISR (before KIP-966).
	HWBelowMinISR bool
	// KeepISROnRestart lets a restarted broker keep its ISR place and
	// leadership (before KIP-903). Off, a restart counts as a death first.
	KeepISROnRestart bool
	// NoFencing drops KIP-320: fetches and epoch queries carry no leader
	// epoch, so a leader serves a follower that has not yet heard of a
	// newer epoch as if it were current. Every other variant fences, as
	// the reference broker does whatever its truncation rule.
	NoFencing bool
	// MinISR is min.insync.replicas.
	MinISR int
}

// fences reports whether fetches carry the leader epoch and a leader refuses
// ones of another epoch (KIP-320).
func (v Variant) fences() bool { return !v.NoFencing }

// ActionKind names a step.
type ActionKind uint8

// The steps. R is the replica that takes the step (for controller steps,
// the broker it is about).
const (
	// Produce: leader R appends the next value (acks=all).
	Produce ActionKind = iota
	// Deliver: message Msg reaches Msg.To, which handles it. For a fetch
	// answer, K is how many of its entries the follower appends (a fetch
	// limited by max bytes); -1 is all.
	Deliver
	// Lose: message Msg is lost.
	Lose
	// Resend: follower R's request timed out; it asks again.
	Resend
	// Learn: R receives the controller's current state of the partition,
	// and becomes leader or follower in its epoch.
	Learn
	// LearnISR: leader R receives the controller's ISR for its own epoch.
	LearnISR
	// ShrinkISR: leader R removes follower F from the ISR through the
	// controller (it lagged for replica.lag.time.max.ms).
	ShrinkISR
	// ExpandISR: leader R adds follower F to the ISR through the
	// controller (F caught up).
	ExpandISR
	// Crash: R's process dies; its log survives.
	Crash
	// PowerLoss: R's machine loses power; its log keeps its first K
	// entries (the synced ones).
	PowerLoss
	// Restart: R starts a new process, with high watermark HW read from its
	// checkpoint, and registers with the controller. Elect is the new
	// leader when the registration causes an election.
	Restart
	// Fence: the controller declares R dead (a crashed R, or a running one
	// it stopped hearing from). Elect is the new leader when R led.
	Fence
	// Unfence: the controller hears from a running R again (same process).
	Unfence
	// Reelect: the controller moves leadership to Elect, an alive ISR
	// member (preferred-leader election).
	Reelect
)

var actionNames = [...]string{"produce", "deliver", "lose", "resend", "learn", "learn-isr", "shrink-isr",
	"expand-isr", "crash", "power-loss", "restart", "fence", "unfence", "reelect"}

func (k ActionKind) String() string { return actionNames[k] }

// Action is one step with every choice it makes.
type Action struct {
	Kind  ActionKind
	R, F  int32
	Msg   Msg
	K     int32
	HW    int32
	Elect int32
}

// String renders the action for a counterexample.
func (a Action) String() string {
	switch a.Kind {
	case Produce:
		return fmt.Sprintf("replica %d appends a produced record (acks=all)", a.R)
	case Deliver:
		if a.Msg.Kind == FetchAnswer && a.K >= 0 && int(a.K) < len(a.Msg.Entries) {
			return fmt.Sprintf("deliver %s (append %d)", &a.Msg, a.K)
		}
		return fmt.Sprintf("deliver %s", &a.Msg)
	case Lose:
		return fmt.Sprintf("lose %s", &a.Msg)
	case Resend:
		return fmt.Sprintf("replica %d times out and asks again", a.R)
	case Learn:
		return fmt.Sprintf("replica %d learns the controller's state", a.R)
	case LearnISR:
		return fmt.Sprintf("leader %d learns the controller's ISR", a.R)
	case ShrinkISR:
		return fmt.Sprintf("leader %d removes %d from the ISR", a.R, a.F)
	case ExpandISR:
		return fmt.Sprintf("leader %d adds %d to the ISR", a.R, a.F)
	case Crash:
		return fmt.Sprintf("replica %d crashes (log kept)", a.R)
	case PowerLoss:
		return fmt.Sprintf("replica %d loses power (keeps %d entries)", a.R, a.K)
	case Restart:
		return fmt.Sprintf("replica %d restarts with HW %d%s", a.R, a.HW, electing(a.Elect))
	case Fence:
		return fmt.Sprintf("controller declares %d dead%s", a.R, electing(a.Elect))
	case Unfence:
		return fmt.Sprintf("controller hears from %d again%s", a.R, electing(a.Elect))
	case Reelect:
		return fmt.Sprintf("controller moves leadership to %d", a.Elect)
	}
	return a.Kind.String()
}

func electing(id int32) string {
	if id == None {
		return ""
	}
	return fmt.Sprintf(" (elect %d if an election is due)", id)
}

// ErrNotEnabled is wrapped by every refusal of Step: the action is not a
// transition of the protocol from this state.
var ErrNotEnabled = errors.New("not enabled")

// refusal is a refused action; the reason is formatted only when read, since
// the explorer tries (and has refused) far more actions than it prints.
type refusal struct {
	format string
	args   []any
}

func (r *refusal) Error() string {
	return ErrNotEnabled.Error() + ": " + fmt.Sprintf(r.format, r.args...)
}

func (r *refusal) Unwrap() error { return ErrNotEnabled }

func refuse(format string, args ...any) error { return &refusal{format, args} }

// needChoice refuses an election action whose Elect is not one of the
// candidates: it names them, so the explorer can try each.
type needChoice struct {
	refusal
	candidates uint32
}

// Model is the protocol with its variant, for a fixed number of replicas.
type Model struct {
	Variant Variant
	N       int
	// noGhost skips the ghost state (committed records, acknowledgements)
	// that only the invariants read: CheckTransition compares processes,
	// and trace validation's logs are long.
	noGhost bool
}

// Init is the state after topic creation: replica 0 leads epoch 1, every
// replica is in the ISR, all logs are empty, and no message is in flight.
// Every replica already knows its role.
func (m Model) Init() *State {
	s := &State{Replicas: make([]Replica, m.N)}
	all := uint32(1)<<uint(m.N) - 1
	s.Ctrl = Controller{Leader: 0, Epoch: 1, ISR: all, Alive: all, N: int32(m.N)}
	for i := range s.Replicas {
		s.Ctrl.Inc[i] = 1
		s.Replicas[i] = Replica{Up: true, Inc: 1, Leader: None}
	}
	s.Ghost.Next = 1
	for i := range s.Replicas {
		m.learn(s, int32(i))
	}
	return s
}

// Step returns the state after a, or an error wrapping ErrNotEnabled.
// It never modifies s.
func (m Model) Step(s *State, a Action) (*State, error) {
	if err := m.enabled(s, a); err != nil {
		return nil, err
	}
	next := s.Clone()
	m.apply(next, a)
	return next, nil
}

// Apply is Step in place, for callers that own s (trace validation).
func (m Model) Apply(s *State, a Action) error {
	if err := m.enabled(s, a); err != nil {
		return err
	}
	m.apply(s, a)
	return nil
}

func (m Model) replica(s *State, id int32) (*Replica, error) {
	if id < 0 || int(id) >= len(s.Replicas) {
		return nil, refuse("no replica %d", id)
	}
	return &s.Replicas[id], nil
}

// enabled checks a's precondition without changing anything.
func (m Model) enabled(s *State, a Action) error {
	if a.Kind == Deliver || a.Kind == Lose {
		if findMsg(s.Net, &a.Msg) < 0 {
			return refuse("%s is not in flight", &a.Msg)
		}
		if a.Kind == Lose {
			return nil
		}
		to, err := m.replica(s, a.Msg.To)
		if err != nil {
			return err
		}
		if !to.Up {
			return refuse("replica %d is down", a.Msg.To)
		}
		if a.Msg.Kind == FetchAnswer && a.K > int32(len(a.Msg.Entries)) {
			return refuse("append %d of %d entries", a.K, len(a.Msg.Entries))
		}
		return nil
	}
	if a.Kind == Reelect {
		if _, err := m.replica(s, a.Elect); err != nil {
			return err
		}
		c := &s.Ctrl
		if a.Elect == c.Leader || !has(c.Alive, a.Elect) || !has(c.ISR, a.Elect) {
			return refuse("controller cannot move leadership to %d (leader %d, isr %s, alive %s)", a.Elect, c.Leader, setString(c.ISR), setString(c.Alive))
		}
		return nil
	}
	r, err := m.replica(s, a.R)
	if err != nil {
		return err
	}
	switch a.Kind {
	case Produce:
		if !r.leads(a.R) {
			return refuse("replica %d does not lead", a.R)
		}
		if count(r.ISR) < m.Variant.MinISR {
			return refuse("leader %d's ISR %s is below min.insync.replicas %d: NOT_ENOUGH_REPLICAS", a.R, setString(r.ISR), m.Variant.MinISR)
		}
	case Resend:
		if !r.Up || r.Await == AwaitNothing {
			return refuse("replica %d waits for nothing", a.R)
		}
	case Learn:
		c := &s.Ctrl
		if !r.Up || !has(c.Alive, a.R) || c.Inc[a.R] != r.Inc {
			return refuse("the controller does not talk to replica %d's process", a.R)
		}
		if r.Epoch >= c.Epoch {
			return refuse("replica %d already knows epoch %d", a.R, c.Epoch)
		}
	case LearnISR:
		if !r.leads(a.R) || r.Epoch != s.Ctrl.Epoch || r.ISR == s.Ctrl.ISR {
			return refuse("leader %d has nothing to learn", a.R)
		}
	case ShrinkISR, ExpandISR:
		return m.isrChangeEnabled(s, a)
	case Crash, PowerLoss:
		if !r.Up {
			return refuse("replica %d is down", a.R)
		}
		if a.Kind == PowerLoss && (a.K < 0 || a.K > r.LEO()) {
			return refuse("power loss keeps %d of %d entries", a.K, r.LEO())
		}
	case Restart:
		if r.Up {
			return refuse("replica %d is up", a.R)
		}
		if a.HW < 0 || a.HW > min(r.HW, r.LEO()) {
			return refuse("replica %d restarts with HW %d; its checkpoint held at most %d", a.R, a.HW, min(r.HW, r.LEO()))
		}
		return m.electionEnabled(s, a, true)
	case Fence:
		if !has(s.Ctrl.Alive, a.R) {
			return refuse("controller already thinks %d dead", a.R)
		}
		return m.electionEnabled(s, a, false)
	case Unfence:
		if !r.Up || has(s.Ctrl.Alive, a.R) || s.Ctrl.Inc[a.R] != r.Inc {
			return refuse("controller cannot hear from %d again", a.R)
		}
	default:
		return refuse("unknown action %d", a.Kind)
	}
	return nil
}

func (m Model) isrChangeEnabled(s *State, a Action) error {
	r := &s.Replicas[a.R]
	c := &s.Ctrl
	if a.R != s.acting() || r.ISR != c.ISR {
		// Kafka's controller refuses a proposal from a stale leader epoch or
		// partition epoch (KIP-497); the proposal changes nothing.
		return refuse("replica %d (epoch %d, isr %s) is not the leader the controller knows (%d in epoch %d), with its ISR %s",
			a.R, r.Epoch, setString(r.ISR), c.Leader, c.Epoch, setString(c.ISR))
	}
	if a.F < 0 || int(a.F) >= s.N() || a.F == a.R {
		return refuse("no follower %d", a.F)
	}
	if a.Kind == ShrinkISR {
		if !has(c.ISR, a.F) {
			return refuse("%d is not in the ISR", a.F)
		}
		return nil
	}
	k := r.Known[a.F]
	switch {
	case has(c.ISR, a.F):
		return refuse("%d is in the ISR", a.F)
	case k.LEO < r.HW || k.LEO < m.epochStart(r):
		return refuse("follower %d at %d has not reached HW %d and the epoch's start %d", a.F, k.LEO, r.HW, m.epochStart(r))
	case !has(c.Alive, a.F) || k.Inc != c.Inc[a.F]:
		// KIP-903: the proposal names the incarnation the fetches came
		// from, and the controller refuses a stale or dead one.
		return refuse("follower %d's fetches came from incarnation %d; the controller knows %d", a.F, k.Inc, c.Inc[a.F])
	}
	return nil
}

// epochStart is where leader r's current epoch starts in its log.
func (m Model) epochStart(r *Replica) int32 {
	for _, e := range r.Epochs {
		if e.Epoch == r.Epoch {
			return e.Start
		}
	}
	return r.LEO()
}

func count(set uint32) int {
	n := 0
	for ; set != 0; set &= set - 1 {
		n++
	}
	return n
}

func findMsg(net []Msg, m *Msg) int {
	for i := range net {
		if msgEqual(&net[i], m) {
			return i
		}
	}
	return -1
}

func msgEqual(a, b *Msg) bool {
	return a.Kind == b.Kind && a.From == b.From && a.To == b.To && a.Inc == b.Inc && a.Epoch == b.Epoch &&
		a.Offset == b.Offset && a.Query == b.Query && a.Asked == b.Asked && a.End == b.End && a.HW == b.HW &&
		a.OutOfRange == b.OutOfRange && a.Diverging == b.Diverging && slices.Equal(a.Entries, b.Entries)
}
