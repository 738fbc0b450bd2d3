package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// runExplore is `watermark explore`: every state of the abstract protocol
// model (spec/protocol) reachable within bounds, breadth first, checked
// against the invariants. Unlike search it is exhaustive: "no violation"
// covers every schedule within the bounds, and a violation comes with a
// shortest trace. A run that hits --max-states proved nothing and exits 1.
func runExplore(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark explore", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("variant", protocol.Variants[0].Name, "the protocol variant: "+strings.Join(protocol.VariantNames(), ", "))
	replicas := fs.Int("replicas", 0, fmt.Sprintf("replicas, 1..%d (default: the variant's bounds)", protocol.MaxReplicas))
	records := fs.Int("records", 0, "records produced (default: the variant's bounds)")
	crashes := fs.Int("crashes", 0, "process crashes, the log survives (default: the variant's bounds)")
	powerLosses := fs.Int("power-losses", 0, "power losses, unsynced suffixes are lost (default: the variant's bounds)")
	pauses := fs.Int("pauses", 0, "times the controller declares a running broker dead (default: the variant's bounds)")
	reelections := fs.Int("reelections", 0, "preferred-leader elections (default: the variant's bounds)")
	inflight := fs.Int("inflight", 0, "messages one follower may have in flight, at least 1 (default: the variant's bounds)")
	minISR := fs.Int("min-isr", 0, "min.insync.replicas, 1..replicas (default: the variant's)")
	unclean := fs.Bool("unclean", false, "allow unclean leader election (default: the variant's)")
	invariants := fs.StringArray("invariant", nil, "check only this invariant (repeatable; default all): "+strings.Join(protocol.Invariants, ", "))
	maxStates := fs.Int("max-states", 0, "stop after this many distinct states; the run is then incomplete (default: the variant's bounds)")
	noSymmetry := fs.Bool("no-symmetry", false, "explore states that differ only by renaming replicas separately")
	partialFetch := fs.Bool("partial-fetch", false, "also append part of a fetch answer, as max bytes cuts it")
	lazyCheckpoint := fs.Bool("lazy-checkpoint", false, "also restart from every HW a lagging checkpoint could hold")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	list := fs.Bool("list", false, "list the variants with their default bounds and exit")
	help := fs.BoolP("help", "h", false, "show this help")
	fail := func(err error) int {
		fmt.Fprintf(stderr, "watermark explore: %v\n\nRun `watermark explore --help` for the flags, `watermark explore --list` for the variants.\n", err)
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		return fail(err)
	}
	if *help {
		fmt.Fprintln(stdout, "usage: watermark explore [--variant NAME] [flags]\n\n"+
			"Explores every state of the abstract replication model (spec/protocol) reachable within\n"+
			"the bounds, breadth first, and checks the invariants in each; a violation comes with a\n"+
			"shortest trace and the command that replays it. The bounds default to the variant's;\n"+
			"a flag given overrides one. Exit 0: every state explored, no violation; 1: a violation,\n"+
			"or the search hit --max-states (incomplete, not a pass); 2: usage error.\n\nflags:")
		fmt.Fprint(stdout, fs.FlagUsages())
		fmt.Fprintln(stdout)
		listVariants(stdout)
		return exitOK
	}
	if *list {
		listVariants(stdout)
		return exitOK
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	v0, err := variant.Lookup(*name)
	if err != nil {
		return fail(fmt.Errorf("--variant: %v", err))
	}
	named, ok := v0.Model()
	if !ok {
		return fail(fmt.Errorf("--variant %s has no counterpart in spec/protocol's model (%s): run it on the broker with `watermark check --variant %s` or `watermark search --variant %s`",
			v0.Name, v0.Summary, v0.Name, v0.Name))
	}

	// The variant's bounds and settings, overridden by the flags given.
	b, v := named.Bounds, named.Variant
	b.Invariants = slices.Clone(b.Invariants)
	for _, o := range []struct {
		flag string
		dst  *int
		val  int
		min  int
	}{
		{"replicas", &b.Replicas, *replicas, 1},
		{"records", &b.Records, *records, 0},
		{"crashes", &b.Crashes, *crashes, 0},
		{"power-losses", &b.PowerLosses, *powerLosses, 0},
		{"pauses", &b.Pauses, *pauses, 0},
		{"reelections", &b.Reelections, *reelections, 0},
		{"inflight", &b.Inflight, *inflight, 1},
		{"max-states", &b.MaxStates, *maxStates, 1},
		{"min-isr", &v.MinISR, *minISR, 1},
	} {
		if !fs.Changed(o.flag) {
			continue
		}
		if o.val < o.min {
			return fail(fmt.Errorf("--%s %d: want at least %d", o.flag, o.val, o.min))
		}
		*o.dst = o.val
	}
	if b.Replicas > protocol.MaxReplicas {
		return fail(fmt.Errorf("--replicas %d: the model holds 1..%d", b.Replicas, protocol.MaxReplicas))
	}
	if v.MinISR > b.Replicas {
		return fail(fmt.Errorf("--min-isr %d is more than --replicas %d: lower --min-isr or raise --replicas", v.MinISR, b.Replicas))
	}
	for _, name := range *invariants {
		if !slices.Contains(protocol.Invariants, name) {
			return fail(fmt.Errorf("--invariant: unknown invariant %q: want one of %s", name, strings.Join(protocol.Invariants, ", ")))
		}
	}
	if fs.Changed("invariant") {
		b.Invariants = slices.Clone(*invariants)
	}
	if fs.Changed("unclean") {
		v.Unclean = *unclean
	}
	if fs.Changed("no-symmetry") {
		b.Symmetry = !*noSymmetry
	}
	if fs.Changed("partial-fetch") {
		b.PartialFetch = *partialFetch
	}
	if fs.Changed("lazy-checkpoint") {
		b.LazyCheckpoint = *lazyCheckpoint
	}
	// A backstop for checks the library adds later than this command.
	if err := b.Validate(); err != nil {
		return fail(fmt.Errorf("bounds: %v", err))
	}

	replay := exploreCommand(named, v, b)
	if !*asJSON {
		fmt.Fprintf(stdout, "exploring variant %s (%s): %s\n", named.Name, safety(named.Safe), describeBounds(v, b))
	}
	res, err := protocol.Explore(protocol.Model{Variant: v}, b, exploreProgress(stderr))
	if err != nil {
		return fail(err)
	}
	code := exitOK
	if res.Violation != nil || !res.Complete {
		code = exitViolated
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(exploreJSON(named, v, b, res, replay)); err != nil {
			fmt.Fprintf(stderr, "watermark explore: %v\n", err)
			return exitViolated
		}
		return code
	}

	fmt.Fprintf(stdout, "states explored: %d\ntransitions: %d\ndepth: %d\ntime: %s\nrate: %.0f states/s\n",
		res.States, res.Transitions, res.Depth, res.Elapsed.Round(time.Millisecond), res.StatesPerSecond())
	switch {
	case res.Violation != nil:
		fmt.Fprintf(stdout, "\nVIOLATION: %s\n", res.Violation)
		fmt.Fprintf(stdout, "replay: %s\n", replay)
		switch {
		case named.Safe && b.PowerLosses > 0:
			fmt.Fprintln(stdout, "the safe recipe does not survive every power loss without fsync: the last ISR member can lose\n"+
				"acknowledged records and lead again (KIP-966 is Kafka's fix); see spec/protocol/README.md")
		case named.Safe:
			fmt.Fprintln(stdout, "a violation on the safe variant is a bug in the model or its invariants: please report it")
		}
	case !res.Complete:
		fmt.Fprintf(stdout, "INCOMPLETE: the state bound (--max-states %d) was hit before every state within the bounds was explored;\n"+
			"no violation so far, but that is not a pass. Raise --max-states or lower the bounds.\n", b.MaxStates)
	default:
		fmt.Fprintln(stdout, "no violation within bounds")
	}
	return code
}

func safety(safe bool) string {
	if safe {
		return "safe"
	}
	return "unsafe"
}

func listVariants(w io.Writer) {
	fmt.Fprintln(w, "variants (bounds are the defaults `watermark explore --variant NAME` uses):")
	for _, n := range protocol.Variants {
		fmt.Fprintf(w, "  %-17s %-7s %s\n", n.Name, safety(n.Safe), n.Summary)
		fmt.Fprintf(w, "  %-17s %-7s reference: %s\n", "", "", n.Reference)
		fmt.Fprintf(w, "  %-17s %-7s bounds: %s\n", "", "", describeBounds(n.Variant, n.Bounds))
	}
}

func describeBounds(v protocol.Variant, b protocol.Bounds) string {
	var s strings.Builder
	fmt.Fprintf(&s, "replicas %d, records %d, crashes %d, power losses %d, pauses %d, reelections %d, inflight %d, min ISR %d, truncation %s",
		b.Replicas, b.Records, b.Crashes, b.PowerLosses, b.Pauses, b.Reelections, b.Inflight, v.MinISR, v.Truncation)
	for _, f := range []struct {
		on   bool
		name string
	}{{v.Unclean, "unclean"}, {b.PartialFetch, "partial fetch"}, {b.LazyCheckpoint, "lazy checkpoint"}, {!b.Symmetry, "no symmetry"}} {
		if f.on {
			s.WriteString(", " + f.name)
		}
	}
	fmt.Fprintf(&s, ", max states %d", b.MaxStates)
	if len(b.Invariants) > 0 {
		fmt.Fprintf(&s, ", invariants %s", strings.Join(b.Invariants, ", "))
	}
	return s.String()
}

// exploreCommand is the command that repeats a run: every bound is spelled
// out, so it does not depend on the variant's defaults staying the same.
func exploreCommand(n protocol.Named, v protocol.Variant, b protocol.Bounds) string {
	args := []string{program(), "explore", "--variant", n.Name,
		"--replicas", strconv.Itoa(b.Replicas), "--records", strconv.Itoa(b.Records),
		"--crashes", strconv.Itoa(b.Crashes), "--power-losses", strconv.Itoa(b.PowerLosses),
		"--pauses", strconv.Itoa(b.Pauses), "--reelections", strconv.Itoa(b.Reelections),
		"--inflight", strconv.Itoa(b.Inflight), "--min-isr", strconv.Itoa(v.MinISR),
		"--max-states", strconv.Itoa(b.MaxStates)}
	// A switch is named when on, and when off against the variant's default.
	boolean := func(name string, val, def bool) {
		switch {
		case val:
			args = append(args, "--"+name)
		case def:
			args = append(args, "--"+name+"=false")
		}
	}
	boolean("unclean", v.Unclean, n.Variant.Unclean)
	boolean("no-symmetry", !b.Symmetry, !n.Bounds.Symmetry)
	boolean("partial-fetch", b.PartialFetch, n.Bounds.PartialFetch)
	boolean("lazy-checkpoint", b.LazyCheckpoint, n.Bounds.LazyCheckpoint)
	for _, inv := range b.Invariants {
		args = append(args, "--invariant", inv)
	}
	return strings.Join(args, " ")
}

// exploreProgress prints a line per BFS level on stderr, at most once a
// second, and only on a terminal or once the run has taken 2 s: a quick
// run, or one in a test, prints nothing.
func exploreProgress(stderr io.Writer) protocol.Progress {
	tty := false
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	var last time.Duration
	printed := false
	return func(states, depth int, elapsed time.Duration) {
		if !tty && elapsed < 2*time.Second {
			return
		}
		if printed && elapsed-last < time.Second {
			return
		}
		printed, last = true, elapsed
		fmt.Fprintf(stderr, "depth %d, %d states, %s elapsed\n", depth, states, elapsed.Round(time.Millisecond))
	}
}

// exploreResult is the --json output.
type exploreResult struct {
	Variant         string            `json:"variant"`
	Safe            bool              `json:"safe"`
	Bounds          exploreBounds     `json:"bounds"`
	States          int               `json:"states"`
	Transitions     int               `json:"transitions"`
	Depth           int               `json:"depth"`
	Complete        bool              `json:"complete"`
	ElapsedMS       int64             `json:"elapsed_ms"`
	StatesPerSecond float64           `json:"states_per_second"`
	Violation       *exploreViolation `json:"violation"`
	Replay          string            `json:"replay"`
}

// exploreBounds are the run's bounds and the variant settings a flag can
// change.
type exploreBounds struct {
	Replicas       int      `json:"replicas"`
	Records        int      `json:"records"`
	Crashes        int      `json:"crashes"`
	PowerLosses    int      `json:"power_losses"`
	Pauses         int      `json:"pauses"`
	Reelections    int      `json:"reelections"`
	Inflight       int      `json:"inflight"`
	MinISR         int      `json:"min_isr"`
	Unclean        bool     `json:"unclean"`
	PartialFetch   bool     `json:"partial_fetch"`
	LazyCheckpoint bool     `json:"lazy_checkpoint"`
	Symmetry       bool     `json:"symmetry"`
	MaxStates      int      `json:"max_states"`
	Invariants     []string `json:"invariants"`
}

type exploreViolation struct {
	Invariant string   `json:"invariant"`
	Detail    string   `json:"detail"`
	Initial   string   `json:"initial"`
	Steps     []string `json:"steps"` // each the action, a newline, and the state it led to
}

func exploreJSON(n protocol.Named, v protocol.Variant, b protocol.Bounds, res protocol.Result, replay string) exploreResult {
	out := exploreResult{
		Variant: n.Name,
		Safe:    n.Safe,
		Bounds: exploreBounds{
			Replicas: b.Replicas, Records: b.Records, Crashes: b.Crashes, PowerLosses: b.PowerLosses,
			Pauses: b.Pauses, Reelections: b.Reelections, Inflight: b.Inflight, MinISR: v.MinISR,
			Unclean: v.Unclean, PartialFetch: b.PartialFetch, LazyCheckpoint: b.LazyCheckpoint,
			Symmetry: b.Symmetry, MaxStates: b.MaxStates, Invariants: b.Invariants,
		},
		States:          res.States,
		Transitions:     res.Transitions,
		Depth:           res.Depth,
		Complete:        res.Complete,
		ElapsedMS:       res.Elapsed.Milliseconds(),
		StatesPerSecond: res.StatesPerSecond(),
		Replay:          replay,
	}
	if out.Bounds.Invariants == nil {
		out.Bounds.Invariants = []string{}
	}
	if ce := res.Violation; ce != nil {
		vi := &exploreViolation{Invariant: ce.Broken.Invariant, Detail: ce.Broken.Detail, Initial: ce.Init.String(), Steps: []string{}}
		for _, st := range ce.Steps {
			vi.Steps = append(vi.Steps, fmt.Sprintf("%s\n%s", st.Action, st.State))
		}
		out.Violation = vi
	}
	return out
}
