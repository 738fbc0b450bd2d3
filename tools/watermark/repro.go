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
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/impl/broker"
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
func compareRun(f *run.File, r *judge.RunResult) reproOutcome {
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
		tolerated = append(tolerated, run.Invariants...)
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
		case r.Verdict == judge.Unknown:
			o.Outcome, o.Reasons = outUnknown, reasons
		default:
			o.Outcome, o.Reasons = outUnexpected, reasons
		}
		return o
	}
	switch {
	case len(o.Missing) > 0:
		o.Outcome = outNotReproduced
		if r.Verdict == judge.Unknown {
			o.Reasons = r.Reasons
		}
	case len(o.Extra) > 0:
		o.Outcome = outUnexpected
	default:
		o.Outcome, o.OK = outReproduced, true
	}
	return o
}

func (o reproOutcome) detail(f *run.File) string {
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
	variantName := fs.String("variant", "", "run the files on this variant: "+variant.Names())
	sets := fs.StringArray("set", nil, "override a field of the files' runs, KEY=VALUE with run-file keys (repeatable), e.g. --set broker.truncation=epoch")
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
	var v variant.Variant
	if *variantName != "" {
		var err error
		if v, err = variant.Runnable(*variantName); err != nil {
			return usageErr(fmt.Errorf("--variant: %v", err))
		}
	}
	if *checkTimeout < 0 {
		return usageErr(fmt.Errorf("--check-timeout %s: want >= 0 (0 = no limit)", *checkTimeout))
	}

	var files []*run.File
	var bad bool
	for _, path := range fs.Args() {
		f, err := run.LoadFile(path)
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

	opts := conformance.Options{Variant: v, Set: *sets}
	matched := 0
	for _, f := range files {
		c := cases.FromFile(f)
		s := f.Seed
		if fs.Changed("seed") {
			s = *seed
		}
		cfg, err := opts.Spec(c, s)
		if err != nil {
			return usageErr(err)
		}
		cfg.ContinueAfterViolation = f.ContinueAfterViolation
		res, err := sim.Run(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "watermark repro: %s: %v\n", f.Path, err)
			return exitUsage
		}
		r := judge.Judge(c, res, *checkTimeout)
		o := compareRun(f, r)
		if o.OK {
			matched++
		}
		how := fmt.Sprintf("seed %d", cfg.Seed)
		if v.Name != "" {
			how += ", variant " + v.Name
		}
		for _, kv := range *sets {
			how += ", " + kv
		}
		fmt.Fprintf(stdout, "%-18s  %s (%s): %s\n", o.Outcome, f.Path, how, o.detail(f))
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
