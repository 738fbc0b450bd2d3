// Package judge decides how a run came out against its case: the
// offset-based anomaly checker and porcupine (linearizability/) on the
// history, the protocol invariants the simulator checked, trace
// validation, and the case's own requirement that the run reached what it
// is about. It also sums runs up into cases and a whole check.
package judge

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
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
	// Error: the run could not be carried out (its topics could not be
	// created, the cluster did not answer): no verdict on the promise, and
	// never a pass. The reasons hold the error; the check goes on.
	Error Verdict = "error"
)

// Worse returns the worse of two verdicts.
func Worse(a, b Verdict) Verdict {
	rank := map[Verdict]int{Skipped: -1, Holds: 0, Unknown: 1, Error: 2, Violated: 3}
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
	Invariants      []*run.Violation
	Linearizability linearizability.LinearizabilityResult
	Ops             int
	// Run is what the run produced.
	Run     *run.Result
	Elapsed time.Duration
	// Target names what the run ran on (Target.Name).
	Target string
	// Replay is the command that runs it again, as a person types it.
	Replay string
}

// Judge checks one run against its case's guarantees. checkTimeout bounds
// porcupine (0: no bound); past it the verdict is Unknown.
func Judge(c *cases.Case, res *run.Result, checkTimeout time.Duration) *RunResult {
	r := &RunResult{Case: c.Name, Seed: res.Spec.Seed, Verdict: Holds, Ops: len(res.History), Run: res}
	fail := func(v Verdict, format string, args ...any) {
		r.Verdict = Worse(r.Verdict, v)
		r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...))
	}
	allowed := c.AllowedIn(res)
	for _, a := range linearizability.CheckAnomalies(res.History) {
		if slices.Contains(allowed, a.Name) {
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
		if !c.LossAllowedIn(res) || slices.Contains(c.MustHold, v.Invariant) {
			fail(Violated, "invariant %s", v.Error())
		}
	}
	r.Linearizability = linearizability.CheckLinearizability(res.History, checkTimeout)
	switch r.Linearizability.Verdict {
	case linearizability.VerdictIllegal:
		switch {
		case c.LossAllowedIn(res):
		case c.DuplicatesAllowed && hasAnomaly(r.Allowed, linearizability.AnomalyDuplicate):
			// Explained by the duplicates at-least-once allows.
		default:
			fail(Violated, "porcupine: the history is not linearizable against spec/'s partition log")
		}
	case linearizability.VerdictUnknown:
		fail(Unknown, "porcupine ran out of time (%s); rerun with a longer --check-timeout", checkTimeout)
	}
	switch {
	case res.Spec.NoFinalRead || res.Stats.FinalReadDone:
	case len(res.Stats.OfflineAtEnd) > 0:
		// Unavailable, not lossy: the records may all be on replicas the
		// controller would not elect (one that lost data, say).
		fail(Unknown, "the final read did not finish: %s had no leader when the run ended (offline; the timeline shows why): unseen writes could not be judged",
			strings.Join(res.Stats.OfflineAtEnd, ", "))
	default:
		// Without the final read, acknowledged writes that vanished go
		// unnoticed ("unseen" is judged only where it finished).
		fail(Unknown, "the final read did not finish: unseen writes could not be judged; rerun with a longer settle time")
	}
	if p := res.Protocol; p != nil && p.Failure != "" {
		first, _, _ := strings.Cut(p.Failure, "\n")
		fail(Violated, "trace validation: %s", first)
	}
	if err := exercised(res); err != nil && !c.Hunt {
		if res.Live {
			fail(Unknown, "the run tested nothing its case promises (%v): not a pass; is the broker taking writes? (the timeline and history.html show what it answered)", oneLine(err))
		} else {
			fail(Violated, "case expectation: the run tested nothing its case promises (%v)", oneLine(err))
		}
	}
	if c.Require != nil {
		if err := c.Require(res); err != nil {
			var broken *cases.BrokenPromise
			if errors.As(err, &broken) {
				fail(Violated, "broken promise %s: %v", broken.Name, err)
			} else if res.Live {
				// Real time decides what a run on real processes gets
				// to exercise; missing it is no pass, and no violation.
				fail(Unknown, "the run did not exercise what the case is about (%v); rerun it, or with a longer --duration%s", err, unapplied(res))
			} else {
				fail(Violated, "case expectation: %v", err)
			}
		}
	}
	return r
}

// oneLine joins a joined error's lines with "; ".
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// unapplied names the settings the case needed of a cluster the harness
// could not configure, as the fix for a run that missed its point.
func unapplied(res *run.Result) string {
	if len(res.Unapplied) == 0 {
		return ""
	}
	var flags, names []string
	for _, s := range res.Unapplied {
		names = append(names, s.String())
		flags = append(flags, s.Flag())
	}
	return fmt.Sprintf("; the case sets %s on its brokers, which the harness cannot: the cluster ran with its own (start one with them, e.g. watermark cluster %s, and say so under settings: in the target file)",
		strings.Join(names, ", "), strings.Join(flags, " "))
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

// CaseResult sums up every seed of a case.
type CaseResult struct {
	Name    string
	Summary string
	Seeds   int
	Ops     int
	// Acknowledged counts the sends a producer was told succeeded, Lost
	// those of them the history shows gone (lost-write and unseen
	// anomalies, allowed or not): the case's ledger.
	Acknowledged int
	Lost         int
	Verdict      Verdict
	// Found counts the anomalies that broke the case's guarantees, by
	// name; Allowed the anomalies it tolerates.
	Found   map[string]int
	Allowed map[string]int
	// Invariants counts the runs each protocol invariant failed in, by
	// name; InvariantsAllowed the same for a case that tolerates loss.
	Invariants        map[string]int
	InvariantsAllowed map[string]int
	// Illegal counts the runs porcupine found not linearizable against
	// spec/'s partition log; IllegalAllowed those the case tolerates.
	Illegal        int
	IllegalAllowed int
	// Failed holds the runs that did not hold, in seed order.
	Failed []*RunResult
	// Skipped says why the target could not run the case, if it could not.
	Skipped string
	// StepsChecked and StepsSkipped count the replication steps trace
	// validation checked and left unchecked, over every run (both 0
	// without trace validation).
	StepsChecked int
	StepsSkipped int
	// Reached counts the runs that reached each protocol situation.
	Reached map[run.Situation]int `json:",omitempty"`
}

// NewCaseResult is an empty summary of c, skipped until a run is added.
func NewCaseResult(c *cases.Case) *CaseResult {
	return &CaseResult{Name: c.Name, Summary: c.Summary, Verdict: Skipped,
		Found: map[string]int{}, Allowed: map[string]int{},
		Invariants: map[string]int{}, InvariantsAllowed: map[string]int{}, Reached: map[run.Situation]int{}}
}

// Report is the outcome of a check.
type Report struct {
	Verdict Verdict
	Cases   []*CaseResult
	Runs    int
	// Planned is how many runs the check meant to do: more than Runs when
	// it was interrupted.
	Planned int
	Elapsed time.Duration
	// Interrupted says the check was stopped before every run was done.
	Interrupted bool
}

// Steps sums trace validation's counts over every case.
func (rep *Report) Steps() (checked, skipped int) {
	for _, cr := range rep.Cases {
		checked += cr.StepsChecked
		skipped += cr.StepsSkipped
	}
	return checked, skipped
}

// Add counts run r into its case's summary.
func (cr *CaseResult) Add(r *RunResult, lossAllowed bool) {
	if r.Verdict == Skipped {
		if cr.Skipped == "" {
			cr.Skipped = strings.Join(r.Reasons, "; ")
		}
		return
	}
	cr.Seeds++
	cr.Ops += r.Ops
	if r.Run != nil {
		for sit := range r.Run.Reached {
			cr.Reached[sit]++
		}
		for _, op := range r.Run.History {
			if op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeOK {
				cr.Acknowledged++
			}
		}
	}
	for _, a := range slices.Concat(r.Found, r.Allowed) {
		if a.Name == linearizability.AnomalyLostWrite || a.Name == linearizability.AnomalyUnseen {
			cr.Lost++
		}
	}
	cr.Verdict = Worse(cr.Verdict, r.Verdict)
	for _, a := range r.Found {
		cr.Found[a.Name]++
	}
	for _, a := range r.Allowed {
		cr.Allowed[a.Name]++
	}
	if r.Run != nil && r.Run.Protocol != nil {
		for _, n := range r.Run.Protocol.Checked {
			cr.StepsChecked += n
		}
		for _, n := range r.Run.Protocol.Skipped {
			cr.StepsSkipped += n
		}
	}
	for _, v := range r.Invariants {
		if lossAllowed {
			cr.InvariantsAllowed[v.Invariant]++
		} else {
			cr.Invariants[v.Invariant]++
		}
	}
	if r.Linearizability.Verdict == linearizability.VerdictIllegal {
		if lossAllowed || r.Verdict == Holds {
			cr.IllegalAllowed++
		} else {
			cr.Illegal++
		}
	}
	if r.Verdict != Holds {
		cr.Failed = append(cr.Failed, r)
	}
}

// Finish sorts the failed runs by seed and settles the report's verdict.
func (rep *Report) Finish() {
	rep.Verdict = Skipped
	for _, cr := range rep.Cases {
		sort.Slice(cr.Failed, func(i, j int) bool { return cr.Failed[i].Seed < cr.Failed[j].Seed })
		rep.Verdict = Worse(rep.Verdict, cr.Verdict)
	}
}

// Coverage is how often a check reached one protocol situation.
type Coverage struct {
	Situation run.Situation
	Runs      int      // runs that reached it
	Cases     []string // cases with a run that reached it
}

// Coverage lists every situation (run.Situations) with the runs and cases
// that reached it; Runs 0 for one the check never reached.
func (rep *Report) Coverage() []Coverage {
	out := make([]Coverage, len(run.Situations))
	for i, sit := range run.Situations {
		out[i].Situation = sit
		for _, cr := range rep.Cases {
			if n := cr.Reached[sit]; n > 0 {
				out[i].Runs += n
				out[i].Cases = append(out[i].Cases, cr.Name)
			}
		}
	}
	return out
}

// Tally is one count of a case's summary: "lost-write x2".
type Tally struct {
	What string // an anomaly's name, "invariant NAME" or "not linearizable"
	N    int
}

func (t Tally) String() string { return fmt.Sprintf("%s x%d", t.What, t.N) }

// Tallies are a case's anomaly, invariant and porcupine counts, of what
// broke it (allowed false) or of what it tolerates (true): anomalies by
// name, then invariants, then runs porcupine found not linearizable.
func (cr *CaseResult) Tallies(allowed bool) []Tally {
	anomalies, invariants, illegal := cr.Found, cr.Invariants, cr.Illegal
	if allowed {
		anomalies, invariants, illegal = cr.Allowed, cr.InvariantsAllowed, cr.IllegalAllowed
	}
	var out []Tally
	for _, n := range slices.Sorted(maps.Keys(anomalies)) {
		out = append(out, Tally{n, anomalies[n]})
	}
	for _, n := range slices.Sorted(maps.Keys(invariants)) {
		out = append(out, Tally{"invariant " + n, invariants[n]})
	}
	if illegal > 0 {
		out = append(out, Tally{"not linearizable", illegal})
	}
	return out
}

// Counts renders Tallies on one line, "lost-write x2, invariant StrongIsr
// x1"; "-" when there are none.
func (cr *CaseResult) Counts(allowed bool) string {
	ts := cr.Tallies(allowed)
	if len(ts) == 0 {
		return "-"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, ", ")
}

func hasAnomaly(as []linearizability.Anomaly, name string) bool {
	for _, a := range as {
		if a.Name == name {
			return true
		}
	}
	return false
}
