package report_test

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/report"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/targets"
	"github.com/watermarkhq/watermark/linearizability"
)

// leaderCrashRun runs acks-all-leader-crash with seed 1: leaders crash one
// after another, so the run has elections, ISR changes and faults.
func leaderCrashRun(t *testing.T) *judge.RunResult {
	t.Helper()
	list, err := cases.Lookup([]string{"acks-all-leader-crash"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	r, err := conformance.RunOne(&list[0], 1, conformance.Options{Target: targets.Simulator, CheckTimeout: 30 * time.Second})
	require.NoError(t, err)
	return r
}

func TestWriteRunWritesATimeline(t *testing.T) {
	r := leaderCrashRun(t)
	var elections, isrChanges []run.Note
	var faults []string
	for _, n := range r.Run.Notes {
		switch {
		case n.Kind == run.NoteElection:
			elections = append(elections, n)
		case n.Kind == run.NoteISR:
			isrChanges = append(isrChanges, n)
		case n.Kind == run.NoteFault && n.Fault == run.FaultCrash:
			faults = append(faults, n.Text)
		}
	}
	require.NotEmpty(t, elections, "the case crashes leaders, so leadership moves")
	require.NotEmpty(t, isrChanges, "crashed followers leave the ISR and come back")
	require.NotEmpty(t, faults)

	dir, err := report.WriteRun(t.TempDir(), r, nil)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "timeline.txt"))
	require.NoError(t, err)
	text := string(b)
	assert.Contains(t, text, "timeline of case acks-all-leader-crash, seed 1")
	assert.Contains(t, text, "partition t-0\n")
	assert.Contains(t, text, "partition t-1\n")
	for _, f := range faults {
		assert.Contains(t, text, f)
	}
	for _, e := range elections {
		assert.Contains(t, text, fmt.Sprintf("broker %d leads in epoch %d", e.Leader, e.Epoch), e.Text)
		assert.Contains(t, text, fmt.Sprintf("broker %d (leader epoch %d", e.Leader, e.Epoch), "the leadership spans name %q", e.Text)
	}
	for _, c := range isrChanges {
		assert.Contains(t, text, fmt.Sprintf("ISR %v -> %v (partition epoch %d)", c.OldISR, c.ISR, c.Epoch), c.Text)
	}
	// The leadership of t-0 is listed in time order.
	t0 := text[strings.Index(text, "partition t-0\n"):]
	last := -1
	for _, e := range elections {
		if e.Partition.String() != "t-0" {
			continue
		}
		i := strings.Index(t0, fmt.Sprintf("broker %d (leader epoch %d", e.Leader, e.Epoch))
		require.GreaterOrEqual(t, i, 0, e.Text)
		assert.Greater(t, i, last, "%q comes after the elections before it", e.Text)
		last = i
	}
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

func TestWriteIndexLinksFailedRunsAndEscapes(t *testing.T) {
	root := t.TempDir()
	r := leaderCrashRun(t)
	r.Verdict = judge.Violated
	r.Reasons = []string{`<script>alert("reason")</script>`}
	r.Found = []linearizability.Anomaly{{Name: "lost-write"}}
	runDir, err := report.WriteRun(root, r, nil)
	require.NoError(t, err)
	// A file that went missing must not be linked.
	require.NoError(t, os.Remove(filepath.Join(runDir, "history.html")))

	// A run whose folder was never written gets no links.
	unwritten := &judge.RunResult{Case: r.Case, Seed: 2, Verdict: judge.Unknown, Reasons: []string{"porcupine ran out of time"}, Run: r.Run}

	rep := &judge.Report{Verdict: judge.Violated, Runs: 3, Elapsed: 1500 * time.Millisecond, Cases: []*judge.CaseResult{
		{Name: "acks-all-leader-crash", Seeds: 2, Ops: 40, Verdict: judge.Violated,
			Found: map[string]int{"lost-write": 1}, Allowed: map[string]int{}, Failed: []*judge.RunResult{r, unwritten}},
		{Name: `<b>bold&case</b>`, Summary: `a "quoted" <summary>`, Seeds: 1, Ops: 7, Verdict: judge.Holds,
			Found: map[string]int{}, Allowed: map[string]int{"duplicate": 2}},
	}}
	path, err := report.WriteIndex(root, rep, map[*judge.RunResult]string{r: runDir})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "index.html"), path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	page := string(b)

	assert.Contains(t, page, "acks-all-leader-crash")
	assert.Contains(t, page, "&lt;b&gt;bold&amp;case&lt;/b&gt;")
	assert.NotContains(t, page, "<b>bold")
	assert.NotContains(t, page, "<script>")
	assert.Contains(t, page, "&lt;script&gt;")
	assert.Contains(t, page, "lost-write x1")
	assert.Contains(t, page, "duplicate x2")
	assert.Contains(t, page, r.Replay)
	assert.Contains(t, page, "seed 2")

	var links []string
	for _, m := range hrefRE.FindAllStringSubmatch(page, -1) {
		href := html.UnescapeString(m[1])
		if strings.HasPrefix(href, "#") {
			continue
		}
		links = append(links, href)
		assert.False(t, filepath.IsAbs(href), "links are relative: %s", href)
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(href)))
		assert.NoError(t, err, "link to a file that exists: %s", href)
	}
	assert.ElementsMatch(t, []string{
		"acks-all-leader-crash/seed-1/verdict.txt",
		"acks-all-leader-crash/seed-1/timeline.txt",
		"acks-all-leader-crash/seed-1/run.yaml",
		"acks-all-leader-crash/seed-1/history.jsonl",
		"acks-all-leader-crash/seed-1/porcupine.html",
	}, links)
}

func TestWriteIndexWhenEveryCaseHolds(t *testing.T) {
	root := filepath.Join(t.TempDir(), "not-yet")
	rep := &judge.Report{Verdict: judge.Holds, Runs: 1, Cases: []*judge.CaseResult{
		{Name: "follower-restart", Seeds: 1, Ops: 10, Verdict: judge.Holds, Found: map[string]int{}, Allowed: map[string]int{},
			Reached: map[run.Situation]int{run.SitEpochTruncation: 1}},
	}}
	path, err := report.WriteIndex(root, rep, nil)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "follower-restart")
	assert.Contains(t, string(b), "Every case holds")
	// The page shows what the runs reached and what they never did.
	assert.Contains(t, string(b), fmt.Sprintf("Coverage: 1 of %d protocol situations reached", len(run.Situations)))
	assert.Regexp(t, `<td>truncation-by-epoch</td><td class="num">1</td><td>follower-restart</td>`, string(b))
	assert.Regexp(t, `<td>torn-tail-recovery</td><td class="num">0</td><td><span class="unknown">never reached</span>`, string(b))
	assert.NotRegexp(t, `href="[^#]`, string(b))
}

// WriteRun leaves a run.yaml that describes the same run, judged as its
// case.
func TestWriteRunSavesRunFile(t *testing.T) {
	list, err := cases.Lookup([]string{"acks-1-leader-crash"})
	require.NoError(t, err)
	c := &list[0]
	r, err := conformance.RunOne(c, 1, conformance.Options{Target: targets.Simulator})
	require.NoError(t, err)
	dir, err := report.WriteRun(t.TempDir(), r, c)
	require.NoError(t, err)
	f, err := run.LoadFile(filepath.Join(dir, "run.yaml"))
	require.NoError(t, err)
	assert.Equal(t, r.Run.Spec, f.Spec)
	assert.Equal(t, c.Name, f.Name)
	assert.ElementsMatch(t, c.Allowed, f.Allowed)
	data, err := os.ReadFile(filepath.Join(dir, "run.yaml"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "# watermark run file"))
	replay, err := os.ReadFile(filepath.Join(dir, "replay.txt"))
	require.NoError(t, err)
	assert.Equal(t, r.Replay+"\n", string(replay))
}

// history.html explains itself: case, seed and verdict in its title and
// at the top, the first bad operation and every anomaly before any
// picture, a picture per partition with the anomaly ringed and labels on
// hover, and porcupine's picture framed from a file of its own.
func TestHistoryPageExplainsItself(t *testing.T) {
	r := leaderCrashRun(t)
	r.Verdict = judge.Violated
	var acked *linearizability.Op
	for i := range r.Run.History {
		if op := &r.Run.History[i]; op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeOK && op.Offset >= 0 {
			acked = op
			break
		}
	}
	require.NotNil(t, acked)
	r.Found = []linearizability.Anomaly{{Name: linearizability.AnomalyLostWrite, Topic: acked.Topic, Partition: acked.Partition,
		Offset: acked.Offset, Ops: []int{acked.ID}, Detail: "planted for the test"}}
	dir, err := report.WriteRun(t.TempDir(), r, nil)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "history.html"))
	require.NoError(t, err)
	page := string(b)
	assert.Contains(t, page, "<title>watermark: acks-all-leader-crash seed 1: VIOLATED</title>")
	first := strings.Index(page, "First bad operation: op "+fmt.Sprint(acked.ID))
	svg := strings.Index(page, "<svg")
	require.Greater(t, first, 0)
	require.Greater(t, svg, first, "the bad operation comes before the pictures")
	assert.Contains(t, page, `class="anomaly"><title>lost-write at offset`)
	assert.Contains(t, page, "<h3>t-0</h3>")
	assert.Contains(t, page, `<iframe src="porcupine.html">`)
	_, err = os.Stat(filepath.Join(dir, "porcupine.html"))
	require.NoError(t, err)
}
