// Package conformance runs named cases against a Kafka-compatible cluster,
// records what the clients saw, and judges it: protocol invariants (on the
// simulated reference), the offset-based anomaly checker, and porcupine
// against spec/'s model of the partition log.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/linearizability"
)

// Verdict is how a run or a case came out.
type Verdict string

// Verdicts. Unknown means a checker ran out of time: never a silent pass.
const (
	Holds    Verdict = "holds"
	Violated Verdict = "violated"
	Unknown  Verdict = "unknown"
	// Skipped: the target cannot run the case (the reason says why). It
	// never counts as a pass: a case is skipped only if all its runs are.
	Skipped Verdict = "skipped"
)

// worse returns the worse of two verdicts.
func worse(a, b Verdict) Verdict {
	rank := map[Verdict]int{Skipped: -1, Holds: 0, Unknown: 1, Violated: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// RunResult is one seed of one case, judged.
type RunResult struct {
	Case    string
	Seed    uint64
	Verdict Verdict
	// Reasons say why the run did not hold, one line each.
	Reasons []string
	// Found are the anomalies the case does not allow; Allowed the ones it
	// does; Invariants the protocol invariants that failed.
	Found           []linearizability.Anomaly
	Allowed         []linearizability.Anomaly
	Invariants      []*sim.Violation
	Linearizability linearizability.LinearizabilityResult
	Ops             int
	Sim             *sim.Result
	Elapsed         time.Duration
	// Target names what the run ran on (Target.Name).
	Target string
}

// ErrValidateNeedsSimulator is returned for trace validation on a target
// other than the simulator: only it exposes every replication step.
var ErrValidateNeedsSimulator = errors.New("trace validation needs the simulator (--target sim)")

// Judge checks one simulated run against the case's guarantees.
func Judge(c *Case, res *sim.Result, checkTimeout time.Duration) *RunResult {
	r := &RunResult{Case: c.Name, Seed: res.Config.Seed, Verdict: Holds, Ops: len(res.History), Sim: res}
	fail := func(v Verdict, format string, args ...any) {
		r.Verdict = worse(r.Verdict, v)
		r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...))
	}
	for _, a := range linearizability.CheckAnomalies(res.History) {
		if slices.Contains(c.Allowed, a.Name) {
			r.Allowed = append(r.Allowed, a)
		} else {
			r.Found = append(r.Found, a)
		}
	}
	if len(r.Found) > 0 {
		fail(Violated, "%d anomalies: %s", len(r.Found), summarize(r.Found))
	}
	r.Invariants = res.Violations
	for _, v := range r.Invariants {
		if !c.LossAllowed || slices.Contains(c.MustHold, v.Invariant) {
			fail(Violated, "invariant %s", v.Error())
		}
	}
	r.Linearizability = linearizability.CheckLinearizability(res.History, checkTimeout)
	switch r.Linearizability.Verdict {
	case linearizability.VerdictIllegal:
		switch {
		case c.LossAllowed:
		case c.DuplicatesAllowed && hasAnomaly(r.Allowed, linearizability.AnomalyDuplicate):
			// Explained by the duplicates at-least-once allows.
		default:
			fail(Violated, "porcupine: the history is not linearizable against spec/'s partition log")
		}
	case linearizability.VerdictUnknown:
		fail(Unknown, "porcupine ran out of time (%s); rerun with a longer --check-timeout", checkTimeout)
	}
	if !res.Config.NoFinalRead && !res.Stats.FinalReadDone {
		// Without the final read, acknowledged writes that vanished go
		// unnoticed ("unseen" is judged only where it finished).
		fail(Unknown, "the final read did not finish: unseen writes could not be judged; rerun with a longer settle time")
	}
	if p := res.Protocol; p != nil && p.Failure != "" {
		first, _, _ := strings.Cut(p.Failure, "\n")
		fail(Violated, "trace validation: %s", first)
	}
	if c.Require != nil {
		if err := c.Require(res); err != nil {
			if res.Live {
				// Real time decides what a run on real processes gets
				// to exercise; missing it is no pass, and no violation.
				fail(Unknown, "the run did not exercise what the case is about (%v); rerun it, or with a longer --duration", err)
			} else {
				fail(Violated, "case expectation: %v", err)
			}
		}
	}
	return r
}

// summarize counts anomalies by name: "lost-write x2, unseen x1".
func summarize(as []linearizability.Anomaly) string {
	counts := map[string]int{}
	for _, a := range as {
		counts[a.Name]++
	}
	return formatCounts(counts)
}

func formatCounts(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for _, n := range names {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s x%d", n, counts[n])
	}
	return s
}

// RunOne runs case c with one seed on opts.Target (the simulated
// reference when nil).
func RunOne(c *Case, seed uint64, opts Options, checkTimeout time.Duration) (*RunResult, error) {
	start := time.Now()
	target := opts.target()
	if opts.ValidateProtocol && target.Name() != Simulator.Name() {
		return nil, fmt.Errorf("case %s on %s: %w", c.Name, target.Name(), ErrValidateNeedsSimulator)
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	cfg := c.config(seed, opts)
	var res *sim.Result
	var err error
	if why := missing(cfg, target.Capabilities()); why != "" {
		err = &SkipError{Reason: why}
	} else {
		res, err = target.Run(ctx, cfg)
	}
	var skip *SkipError
	if errors.As(err, &skip) {
		return &RunResult{Case: c.Name, Seed: seed, Verdict: Skipped, Reasons: []string{skip.Reason}, Elapsed: time.Since(start), Target: target.Name()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("case %s seed %d on %s: %w", c.Name, seed, target.Name(), err)
	}
	r := Judge(c, res, checkTimeout)
	r.Elapsed = time.Since(start)
	r.Target = target.Name()
	if dir := keepDir(res); dir != "" && r.Verdict == Holds {
		_ = os.RemoveAll(dir)
	}
	return r, nil
}

// CaseResult sums up every seed of a case.
type CaseResult struct {
	Name    string
	Summary string
	Seeds   int
	Ops     int
	Verdict Verdict
	// Found counts what broke the case's guarantees, by anomaly or
	// invariant name; Allowed counts anomalies the case tolerates.
	Found   map[string]int
	Allowed map[string]int
	// Failed holds the runs that did not hold, in seed order.
	Failed []*RunResult
	// Skipped says why the target could not run the case, if it could not.
	Skipped string
	// StepsChecked and StepsSkipped count the replication steps trace
	// validation checked and left unchecked, over every run (both 0
	// without Options.ValidateProtocol).
	StepsChecked int
	StepsSkipped int
}

// Report is the outcome of a check.
type Report struct {
	Verdict Verdict
	Cases   []*CaseResult
	Runs    int
	Elapsed time.Duration
}

// Steps sums trace validation's counts over every case.
func (rep *Report) Steps() (checked, skipped int) {
	for _, cr := range rep.Cases {
		checked += cr.StepsChecked
		skipped += cr.StepsSkipped
	}
	return checked, skipped
}

// Check runs every case with every seed, workers at a time, and calls
// progress (if not nil) after each run from one goroutine at a time.
func Check(cases []Case, seeds []uint64, opts Options, checkTimeout time.Duration, workers int,
	progress func(done, total int, r *RunResult)) (*Report, error) {
	start := time.Now()
	type job struct {
		c    int
		seed uint64
	}
	jobs := make(chan job)
	type outcome struct {
		c   int
		r   *RunResult
		err error
	}
	results := make(chan outcome)
	var wg sync.WaitGroup
	if !opts.target().Parallel() {
		workers = 1
	}
	for w := 0; w < max(workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r, err := RunOne(&cases[j.c], j.seed, opts, checkTimeout)
				results <- outcome{c: j.c, r: r, err: err}
			}
		}()
	}
	go func() {
		for i := range cases {
			for _, s := range seeds {
				jobs <- job{c: i, seed: s}
			}
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	rep := &Report{Verdict: Skipped}
	for _, c := range cases {
		rep.Cases = append(rep.Cases, &CaseResult{Name: c.Name, Summary: c.Summary, Verdict: Skipped,
			Found: map[string]int{}, Allowed: map[string]int{}})
	}
	total := len(cases) * len(seeds)
	var firstErr error
	for o := range results {
		if o.err != nil {
			if firstErr == nil {
				firstErr = o.err
			}
			continue
		}
		rep.Runs++
		cr := rep.Cases[o.c]
		add(cr, o.r, cases[o.c].LossAllowed)
		if progress != nil {
			progress(rep.Runs, total, o.r)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for _, cr := range rep.Cases {
		sort.Slice(cr.Failed, func(i, j int) bool { return cr.Failed[i].Seed < cr.Failed[j].Seed })
		rep.Verdict = worse(rep.Verdict, cr.Verdict)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

func add(cr *CaseResult, r *RunResult, lossAllowed bool) {
	if r.Verdict == Skipped {
		if cr.Skipped == "" {
			cr.Skipped = strings.Join(r.Reasons, "; ")
		}
		return
	}
	cr.Seeds++
	cr.Ops += r.Ops
	cr.Verdict = worse(cr.Verdict, r.Verdict)
	for _, a := range r.Found {
		cr.Found[a.Name]++
	}
	for _, a := range r.Allowed {
		cr.Allowed[a.Name]++
	}
	if r.Sim != nil && r.Sim.Protocol != nil {
		for _, n := range r.Sim.Protocol.Checked {
			cr.StepsChecked += n
		}
		for _, n := range r.Sim.Protocol.Skipped {
			cr.StepsSkipped += n
		}
	}
	if len(r.Invariants) > 0 {
		for _, v := range r.Invariants {
			key := "invariant:" + v.Invariant
			if lossAllowed {
				cr.Allowed[key]++
			} else {
				cr.Found[key]++
			}
		}
	}
	if r.Linearizability.Verdict == linearizability.VerdictIllegal {
		if lossAllowed || r.Verdict == Holds {
			cr.Allowed["porcupine:illegal"]++
		} else {
			cr.Found["porcupine:illegal"]++
		}
	}
	if r.Verdict != Holds {
		cr.Failed = append(cr.Failed, r)
	}
}

func hasAnomaly(as []linearizability.Anomaly, name string) bool {
	for _, a := range as {
		if a.Name == name {
			return true
		}
	}
	return false
}
