// Command mutate runs the team's planted-bug suite: every bug of bugs.yaml
// is a single-point change of impl/ (or of the kit's client,
// conformance/kitclient) that breaks one protocol rule. Each one
// is applied to a scratch copy of the working tree, built into the
// watermark command as `make build` builds it (failpoints compiled in) and
// run through `watermark check`; a bug is CAUGHT when some case is violated.
// With --unit it runs the unit tests of the changed package instead, to
// show that a bug is a real behaviour change.
//
//	go run ./tools/mutate [--bug ID]... [--seeds N] [--jobs N] [--keep] [--check-args "..."] [--unit] [--list]
//
// Exit status: 0 when every bug was measured (a miss is a measurement, not
// a failure); 1 when one could not be (ERROR: the anchor does not apply,
// the build fails, check does not run), the unmutated tree does not hold,
// or with --unit a bug's unit field is wrong; 2 for bad usage.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	ids        []string
	seeds      int
	jobs       int
	keep       bool
	checkArgs  string
	list       bool
	unit       bool
	noBaseline bool
	random     int
}

// Statuses of a bug.
const (
	caught = "CAUGHT" // a case was violated
	missed = "MISSED" // every case held or was unknown
	equiv  = "EQUIV"  // missed, and argued equivalent: not in the score
	failed = "ERROR"  // not measured
	// With --unit: what the package's unit tests did.
	unitFail = "FAILS"
	unitPass = "PASSES"
)

// outcome is what happened to one bug.
type outcome struct {
	bug      Bug
	status   string
	cases    []string // violated, for a catch; with --unit, the first failing test
	unknown  []string
	err      error
	elapsed  time.Duration
	dir      string // the scratch directory, with --keep
	mismatch bool   // --unit: the tests disagree with bug.Unit
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := pflag.NewFlagSet("mutate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringArrayVar(&o.ids, "bug", nil, "run only this bug (repeatable; --list shows the ids)")
	fs.IntVar(&o.seeds, "seeds", 3, "seeds per case, passed to watermark check --seeds")
	fs.IntVar(&o.jobs, "jobs", 1, "mutants built and checked in parallel")
	fs.BoolVar(&o.keep, "keep", false, "keep each mutant's scratch directory (its tree, binary and report)")
	fs.StringVar(&o.checkArgs, "check-args", "", `extra arguments for watermark check, split at spaces (e.g. "--case no-faults")`)
	fs.BoolVar(&o.list, "list", false, "print the bugs and exit")
	fs.BoolVar(&o.unit, "unit", false, "run the unit tests of each bug's package instead of check, and compare with its unit field")
	fs.BoolVar(&o.noBaseline, "no-baseline", false, "do not check the unmutated tree first")
	fs.IntVar(&o.random, "random", 200, "when the cases miss a bug, also run this many of `watermark check --random`'s schedules (0: cases only); a bug with its own check arguments gets none")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || o.seeds < 1 || o.jobs < 1 {
		fmt.Fprintln(stderr, "usage: mutate [flags]; --seeds and --jobs must be >= 1, and there are no arguments")
		fs.PrintDefaults()
		return 2
	}
	all, err := parseBugs(bugsYAML)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	bugs, err := selectBugs(all, o.ids)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if o.list {
		for _, b := range bugs {
			fmt.Fprintf(stdout, "%-38s %-36s unit %-6s catcher %s\n", b.ID, b.File, b.Unit, b.Catcher)
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := newRunner(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return r.runAll(ctx, bugs)
}

// runner measures bugs against one snapshot of the tree.
type runner struct {
	opts  options
	tc    toolchain
	tree  *tree
	extra []string
	out   io.Writer
	mu    sync.Mutex // serializes writes to out
}

func newRunner(ctx context.Context, o options, out io.Writer) (*runner, error) {
	top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return nil, fmt.Errorf("git rev-parse --show-toplevel: %w (run from the repository)", err)
	}
	tc, err := findToolchain(ctx)
	if err != nil {
		return nil, err
	}
	t, err := readTree(ctx, strings.TrimSpace(string(top)))
	if err != nil {
		return nil, err
	}
	return &runner{opts: o, tc: tc, tree: t, extra: strings.Fields(o.checkArgs), out: out}, nil
}

func (r *runner) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, format, args...)
}

func (r *runner) runAll(ctx context.Context, bugs []Bug) int {
	start := time.Now()
	if !r.opts.unit && !r.opts.noBaseline {
		base := r.one(ctx, Bug{ID: "baseline"})
		switch {
		case base.err != nil:
			r.printf("baseline (the tree unmutated): ERROR %v\n", base.err)
			return 1
		case len(base.cases) > 0:
			r.printf("baseline (the tree unmutated) does not hold: %s violated; every mutant would look caught\n", strings.Join(base.cases, ", "))
			return 1
		}
		r.printf("baseline (the tree unmutated): every case holds (%s)\n", secs(base.elapsed))
	}
	results := make([]outcome, len(bugs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(r.opts.jobs, len(bugs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = r.one(ctx, bugs[i])
				r.report(results[i])
			}
		}()
	}
	for i := range bugs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var done []outcome
	for _, o := range results {
		if o.status != "" {
			done = append(done, o)
		}
	}
	code := r.summary(done, len(bugs), time.Since(start))
	if ctx.Err() != nil {
		r.printf("interrupted: %d of %d bugs measured\n", len(done), len(bugs))
		return 130
	}
	return code
}

// one applies bug b to a scratch copy of the tree and measures it.
func (r *runner) one(ctx context.Context, b Bug) (o outcome) {
	start := time.Now()
	o.bug = b
	defer func() {
		o.elapsed = time.Since(start)
		if o.err != nil {
			o.status = failed
		}
	}()
	var mutated []byte
	if b.File != "" {
		src, ok := r.tree.source(b.File)
		if !ok {
			o.err = fmt.Errorf("%s is not in the tree", b.File)
			return o
		}
		var err error
		if mutated, err = apply(src, b.Find, b.Replace); err != nil {
			o.err = fmt.Errorf("%s: %w", b.File, err)
			return o
		}
	}
	dir, err := os.MkdirTemp("", "mutate-"+b.ID+"-")
	if err != nil {
		o.err = err
		return o
	}
	if r.opts.keep {
		o.dir = dir
	} else {
		defer os.RemoveAll(dir)
	}
	if err := r.tree.write(dir, b.File, mutated); err != nil {
		o.err = err
		return o
	}
	if r.opts.unit {
		fails, first, err := r.tc.unitTests(ctx, dir, b.File)
		o.err = err
		o.status, o.mismatch = unitPass, b.Unit != unitPasses
		if fails {
			o.status, o.cases, o.mismatch = unitFail, []string{first}, b.Unit != unitFails
		}
		return o
	}
	bin, err := r.tc.build(ctx, dir)
	if err != nil {
		o.err = err
		return o
	}
	res, err := r.tc.check(ctx, dir, bin, r.opts.seeds, append(slices.Clone(r.extra), strings.Fields(b.Check)...))
	if err != nil {
		o.err = err
		return o
	}
	o.cases, o.unknown = res.violated, res.unknown
	if len(o.cases) == 0 && r.opts.random > 0 && b.Check == "" {
		// The standing random check is part of watermark check: what
		// the cases miss, a random schedule may reach.
		rnd, err := r.tc.checkRandom(ctx, dir, bin, r.opts.random)
		if err != nil {
			o.err = err
			return o
		}
		if len(rnd.violated) > 0 {
			o.cases = []string{fmt.Sprintf("random (of %d)", r.opts.random)}
		}
	}
	o.status = missed
	switch {
	case len(o.cases) > 0:
		o.status = caught
	case b.Equivalent != "":
		o.status = equiv
	}
	return o
}

// report prints one bug's line as it finishes.
func (r *runner) report(o outcome) {
	detail := ""
	switch o.status {
	case caught:
		detail = "by " + strings.Join(o.cases, ", ")
		if o.bug.Equivalent != "" {
			detail += " (bugs.yaml argues it equivalent: the argument is wrong)"
		}
	case equiv:
		detail = "argued equivalent, not counted"
	case missed:
		if len(o.unknown) > 0 {
			detail = "unknown: " + strings.Join(o.unknown, ", ")
		}
	case unitFail:
		detail = o.cases[0]
	case failed:
		detail = o.err.Error()
	}
	if o.mismatch {
		detail = strings.TrimSpace(fmt.Sprintf("MISMATCH: bugs.yaml says unit: %s; %s", o.bug.Unit, detail))
	}
	if o.dir != "" {
		detail = strings.TrimSpace(detail + "  [kept " + o.dir + "]")
	}
	r.printf("%-38s %-6s %6s  %s\n", o.bug.ID, o.status, secs(o.elapsed), detail)
}

// summary prints the score and the misses, and returns the exit status.
func (r *runner) summary(done []outcome, planned int, wall time.Duration) int {
	var misses, errs, mismatches, equivs []outcome
	n := 0
	for _, o := range done {
		switch {
		case o.status == failed:
			errs = append(errs, o)
		case o.mismatch:
			mismatches = append(mismatches, o)
		}
		switch o.status {
		case caught, unitFail:
			n++
		case missed:
			misses = append(misses, o)
		case equiv:
			equivs = append(equivs, o)
		}
	}
	r.printf("\n")
	if r.opts.unit {
		r.printf("unit tests fail on %d of %d planted bugs\n", n, len(done))
		for _, o := range mismatches {
			r.printf("  %s: bugs.yaml says unit: %s, the tests say %s\n", o.bug.ID, o.bug.Unit, strings.ToLower(o.status))
		}
	} else {
		r.printf("planted bugs caught: %d of %d\n", n, len(done)-len(equivs))
		if len(equivs) > 0 {
			r.printf("argued equivalent and missed, not counted: %s\n", ids(equivs))
		}
		if len(misses) > 0 {
			r.printf("\nmissed:\n")
		}
		for _, o := range misses {
			r.printf("  %s (%s)\n", o.bug.ID, o.bug.File)
			r.printf("%s", wrap("why: "+o.bug.Why, "      ", 96))
			r.printf("      catcher: %s\n", o.bug.Catcher)
		}
	}
	if len(errs) > 0 {
		r.printf("\nnot measured (ERROR, not counted as caught): %s\n", ids(errs))
	}
	if len(done) < planned {
		r.printf("not run: %d of %d\n", planned-len(done), planned)
	}
	r.printf("wall time: %s\n", wall.Round(time.Second))
	if len(errs) > 0 || len(mismatches) > 0 {
		return 1
	}
	return 0
}

func ids(os []outcome) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = o.bug.ID
	}
	return strings.Join(s, ", ")
}

func secs(d time.Duration) string { return fmt.Sprintf("%.0fs", d.Seconds()) }

// wrap folds text into lines of at most width columns, each indented.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
	return b.String()
}
