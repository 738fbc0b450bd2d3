// Package report writes what a check found for a person to open: for each
// run that did not hold, a folder with its history, verdict, timeline,
// porcupine's visualisation and a run file that replays it (WriteRun); for
// the whole check, a summary page (WriteIndex) and JUnit XML (WriteJUnit).
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

// RunDir is where WriteRun puts a run's files under root.
func RunDir(root string, r *judge.RunResult) string {
	return filepath.Join(root, strings.ReplaceAll(r.Case, "/", "-"), fmt.Sprintf("seed-%d", r.Seed))
}

// WriteRun keeps everything needed to look at a failed run and replay it:
//
//	history.jsonl   what the clients saw (linearizability/FORMAT.md)
//	config.json     the simulator configuration of the run
//	replay.txt      the command that reruns it exactly
//	verdict.txt     why the run did not hold: anomalies with their
//	                operations, invariant violations with the steps before
//	                them, porcupine's verdict
//	anomalies.json  the anomalies, machine-readable
//	history.html    the run for a person: case, seed, verdict, the first
//	                bad operation and the anomalies on the first screen,
//	                offsets over time per partition with faults and
//	                anomalies marked, porcupine's picture framed below
//	porcupine.html  porcupine's visualisation, faults and failpoints marked
//	run.yaml        the run as a run file (failpoints/RUNFILE.md), judged
//	                as case c (nil: strictly), expecting what it found:
//	                `watermark repro run.yaml` replays it
//	timeline.txt    the run in time order for a person: the faults,
//	                failpoints and heals, and for each partition which
//	                broker led it when and how its ISR changed
//
// WriteIndex summarises a whole check and links to these folders.
func WriteRun(root string, r *judge.RunResult, c *cases.Case) (string, error) {
	dir := RunDir(root, r)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	write := func(name string, fn func(f *os.File) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("report %s: %w", name, err)
		}
		return f.Close()
	}
	steps := []struct {
		name string
		fn   func(f *os.File) error
	}{
		{"history.jsonl", func(f *os.File) error { return linearizability.WriteHistory(f, r.Run.History) }},
		{"config.json", func(f *os.File) error { return writeJSON(f, r.Run.Spec) }},
		{"replay.txt", func(f *os.File) error { _, err := fmt.Fprintln(f, r.Replay); return err }},
		{"verdict.txt", func(f *os.File) error { return writeVerdict(f, r) }},
		{"anomalies.json", func(f *os.File) error {
			return writeJSON(f, map[string]any{"found": nonNil(r.Found), "allowed": nonNil(r.Allowed)})
		}},
		{"porcupine.html", func(f *os.File) error {
			return linearizability.WriteVisualization(f, r.Linearizability, Annotations(r.Run))
		}},
		{"history.html", func(f *os.File) error { return writeHistoryPage(f, r, "porcupine.html") }},
		{"run.yaml", func(f *os.File) error { _, err := f.Write(RunFileFor(r, c).Marshal()); return err }},
		{"timeline.txt", func(f *os.File) error { return writeTimeline(f, r) }},
	}
	for _, s := range steps {
		if r.Run == nil && s.name != "replay.txt" && s.name != "verdict.txt" {
			continue // the run was not carried out (an error verdict): no history
		}
		if err := write(s.name, s.fn); err != nil {
			return dir, err
		}
	}
	return dir, nil
}

func nonNil(a []linearizability.Anomaly) []linearizability.Anomaly {
	if a == nil {
		return []linearizability.Anomaly{}
	}
	return a
}

func writeJSON(f *os.File, v any) error {
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeVerdict(f *os.File, r *judge.RunResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "case %s, seed %d: %s\n", r.Case, r.Seed, r.Verdict)
	fmt.Fprintf(&b, "replay: %s\n\n", r.Replay)
	for _, reason := range r.Reasons {
		fmt.Fprintf(&b, "- %s\n", reason)
	}
	if r.Run == nil {
		_, err := f.WriteString(b.String())
		return err // not carried out: nothing was recorded
	}
	if len(r.Found) > 0 {
		fmt.Fprintf(&b, "\nanomalies the case does not allow:\n")
		for _, a := range r.Found {
			fmt.Fprintf(&b, "  %s\n", describeAnomaly(a))
		}
	}
	if len(r.Run.LossByFault) > 0 {
		fmt.Fprintf(&b, "\nloss of committed records is allowed: the faults may cost a correct broker some:\n")
		for _, why := range r.Run.LossByFault {
			fmt.Fprintf(&b, "  %s\n", why)
		}
	}
	if len(r.Allowed) > 0 {
		fmt.Fprintf(&b, "\nanomalies the case allows:\n")
		for _, a := range r.Allowed {
			fmt.Fprintf(&b, "  %s\n", describeAnomaly(a))
		}
	}
	fmt.Fprintf(&b, "\nporcupine: %s\n", r.Linearizability.Verdict)
	for _, v := range r.Invariants {
		fmt.Fprintf(&b, "\ninvariant %s\nlast steps before it:\n", v.Error())
		for _, line := range v.Trace {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	if p := r.Run.Protocol; p != nil && p.Failure != "" {
		fmt.Fprintf(&b, "\ntrace validation: step %d at %d ms is not a transition spec/protocol's model allows:\n", p.Step, p.AtMs)
		for _, line := range strings.Split(strings.TrimRight(p.Failure, "\n"), "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	fmt.Fprintf(&b, "\nfaults, failpoints, elections and ISR changes:\n")
	for _, n := range r.Run.Notes {
		fmt.Fprintf(&b, "  %7d ms  %s\n", n.AtMs, n.Text)
	}
	_, err := f.WriteString(b.String())
	return err
}

func describeAnomaly(a linearizability.Anomaly) string {
	return fmt.Sprintf("%-22s %s-%d offset %d: %s (ops %v)", a.Name, a.Topic, a.Partition, a.Offset, a.Detail, a.Ops)
}

// Annotations turns a run's faults, failpoints, elections and invariant
// failures into marks on the visualisation's time axis.
func Annotations(res *run.Result) []linearizability.Annotation {
	var out []linearizability.Annotation
	for _, n := range res.Notes {
		kind := linearizability.AnnotationFault
		switch n.Kind {
		case run.NoteFailpoint:
			kind = linearizability.AnnotationFailpoint
		case run.NoteHeal:
			kind = linearizability.AnnotationHeal
		case run.NoteElection, run.NoteISR:
			kind = linearizability.AnnotationElection
		case run.NoteInvariant:
			kind = "invariant"
		case run.NoteHarness:
			kind = "harness"
		}
		label := n.Text
		if len(label) > 40 {
			label = label[:40] + "…"
		}
		out = append(out, linearizability.Annotation{Start: n.AtMs, End: n.AtMs, Kind: kind, Label: label, Detail: n.Text})
	}
	return out
}
