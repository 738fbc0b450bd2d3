package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// Outcomes of `watermark repro`, compared with a run file's expectation.
const (
	outReproduced    = "REPRODUCED"         // every expected anomaly was found
	outNotReproduced = "NOT REPRODUCED"     // an expected anomaly is missing
	outUnexpected    = "UNEXPECTED ANOMALY" // found one neither expected nor allowed
	outHolds         = "HOLDS"              // expect: holds, and it did
	outUnknown       = "UNKNOWN"            // a checker could not decide
)

// reproOutcome is one file's run, judged against its expectation.
type reproOutcome struct {
	Outcome string
	OK      bool     // the outcome matches the file's expectation
	Found   []string // every anomaly and invariant failure the run showed
	Missing []string // expected, not found
	Extra   []string // found, neither expected nor allowed
	Reasons []string // Judge's reasons, when the verdict says more
}

// compareRun judges r against f's expectation.
func compareRun(f *conformance.RunFile, r *conformance.RunResult) reproOutcome {
	var o reproOutcome
	all := map[string]bool{}
	for _, a := range append(slices.Clone(r.Found), r.Allowed...) {
		all[a.Name] = true
	}
	for _, v := range r.Invariants {
		all[v.Invariant] = true
	}
	for n := range all {
		o.Found = append(o.Found, n)
	}
	sort.Strings(o.Found)
	// What a case tolerates by its flags is not unexpected.
	tolerated := slices.Clone(f.Allowed)
	if f.LossAllowed {
		tolerated = append(tolerated, sim.Invariants...)
	}
	for _, n := range f.Expect.Found {
		if !all[n] {
			o.Missing = append(o.Missing, n)
		}
	}
	for _, n := range o.Found {
		if !slices.Contains(f.Expect.Found, n) && !slices.Contains(tolerated, n) {
			o.Extra = append(o.Extra, n)
		}
	}
	if f.Expect.Holds {
		// Invariant failures the file allows do not count against it.
		var reasons []string
		for _, reason := range r.Reasons {
			if !strings.HasPrefix(reason, "invariant ") {
				reasons = append(reasons, reason)
			}
		}
		switch {
		case len(o.Extra) > 0:
			o.Outcome, o.Reasons = outUnexpected, r.Reasons
		case len(reasons) == 0:
			o.Outcome, o.OK = outHolds, true
		case r.Verdict == conformance.Unknown:
			o.Outcome, o.Reasons = outUnknown, reasons
		default:
			o.Outcome, o.Reasons = outUnexpected, reasons
		}
		return o
	}
	switch {
	case len(o.Missing) > 0:
		o.Outcome = outNotReproduced
		if r.Verdict == conformance.Unknown {
			o.Reasons = r.Reasons
		}
	case len(o.Extra) > 0:
		o.Outcome = outUnexpected
	default:
		o.Outcome, o.OK = outReproduced, true
	}
	return o
}

func (o reproOutcome) detail(f *conformance.RunFile) string {
	list := func(ns []string) string {
		if len(ns) == 0 {
			return "-"
		}
		return strings.Join(ns, ", ")
	}
	var parts []string
	if f.Expect.Holds {
		parts = append(parts, "expected: holds")
	} else {
		parts = append(parts, "expected: "+list(f.Expect.Found))
	}
	parts = append(parts, "found: "+list(o.Found))
	if len(o.Missing) > 0 {
		parts = append(parts, "missing: "+list(o.Missing))
	}
	if len(o.Extra) > 0 {
		parts = append(parts, "unexpected: "+list(o.Extra))
	}
	return strings.Join(parts, "; ")
}

func runRepro(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark repro", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	truncation := fs.String("truncation", "", "override the files' truncation variant: hw, epoch, epoch-kip101 or epoch-no-bump-truncation")
	producerState := fs.String("producer-state", "", "override how brokers keep idempotent-producer state: replicated or leader-only")
	seed := fs.Uint64("seed", 0, "run with this seed instead of the file's")
	checkTimeout := fs.Duration("check-timeout", 30*time.Second, "porcupine's time limit per run; past it the verdict is unknown")
	help := fs.BoolP("help", "h", false, "show this help")
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "watermark repro: %v\n\nusage: watermark repro [flags] FILE...\n\nflags:\n%s", err, fs.FlagUsages())
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		return usageErr(err)
	}
	if *help {
		fmt.Fprintln(stdout, "usage: watermark repro [flags] FILE...\n\nRuns each run file (failpoints/RUNFILE.md) on the simulated reference cluster\n"+
			"and compares the outcome with its `expect`: REPRODUCED, NOT REPRODUCED,\nUNEXPECTED ANOMALY, or HOLDS for `expect: holds`.\n\nflags:")
		fmt.Fprint(stdout, fs.FlagUsages())
		return exitOK
	}
	if fs.NArg() == 0 {
		return usageErr(fmt.Errorf("no run file given"))
	}
	var trunc *partition.Truncation
	if *truncation != "" {
		t, err := partition.ParseTruncation(*truncation)
		if err != nil {
			return usageErr(fmt.Errorf("--truncation: %v", err))
		}
		trunc = &t
	}
	var ps *partition.ProducerState
	if *producerState != "" {
		p, err := partition.ParseProducerState(*producerState)
		if err != nil {
			return usageErr(fmt.Errorf("--producer-state: %v", err))
		}
		ps = &p
	}
	if *checkTimeout < 0 {
		return usageErr(fmt.Errorf("--check-timeout %s: want >= 0 (0 = no limit)", *checkTimeout))
	}

	var files []*conformance.RunFile
	var bad bool
	for _, path := range fs.Args() {
		f, err := conformance.LoadRunFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "watermark repro: %v\n", err)
			bad = true
			continue
		}
		files = append(files, f)
	}
	if bad {
		return exitUsage
	}
	var need []string
	for _, f := range files {
		if len(f.Failpoints) > 0 {
			need = append(need, f.Path)
		}
	}
	if len(need) > 0 && !broker.FailpointsCompiled() {
		fmt.Fprintf(stderr, "watermark repro: run files %s drive failpoints, but this binary was built without them.\n"+
			"Build it with `make build` (bin/watermark), or leave those files out.\n", strings.Join(need, ", "))
		return exitUsage
	}

	matched := 0
	for _, f := range files {
		cfg := f.SimConfig()
		if trunc != nil {
			cfg.Broker.Truncation = *trunc
		}
		if ps != nil {
			cfg.Broker.ProducerState = *ps
		}
		if fs.Changed("seed") {
			cfg.Seed = *seed
		}
		res, err := sim.Run(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "watermark repro: %s: %v\n", f.Path, err)
			return exitUsage
		}
		r := conformance.Judge(f.Case(), res, *checkTimeout)
		o := compareRun(f, r)
		if o.OK {
			matched++
		}
		variant := fmt.Sprintf("seed %d, truncation %s", cfg.Seed, cfg.Broker.Truncation)
		if cfg.Broker.ProducerState != partition.ProducerStateReplicated {
			variant += ", producer-state " + cfg.Broker.ProducerState.String()
		}
		fmt.Fprintf(stdout, "%-18s  %s (%s): %s\n", o.Outcome, f.Path, variant, o.detail(f))
		for _, reason := range o.Reasons {
			fmt.Fprintln(stdout, indent(reason, "    - "))
		}
	}
	if matched == len(files) {
		fmt.Fprintf(stdout, "\n%s: every outcome matches its expectation\n", plural(len(files), "run file"))
		return exitOK
	}
	fmt.Fprintf(stdout, "\n%s: %d %s not match %s expectation\n", plural(len(files), "run file"),
		len(files)-matched, map[bool]string{true: "does", false: "do"}[len(files)-matched == 1],
		map[bool]string{true: "its", false: "their"}[len(files)-matched == 1])
	return exitViolated
}
