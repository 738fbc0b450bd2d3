package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/judge"
)

// width is the widest a line of a table is printed: a terminal's 100
// columns. The report folder (index.html) has every detail.
const width = 100

// printTable prints a check's result: a row per case, then each skipped
// case's reason and the failed runs (three per case), then the verdict.
func printTable(w io.Writer, rep *conformance.Report, written map[*conformance.RunResult]string) {
	rows := [][]string{{"CASE", "SEEDS", "OPS", "VERDICT", "FOUND", "ALLOWED"}}
	for _, cr := range rep.Cases {
		rows = append(rows, []string{cr.Name, fmt.Sprint(cr.Seeds), fmt.Sprint(cr.Ops), strings.ToUpper(string(cr.Verdict)),
			"", ""})
	}
	// The fixed columns take what they need; the two lists share the rest.
	fixed := 0
	for col := range 4 {
		fixed += colWidth(rows, col) + 2
	}
	room := max(width-fixed-2, 20)
	// Each list gets what it needs when both fit; otherwise the one that
	// needs less keeps it (up to half the room) and the other takes the rest.
	needFound, needAllowed := len("FOUND"), len("ALLOWED")
	for _, cr := range rep.Cases {
		needFound = max(needFound, len(cr.Counts(false)))
		needAllowed = max(needAllowed, len(cr.Counts(true)))
	}
	foundWidth := min(needFound, room-min(needAllowed, room/2))
	for i, cr := range rep.Cases {
		rows[i+1][4] = shorten(cr, false, foundWidth)
		rows[i+1][5] = shorten(cr, true, room-foundWidth)
	}
	t := newTable(w)
	for _, r := range rows {
		t.row(r...)
	}
	t.flush()
	for _, cr := range rep.Cases {
		if cr.Verdict == conformance.Skipped {
			fmt.Fprintf(w, "\n%s: SKIPPED: %s\n", cr.Name, cr.Skipped)
		}
	}
	for _, cr := range rep.Cases {
		for i, r := range cr.Failed {
			if i == 3 {
				fmt.Fprintf(w, "\n... and %d more failed runs of %s under %s\n", len(cr.Failed)-3, cr.Name, reportDirOf(written, r))
				break
			}
			fmt.Fprintf(w, "\n%s seed %d: %s\n", r.Case, r.Seed, strings.ToUpper(string(r.Verdict)))
			for _, reason := range r.Reasons {
				fmt.Fprintln(w, indent(reason, "  - "))
			}
			if dir := written[r]; dir != "" {
				fmt.Fprintf(w, "  report: %s\n", dir)
			}
			fmt.Fprintf(w, "  replay: %s\n", r.Replay)
		}
	}
	fmt.Fprintf(w, "\n%s in %s: %s\n", plural(rep.Runs, "run"), rep.Elapsed.Round(time.Millisecond), verdictLine(rep))
}

func colWidth(rows [][]string, col int) int {
	n := 0
	for _, r := range rows {
		n = max(n, len(r[col]))
	}
	return n
}

// shorten renders what a case found (or tolerated) in at most n columns:
// the most frequent first, then "+K more" for what does not fit.
func shorten(cr *conformance.CaseResult, allowed bool, n int) string {
	full := cr.Counts(allowed)
	if len(full) <= n {
		return full
	}
	items := cr.Tallies(allowed)
	slices.SortStableFunc(items, func(a, b judge.Tally) int { return cmp.Compare(b.N, a.N) })
	out := ""
	for i, it := range items {
		more := fmt.Sprintf(" +%d more", len(items)-i)
		next := it.String()
		if out != "" {
			next = out + ", " + it.String()
		}
		if len(next)+len(more) > n && i < len(items)-1 || len(next) > n {
			if out == "" {
				return fmt.Sprintf("%d kinds", len(items))
			}
			return out + more
		}
		out = next
	}
	return out
}

func reportDirOf(written map[*conformance.RunResult]string, r *conformance.RunResult) string {
	if d := written[r]; d != "" {
		return d[:strings.LastIndex(d, string(os.PathSeparator))]
	}
	return "the report folder"
}

func verdictLine(rep *conformance.Report) string {
	switch rep.Verdict {
	case conformance.Holds:
		skipped := 0
		for _, cr := range rep.Cases {
			if cr.Verdict == conformance.Skipped {
				skipped++
			}
		}
		if skipped > 0 {
			return fmt.Sprintf("every case that ran holds; %s skipped on this target", plural(skipped, "case"))
		}
		return "every case holds"
	case conformance.Skipped:
		return "every case was skipped on this target"
	case conformance.Unknown:
		return "a verdict is unknown (a checker ran out of time, or a run did not get to its case): not a pass"
	case conformance.Error:
		n := 0
		for _, cr := range rep.Cases {
			if cr.Verdict == conformance.Error {
				n++
			}
		}
		return plural(n, "case") + " could not be carried out (ERROR: the reasons above say why): not a pass"
	}
	n := 0
	for _, cr := range rep.Cases {
		if cr.Verdict == conformance.Violated {
			n++
		}
	}
	return plural(n, "case") + " violated"
}

// table prints aligned columns, the last one wrapped to fit width.
type table struct {
	w    io.Writer
	rows [][]string
}

func newTable(w io.Writer) *table { return &table{w: w} }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) flush() {
	if len(t.rows) == 0 {
		return
	}
	cols := len(t.rows[0])
	widths := make([]int, cols)
	for _, r := range t.rows {
		for i := range cols - 1 {
			widths[i] = max(widths[i], len(r[i]))
		}
	}
	lead := 0
	for i := range cols - 1 {
		lead += widths[i] + 2
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i := range cols - 1 {
			fmt.Fprintf(&b, "%-*s  ", widths[i], r[i])
		}
		lines := wrap(r[cols-1], max(width-lead, 30))
		b.WriteString(lines[0])
		for _, l := range lines[1:] {
			b.WriteString("\n" + strings.Repeat(" ", lead) + l)
		}
		fmt.Fprintln(t.w, strings.TrimRight(b.String(), " "))
	}
}

// wrap breaks s at spaces into lines of at most n columns.
func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > n {
			lines = append(lines, line)
			line = word
			continue
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// jsonReport is the machine-readable result of `watermark check --json`.
type jsonReport struct {
	Verdict   string `json:"verdict"`
	Runs      int    `json:"runs"`
	ElapsedMs int64  `json:"elapsed_ms"`
	// Interrupted: Ctrl-C stopped the check after Runs of Planned runs.
	Interrupted bool `json:"interrupted,omitempty"`
	Planned     int  `json:"planned_runs"`
	// TraceValidation is there with --validate-protocol.
	TraceValidation *jsonSteps `json:"trace_validation,omitempty"`
	Cases           []jsonCase `json:"cases"`
	// Coverage lists every protocol situation with the runs and cases
	// that reached it (runs 0: never reached).
	Coverage []jsonSituation `json:"coverage"`
}

// jsonSteps counts the replication steps trace validation checked and
// left unchecked.
type jsonSteps struct {
	Checked int `json:"steps_checked"`
	Skipped int `json:"steps_skipped"`
}

type jsonCase struct {
	Name  string `json:"name"`
	Seeds int    `json:"seeds"`
	Ops   int    `json:"ops"`
	// Acknowledged and Lost are the ledger: sends acknowledged, and of
	// them, lost (lost-write and unseen, allowed or not).
	Acknowledged int            `json:"acknowledged"`
	Lost         int            `json:"lost"`
	Verdict      string         `json:"verdict"`
	Found        map[string]int `json:"anomalies_found"`
	Allowed      map[string]int `json:"allowed_anomalies_seen"`
	// Invariants counts the runs each protocol invariant failed in;
	// InvariantsAllowed those of a case that tolerates loss.
	Invariants        map[string]int `json:"invariants_failed"`
	InvariantsAllowed map[string]int `json:"allowed_invariants_failed"`
	// NotLinearizable counts the runs porcupine found not linearizable;
	// NotLinearizableAllowed those the case tolerates.
	NotLinearizable        int `json:"not_linearizable"`
	NotLinearizableAllowed int `json:"allowed_not_linearizable"`
	// Skipped says why the target could not run the case.
	Skipped string `json:"skipped,omitempty"`
	// TraceValidation is there with --validate-protocol.
	TraceValidation *jsonSteps `json:"trace_validation,omitempty"`
	Failed          []jsonRun  `json:"failed_runs"`
	// Reached counts the runs that reached each protocol situation.
	Reached map[string]int `json:"situations_reached"`
}

type jsonRun struct {
	Seed    uint64   `json:"seed"`
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"`
	Report  string   `json:"report_dir,omitempty"`
	Replay  string   `json:"replay"`
}

func writeJSONReport(w io.Writer, rep *conformance.Report, written map[*conformance.RunResult]string, validate bool) error {
	out := jsonReport{Verdict: string(rep.Verdict), Runs: rep.Runs, Planned: rep.Planned, Interrupted: rep.Interrupted,
		ElapsedMs: rep.Elapsed.Milliseconds()}
	if validate {
		checked, skipped := rep.Steps()
		out.TraceValidation = &jsonSteps{Checked: checked, Skipped: skipped}
	}
	for _, cr := range rep.Cases {
		jc := jsonCase{Name: cr.Name, Seeds: cr.Seeds, Ops: cr.Ops, Acknowledged: cr.Acknowledged, Lost: cr.Lost, Verdict: string(cr.Verdict),
			Found: cr.Found, Allowed: cr.Allowed, Invariants: cr.Invariants, InvariantsAllowed: cr.InvariantsAllowed,
			NotLinearizable: cr.Illegal, NotLinearizableAllowed: cr.IllegalAllowed, Skipped: cr.Skipped, Failed: []jsonRun{}}
		if validate {
			jc.TraceValidation = &jsonSteps{Checked: cr.StepsChecked, Skipped: cr.StepsSkipped}
		}
		jc.Reached = map[string]int{}
		for sit, n := range cr.Reached {
			jc.Reached[string(sit)] = n
		}
		for _, r := range cr.Failed {
			jc.Failed = append(jc.Failed, jsonRun{Seed: r.Seed, Verdict: string(r.Verdict), Reasons: r.Reasons,
				Report: written[r], Replay: r.Replay})
		}
		out.Cases = append(out.Cases, jc)
	}
	out.Coverage = jsonCoverage(rep)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
