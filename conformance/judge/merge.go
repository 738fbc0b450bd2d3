package judge

import (
	"sort"
	"time"

	"github.com/watermarkhq/watermark/conformance/run"
)

// Merge folds o, the same case's summary from another slice of a check (a
// shard), into cr: seeds, operations, the ledger and every count add up,
// the failed runs join in seed order, and the verdict is the worse.
func (cr *CaseResult) Merge(o *CaseResult) {
	if o.Verdict == Skipped && o.Seeds == 0 {
		if cr.Skipped == "" {
			cr.Skipped = o.Skipped
		}
		return
	}
	cr.Seeds += o.Seeds
	cr.Ops += o.Ops
	cr.Acknowledged += o.Acknowledged
	cr.Lost += o.Lost
	cr.Illegal += o.Illegal
	cr.IllegalAllowed += o.IllegalAllowed
	cr.StepsChecked += o.StepsChecked
	cr.StepsSkipped += o.StepsSkipped
	for _, m := range []struct{ to, from map[string]int }{
		{cr.Found, o.Found}, {cr.Allowed, o.Allowed}, {cr.Invariants, o.Invariants}, {cr.InvariantsAllowed, o.InvariantsAllowed},
	} {
		for k, n := range m.from {
			m.to[k] += n
		}
	}
	for sit, n := range o.Reached {
		cr.Reached[sit] += n
	}
	if cr.Skipped == "" {
		cr.Skipped = o.Skipped
	}
	cr.Failed = append(cr.Failed, o.Failed...)
	sort.SliceStable(cr.Failed, func(i, j int) bool { return cr.Failed[i].Seed < cr.Failed[j].Seed })
	cr.Verdict = Worse(cr.Verdict, o.Verdict)
}

// MergeReports joins the reports of a check's shards into the report of
// the whole check: the cases in order (each case's summaries merged), the
// runs and planned runs summed, interrupted if any shard was; elapsed is
// the longest shard's (they ran side by side). order names every case of
// the whole check in its order; a case no shard ran is left out.
func MergeReports(order []string, shards []*Report) *Report {
	out := &Report{}
	byName := map[string]*CaseResult{}
	for _, rep := range shards {
		out.Runs += rep.Runs
		out.Planned += rep.Planned
		out.Interrupted = out.Interrupted || rep.Interrupted
		out.Elapsed = max(out.Elapsed, rep.Elapsed)
		for _, cr := range rep.Cases {
			if have, ok := byName[cr.Name]; ok {
				have.Merge(cr)
				continue
			}
			c := &CaseResult{Name: cr.Name, Summary: cr.Summary, Verdict: Skipped, Found: map[string]int{}, Allowed: map[string]int{},
				Invariants: map[string]int{}, InvariantsAllowed: map[string]int{}, Reached: map[run.Situation]int{}}
			c.Merge(cr)
			byName[cr.Name] = c
		}
	}
	for _, name := range order {
		if cr, ok := byName[name]; ok {
			out.Cases = append(out.Cases, cr)
		}
	}
	out.Elapsed = out.Elapsed.Round(time.Millisecond)
	out.Finish()
	return out
}
