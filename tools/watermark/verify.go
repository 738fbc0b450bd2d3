package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/linearizability"
)

// runVerify re-judges a history written by watermark or by any harness that
// follows linearizability/FORMAT.md: the offset anomaly checker and
// porcupine against spec/'s partition log.
func runVerify(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("watermark verify", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	html := fs.String("html", "", "write porcupine's visualisation to this file")
	allow := fs.StringArray("allow", nil, "an anomaly to tolerate (repeatable), e.g. --allow unseen for acks=1")
	checkTimeout := fs.Duration("check-timeout", 30*time.Second, "porcupine's time limit; past it the verdict is unknown")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	help := fs.BoolP("help", "h", false, "show this help")
	usage := func(err error) int {
		fmt.Fprintf(stderr, "watermark verify: %v\n\nusage: watermark verify [flags] HISTORY.jsonl\n\nflags:\n%s", err, fs.FlagUsages())
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		return usage(err)
	}
	if *help {
		fmt.Fprintf(stdout, "usage: watermark verify [flags] HISTORY.jsonl\n\nRe-checks a saved history (linearizability/FORMAT.md).\n\nflags:\n%s", fs.FlagUsages())
		return exitOK
	}
	if fs.NArg() != 1 {
		return usage(fmt.Errorf("want exactly one history file, got %d", fs.NArg()))
	}
	for _, a := range *allow {
		if !slices.Contains(linearizability.AnomalyNames, a) {
			return usage(fmt.Errorf("--allow %q: not an anomaly name; valid: %v", a, linearizability.AnomalyNames))
		}
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "watermark verify: %v\n", err)
		return exitUsage
	}
	h, err := linearizability.ReadHistory(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "watermark verify: %s: %v\n", path, err)
		return exitUsage
	}
	if len(h) == 0 {
		// Nothing to judge is not a pass: a run that recorded nothing (a
		// harness that never connected, a file truncated to nothing) must
		// not read as one.
		fmt.Fprintf(stderr, "watermark verify: %s: no operations in it: an empty history proves nothing (linearizability/FORMAT.md has the format)\n", path)
		return exitUsage
	}

	var found, allowed []linearizability.Anomaly
	for _, a := range linearizability.CheckAnomalies(h) {
		if slices.Contains(*allow, a.Name) {
			allowed = append(allowed, a)
		} else {
			found = append(found, a)
		}
	}
	lin := linearizability.CheckLinearizability(h, *checkTimeout)
	if *html != "" {
		if err := linearizability.WriteVisualizationFile(*html, lin, nil); err != nil {
			fmt.Fprintf(stderr, "watermark verify: %v\n", err)
			return exitViolated
		}
	}
	verdict := "holds"
	switch {
	case len(found) > 0 || lin.Verdict == linearizability.VerdictIllegal:
		verdict = "violated"
	case lin.Verdict == linearizability.VerdictUnknown:
		verdict = "unknown"
	}
	if *asJSON {
		out := map[string]any{"verdict": verdict, "ops": len(h), "porcupine": lin.Verdict,
			"found": nonNilAnomalies(found), "allowed": nonNilAnomalies(allowed)}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "watermark verify: %v\n", err)
			return exitViolated
		}
	} else {
		fmt.Fprintf(stdout, "%s: %d operations\n", path, len(h))
		for _, a := range found {
			fmt.Fprintf(stdout, "  %s (ops %v)\n", a, a.Ops)
		}
		for _, a := range allowed {
			fmt.Fprintf(stdout, "  allowed: %s (ops %v)\n", a, a.Ops)
		}
		fmt.Fprintf(stdout, "porcupine: %s (%s)\n", lin.Verdict, lin.Elapsed.Round(time.Millisecond))
		if *html != "" {
			fmt.Fprintf(stdout, "visualisation: %s\n", *html)
		}
		fmt.Fprintf(stdout, "verdict: %s\n", verdict)
	}
	if verdict != "holds" {
		return exitViolated
	}
	return exitOK
}

func nonNilAnomalies(a []linearizability.Anomaly) []linearizability.Anomaly {
	if a == nil {
		return []linearizability.Anomaly{}
	}
	return a
}
