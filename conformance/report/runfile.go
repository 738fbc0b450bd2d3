package report

import (
	"fmt"
	"slices"
	"sort"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
)

// RunFileFor writes run r of case c as a run file that replays it exactly;
// it expects what the run found: the anomalies c does not allow and, unless
// c allows loss, the invariants that failed (`holds` if there were none).
func RunFileFor(r *judge.RunResult, c *cases.Case) *run.File {
	f := &run.File{Spec: r.Run.Spec, Allowed: []string{}}
	f.Name = r.Case
	f.Description = fmt.Sprintf("case %s, seed %d: %s (saved by watermark check)", r.Case, r.Seed, r.Verdict)
	if c != nil {
		f.Allowed = slices.Clone(c.AllowedIn(r.Run))
		if f.Allowed == nil {
			f.Allowed = []string{}
		}
		f.LossAllowed = c.LossAllowedIn(r.Run)
		f.DuplicatesAllowed = c.DuplicatesAllowed
	}
	found := FoundNames(r, f.LossAllowed)
	f.Expect = run.Expect{Holds: len(found) == 0, Found: found}
	return f
}

// FoundNames are the distinct anomaly names of r.Found and, unless loss is
// allowed, the invariants that failed, sorted.
func FoundNames(r *judge.RunResult, lossAllowed bool) []string {
	set := map[string]bool{}
	for _, a := range r.Found {
		set[a.Name] = true
	}
	if !lossAllowed {
		for _, v := range r.Invariants {
			set[v.Invariant] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
