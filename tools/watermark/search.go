package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/report"
	"github.com/watermarkhq/watermark/conformance/search"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/impl/broker"
)

// runSearch is `watermark search`: random search for a violation of the
// strong guarantees on an unsafe variant. Finding one is the expected
// outcome on an unsafe variant, and exits 1 like any violation; finding
// none within --tries exits 0.
func runSearch(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark search", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("variant", "", "the variant to hunt a bug on (required): "+variant.Names())
	tries := fs.Int("tries", 100, "how many random schedules to try at most")
	seed := fs.Uint64("seed", 1, "the first schedule's seed; the next tries take the seeds after it")
	reportDir := fs.String("report-dir", "watermark-report", "where the violating run leaves its history, run.yaml, timeline and HTML")
	checkTimeout := fs.Duration("check-timeout", 30*time.Second, "porcupine's time limit per run")
	noFailpoints := fs.Bool("no-failpoints", false, "draw faults only, no failpoint activations (for a binary built without failpoints)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	help := fs.BoolP("help", "h", false, "show this help")
	fail := func(err error) int {
		fmt.Fprintf(stderr, "watermark search: %v\n\nflags:\n%s", err, fs.FlagUsages())
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		return fail(err)
	}
	if *help {
		fmt.Fprintln(stdout, "usage: watermark search --variant NAME [flags]\n\n"+
			"Draws random fault schedules and failpoint activations from the seed and runs them on\n"+
			"the variant until one breaks the strong guarantees. Exit 1: found one (expected on an\n"+
			"unsafe variant); 0: none within --tries; 2: usage error.\n\nflags:")
		fmt.Fprint(stdout, fs.FlagUsages())
		fmt.Fprintln(stdout, "\nvariants:")
		t := newTable(stdout)
		for _, v := range variant.All {
			if v.Apply != nil {
				t.row("  "+v.Name, v.Summary)
			}
		}
		t.flush()
		return exitOK
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *name == "" {
		return fail(fmt.Errorf("--variant is required: want one of %s", variant.Names()))
	}
	v, err := variant.Runnable(*name)
	if err != nil {
		return fail(fmt.Errorf("--variant: %v", err))
	}
	if *tries < 1 {
		return fail(fmt.Errorf("--tries %d: want at least 1", *tries))
	}
	if *checkTimeout < 0 {
		return fail(fmt.Errorf("--check-timeout %s: want >= 0 (0 = no limit)", *checkTimeout))
	}
	if !*noFailpoints && !broker.FailpointsCompiled() {
		fmt.Fprintf(stderr, "watermark search: random schedules activate failpoints, but this binary was built without them.\n"+
			"Build it with `make build` (bin/watermark), or search with faults only: --no-failpoints.\n")
		return exitUsage
	}

	start := time.Now()
	last := time.Time{}
	progress := func(try int, r *judge.RunResult) {
		if *quiet || (try != *tries && r.Verdict != judge.Violated && time.Since(last) < 2*time.Second) {
			return
		}
		last = time.Now()
		fmt.Fprintf(stderr, "[%d/%d] %s seed %d: %s (%s)\n", try, *tries, r.Case, r.Seed, r.Verdict,
			time.Since(start).Round(time.Millisecond))
	}
	found, n, err := search.Search(v, search.Options{
		FirstSeed:    *seed,
		Tries:        *tries,
		CheckTimeout: *checkTimeout,
		Schedule:     search.ScheduleOptions{NoFailpoints: *noFailpoints},
		Progress:     progress,
	})
	elapsed := time.Since(start).Round(time.Millisecond)
	if err != nil {
		fmt.Fprintf(stderr, "watermark search: %v\n", err)
		return exitViolated
	}
	if found == nil {
		fmt.Fprintf(stdout, "variant %s: nothing found in %s (seeds %d..%d) in %s\n",
			v.Name, plural(n, "schedule"), *seed, *seed+uint64(n)-1, elapsed)
		return exitOK
	}
	fmt.Fprintf(stdout, "variant %s: FOUND a violation after %s in %s (seed %d)\n",
		v.Name, plural(n, "schedule"), elapsed, found.Seed)
	for _, reason := range found.Reasons {
		fmt.Fprintln(stdout, indent(reason, "  - "))
	}
	found.Replay = program() + " repro " + filepath.Join(report.RunDir(*reportDir, found), "run.yaml")
	dir, err := report.WriteRun(*reportDir, found, search.Case(v))
	if err != nil {
		fmt.Fprintf(stderr, "watermark search: %v\n", err)
		return exitViolated
	}
	fmt.Fprintf(stdout, "  report: %s\n  replay: %s\n", dir, found.Replay)
	if v.Sound {
		fmt.Fprintln(stdout, "  a violation on the safe settings is a bug in the reference or the generator: please report it")
	} else {
		fmt.Fprintln(stdout, "  (a find is the expected outcome on an unsafe variant: exit status 1)")
	}
	return exitViolated
}
