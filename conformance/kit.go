// Package conformance is the conformance kit: it runs the cases
// (conformance/cases) against a Kafka-compatible cluster, records what the
// clients saw, and judges it (conformance/judge). Its surface is small, as
// testing/fstest's:
//
//   - Run(t, target) checks a target from a Go test, a subtest per case and
//     seed;
//   - Check runs a whole check for a command, with progress, and returns a
//     Report;
//   - Target is what the cases run against: KafkaTarget (any running
//     Kafka-compatible cluster), a third party's own, or the reference's,
//     in conformance/targets (Simulator, the deterministic simulated
//     reference; ClusterTarget, real `watermark serve` processes), which
//     this package does not import, so a third party's build does not
//     compile them. Options.Target is required;
//     Capabilities and the Crasher, Pauser, Isolator and TopicCreator
//     interfaces say which faults a target can carry out;
//   - Report, CaseResult, RunResult and Verdict are what a check found.
//
// The harness behind it is organised by concern: conformance/run (the one
// description of a run, and run files), conformance/traffic (the
// clients), conformance/nemesis (random faults), conformance/sim and
// conformance/live (the runners), conformance/cases, conformance/judge,
// conformance/report, conformance/search and conformance/variant.
package conformance

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/report"
)

// The report types, as the kit hands them out.
type (
	// Verdict is how a run, a case or a check came out.
	Verdict = judge.Verdict
	// RunResult is one seed of one case, judged.
	RunResult = judge.RunResult
	// CaseResult sums up every seed of a case.
	CaseResult = judge.CaseResult
	// Report is the outcome of a check.
	Report = judge.Report
	// Case is a conformance case.
	Case = cases.Case
)

// The verdicts. Unknown is never a pass: a checker ran out of time, or a
// run on real processes did not get to what its case is about. Skipped:
// the target cannot run the case (the reason says why).
const (
	Holds    = judge.Holds
	Violated = judge.Violated
	Unknown  = judge.Unknown
	Skipped  = judge.Skipped
	Error    = judge.Error
)

// Run checks a target from its own go test, as testing/fstest.TestFS does
// for file systems: every case with opts' seeds (1 by default), as
// subtests named case/seed-N, so `go test -run 'TestX/acks-all'` picks
// cases. A run that does not hold fails its subtest with its reasons and
// the command that replays it; a case the target cannot run is skipped
// with the reason. At most one RunOptions is used.
func Run(t *testing.T, target Target, options ...RunOptions) {
	t.Helper()
	var opts RunOptions
	if len(options) > 0 {
		opts = options[0]
	}
	list := opts.Cases
	if list == nil {
		list = cases.Cases
	}
	seeds := opts.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{1}
	}
	o := Options{Target: target, Context: opts.Context, CheckTimeout: opts.CheckTimeout}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = time.Minute
	}
	for i := range list {
		c := &list[i]
		t.Run(c.Name, func(t *testing.T) {
			for _, seed := range seeds {
				t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
					r, err := RunOne(c, seed, o)
					if err != nil {
						t.Fatalf("%v", err)
						return
					}
					switch r.Verdict {
					case Skipped:
						t.Skipf("%s", strings.Join(r.Reasons, "; "))
					case Holds:
					default:
						if opts.ReportDir != "" {
							if dir, err := report.WriteRun(opts.ReportDir, r, c); err == nil {
								t.Logf("report: %s", dir)
							}
						}
						t.Errorf("%s seed %d %s on %s:\n  %s\nreplay: %s", c.Name, seed, r.Verdict, target.Name(),
							strings.Join(r.Reasons, "\n  "), goTestReplay(t.Name()))
					}
				})
			}
		})
	}
}

// RunOptions shape Run.
type RunOptions struct {
	Cases        []Case   // default: every case
	Seeds        []uint64 // default: 1
	CheckTimeout time.Duration
	Context      context.Context
	// ReportDir, when set, keeps every run that does not hold there.
	ReportDir string
}

// goTestReplay is the go test command that runs test name again alone.
func goTestReplay(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return "go test -count=1 -run " + shellQuote(strings.Join(parts, "/"))
}

// shellQuote quotes s for sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+-@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
