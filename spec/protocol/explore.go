package protocol

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bounds limit what the explorer tries. Within them it tries everything.
type Bounds struct {
	Replicas    int // N, 2..MaxReplicas
	Records     int // produced values
	Crashes     int // process crashes (logs survive)
	PowerLosses int // power losses (unsynced suffixes lost)
	Pauses      int // times the controller declares a running broker dead
	Reelections int // preferred-leader elections
	// Inflight bounds the messages one follower process has in flight
	// (requests it sent and answers to them). A follower that timed out
	// asks again; this bounds how many of its copies the network holds.
	Inflight int
	// PartialFetch also tries appending part of a fetch answer, as a
	// follower does when max bytes cut it.
	PartialFetch bool
	// LazyCheckpoint also tries every HW a restart could read from a
	// checkpoint written less often than HW moved (HW checkpoint
	// interval > 0), not only the last HW.
	LazyCheckpoint bool
	// MaxStates stops the search after this many distinct states; the
	// result then says it is incomplete.
	MaxStates int
	// Symmetry explores one state of each set that differs only by
	// renaming replicas.
	Symmetry bool
	// Invariants limits the check to these (all when empty), to look for
	// the shortest trace to one kind of failure, such as AckedWriteKept.
	Invariants []string
}

// DefaultBounds are the documented bounds the safe variant is checked
// within: 3 replicas, 2 records, 1 crash.
func DefaultBounds() Bounds {
	return Bounds{Replicas: 3, Records: 2, Crashes: 1, Inflight: 1, MaxStates: 20_000_000, Symmetry: true}
}

// Validate reports bounds the explorer cannot work with.
func (b Bounds) Validate() error {
	switch {
	case b.Replicas < 1 || b.Replicas > MaxReplicas:
		return fmt.Errorf("replicas %d: want 1..%d", b.Replicas, MaxReplicas)
	case b.Records < 0 || b.Crashes < 0 || b.PowerLosses < 0 || b.Pauses < 0 || b.Reelections < 0:
		return errors.New("records and fault bounds must not be negative")
	case b.Inflight < 1:
		return fmt.Errorf("inflight %d: a follower needs at least one message in flight", b.Inflight)
	case b.MaxStates < 1:
		return fmt.Errorf("max states %d: want at least 1", b.MaxStates)
	}
	for _, name := range b.Invariants {
		if !slices.Contains(Invariants, name) {
			return fmt.Errorf("unknown invariant %q: want one of %s", name, strings.Join(Invariants, ", "))
		}
	}
	return nil
}

// Result is what an exploration found.
type Result struct {
	States      int           // distinct states reached
	Transitions int           // steps taken, including to states seen before
	Depth       int           // the deepest BFS level reached
	Complete    bool          // every state within the bounds was explored, none broke an invariant
	Elapsed     time.Duration // wall time
	Violation   *Counterexample
}

// StatesPerSecond is the exploration rate.
func (r Result) StatesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.States) / r.Elapsed.Seconds()
}

// Counterexample is a shortest path from the initial state to a state that
// breaks an invariant.
type Counterexample struct {
	Broken Broken
	Init   *State
	Steps  []TraceStep
}

// TraceStep is one action and the state it led to.
type TraceStep struct {
	Action Action
	State  *State
}

// String prints the counterexample step by step.
func (c *Counterexample) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s violated after %d steps: %s\n\ninitial state:\n%s\n", c.Broken.Invariant, len(c.Steps), c.Broken.Detail, c.Init)
	for i, st := range c.Steps {
		fmt.Fprintf(&b, "\n%d. %s\n%s\n", i+1, st.Action, st.State)
	}
	return b.String()
}

// Progress is called between BFS levels.
type Progress func(states, depth int, elapsed time.Duration)

// Explore searches every state reachable within b, breadth first, and
// checks the invariants in each. The first violation found is at the
// smallest depth, so its trace is a shortest one.
func Explore(m Model, b Bounds, progress Progress) (Result, error) {
	if err := b.Validate(); err != nil {
		return Result{}, err
	}
	m.N = b.Replicas
	if m.Variant.MinISR < 1 || m.Variant.MinISR > b.Replicas {
		return Result{}, fmt.Errorf("min.insync.replicas %d: want 1..%d", m.Variant.MinISR, b.Replicas)
	}
	x := explorer{m: m, b: b, seen: map[string]int32{}}
	if b.Symmetry {
		x.perms = permutations(b.Replicas)
	}
	return x.run(progress), nil
}

type explorer struct {
	m       Model
	b       Bounds
	perms   [][]int32
	enc     encoder          // for the sequential parts
	seen    map[string]int32 // key -> index in parents
	parents []int32          // the state each state was first reached from
	keys    []string
}

func (x *explorer) key(s *State, e *encoder) string {
	if x.perms != nil {
		return s.symmetricKey(x.perms, e)
	}
	return string(e.state(s, nil))
}

func (x *explorer) add(k string, parent int32) (int32, bool) {
	if _, ok := x.seen[k]; ok {
		return 0, false
	}
	id := int32(len(x.parents))
	x.seen[k] = id
	x.parents = append(x.parents, parent)
	x.keys = append(x.keys, k)
	return id, true
}

// item is a state waiting to be expanded.
type item struct {
	s  *State
	id int32
}

// successor is a state reached from a parent, with what the workers found
// out about it.
type successor struct {
	s      *State
	key    string
	parent int32
	broken *Broken
}

// batchSize is how many states the workers expand between merges: it
// bounds the successors held at once.
const batchSize = 2048

func (x *explorer) run(progress Progress) Result {
	start := time.Now()
	res := Result{Complete: true}
	init := x.m.Init()
	id, _ := x.add(x.key(init, &x.enc), -1)
	level := []item{{init, id}}
	if br := CheckOnly(init, x.b.Invariants); br != nil {
		res.Violation = &Counterexample{Broken: *br, Init: init}
		res.Complete = false
	}
	workers := runtime.GOMAXPROCS(0)
	encs := make([]encoder, workers)
	for depth := 0; len(level) > 0 && res.Violation == nil && res.Complete; depth++ {
		res.Depth = depth
		if progress != nil {
			progress(len(x.parents), depth, time.Since(start))
		}
		var next []item
		for lo := 0; lo < len(level) && res.Violation == nil && res.Complete; lo += batchSize {
			batch := level[lo:min(lo+batchSize, len(level))]
			found := x.expand(batch, workers, encs)
			// Merge in a fixed order, so the states' numbering, and the
			// counterexample reported, do not depend on scheduling.
			for _, succs := range found {
				for _, sc := range succs {
					res.Transitions++
					id, fresh := x.add(sc.key, sc.parent)
					if !fresh {
						continue
					}
					if sc.broken != nil {
						res.Depth = depth + 1
						res.Violation = x.trace(id, *sc.broken)
						res.Complete = false
						break
					}
					if len(x.parents) >= x.b.MaxStates {
						res.Complete = false
						break
					}
					next = append(next, item{sc.s, id})
				}
				if res.Violation != nil || !res.Complete {
					break
				}
			}
		}
		level = next
	}
	res.States = len(x.parents)
	res.Elapsed = time.Since(start)
	return res
}

// expand computes the successors of batch on workers goroutines: each takes
// a stride of the batch. The seen map is only read while they run.
func (x *explorer) expand(batch []item, workers int, encs []encoder) [][]successor {
	found := make([][]successor, len(batch))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := &encs[w]
			var acts []Action
			for i := w; i < len(batch); i += workers {
				it := batch[i]
				acts = x.actions(it.s, acts)
				for _, a := range acts {
					s2, err := x.m.Step(it.s, a)
					if err != nil || !x.withinBounds(s2) {
						continue
					}
					k := x.key(s2, e)
					sc := successor{key: k, parent: it.id}
					if _, ok := x.seen[k]; !ok {
						sc.s = s2
						sc.broken = CheckOnly(s2, x.b.Invariants)
					}
					found[i] = append(found[i], sc)
				}
			}
		}()
	}
	wg.Wait()
	return found
}

// withinBounds prunes states past the fault and message bounds.
func (x *explorer) withinBounds(s *State) bool {
	g := &s.Ghost
	if int(g.Crashes) > x.b.Crashes || int(g.PowerLosses) > x.b.PowerLosses ||
		int(g.Pauses) > x.b.Pauses || int(g.Reelections) > x.b.Reelections {
		return false
	}
	for i := range s.Replicas {
		n := 0
		for j := range s.Net {
			m := &s.Net[j]
			if m.follower() == int32(i) && m.Inc == s.Replicas[i].Inc {
				n++
			}
		}
		if n > x.b.Inflight {
			return false
		}
	}
	return true
}

// actions lists the candidate actions from s; Step refuses those that are
// not enabled.
func (x *explorer) actions(s *State, out []Action) []Action {
	n := int32(s.N())
	out = out[:0]
	if int(s.Ghost.Next) <= x.b.Records {
		for r := range n {
			out = append(out, Action{Kind: Produce, R: r})
		}
	}
	for i := range s.Net {
		msg := s.Net[i]
		if findMsg(s.Net[:i], &msg) >= 0 {
			continue // a copy of one already tried
		}
		out = append(out, Action{Kind: Deliver, Msg: msg, K: -1}, Action{Kind: Lose, Msg: msg})
		if x.b.PartialFetch && msg.Kind == FetchAnswer {
			for k := 1; k < len(msg.Entries); k++ {
				out = append(out, Action{Kind: Deliver, Msg: msg, K: int32(k)})
			}
		}
	}
	for r := range n {
		rep := &s.Replicas[r]
		out = append(out, Action{Kind: Resend, R: r}, Action{Kind: Learn, R: r}, Action{Kind: LearnISR, R: r})
		if r == s.acting() {
			for f := range n {
				out = append(out, Action{Kind: ShrinkISR, R: r, F: f}, Action{Kind: ExpandISR, R: r, F: f})
			}
		}
		if rep.Up {
			if int(s.Ghost.Crashes) < x.b.Crashes {
				out = append(out, Action{Kind: Crash, R: r})
			}
			if int(s.Ghost.PowerLosses) < x.b.PowerLosses {
				for k := range rep.LEO() {
					out = append(out, Action{Kind: PowerLoss, R: r, K: k})
				}
			}
		} else {
			hws := []int32{min(rep.HW, rep.LEO())}
			if x.b.LazyCheckpoint {
				hws = hws[:0]
				for hw := range min(rep.HW, rep.LEO()) + 1 {
					hws = append(hws, hw)
				}
			}
			for _, hw := range hws {
				out = x.electing(s, out, Action{Kind: Restart, R: r, HW: hw, Elect: None})
			}
		}
		out = x.electing(s, out, Action{Kind: Fence, R: r, Elect: None})
		out = x.electing(s, out, Action{Kind: Unfence, R: r, Elect: None})
		if int(s.Ghost.Reelections) < x.b.Reelections {
			out = append(out, Action{Kind: Reelect, Elect: r})
		}
	}
	return out
}

// electing adds a, an action that may hold an election, once for each
// leader it may elect.
func (x *explorer) electing(s *State, out []Action, a Action) []Action {
	err := x.m.enabled(s, a)
	var choice *needChoice
	if !errors.As(err, &choice) {
		if err == nil {
			out = append(out, a)
		}
		return out
	}
	for _, id := range members(choice.candidates) {
		a.Elect = id
		out = append(out, a)
	}
	return out
}

// trace rebuilds the path to state id by replaying from the initial state:
// at each step, the successor whose key matches the next state on the path.
func (x *explorer) trace(id int32, br Broken) *Counterexample {
	var path []int32
	for i := id; i >= 0; i = x.parents[i] {
		path = append(path, i)
	}
	init := x.m.Init()
	ce := &Counterexample{Broken: br, Init: init}
	s := init
	for i := len(path) - 2; i >= 0; i-- {
		want := x.keys[path[i]]
		for _, a := range x.actions(s, nil) {
			s2, err := x.m.Step(s, a)
			if err != nil || !x.withinBounds(s2) || x.key(s2, &x.enc) != want {
				continue
			}
			ce.Steps = append(ce.Steps, TraceStep{Action: a, State: s2})
			s = s2
			break
		}
	}
	// With symmetry the last state may be a renaming of the one checked:
	// report what breaks in the state the trace reaches.
	if b := CheckOnly(s, x.b.Invariants); b != nil {
		ce.Broken = *b
	}
	return ce
}
