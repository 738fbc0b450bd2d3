package conformance

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/linearizability"
)

// leaderCrashRun runs acks-all-leader-crash with seed 1: leaders crash one
// after another, so the run has elections, ISR changes and faults.
func leaderCrashRun(t *testing.T) *RunResult {
	t.Helper()
	cases, err := Lookup([]string{"acks-all-leader-crash"})
	require.NoError(t, err)
	require.Len(t, cases, 1)
	r, err := RunOne(&cases[0], 1, Options{}, 30*time.Second)
	require.NoError(t, err)
	return r
}

func TestWriteRunWritesATimeline(t *testing.T) {
	r := leaderCrashRun(t)
	var elections, isrChanges, faults []string
	for _, n := range r.Sim.Notes {
		switch {
		case leadsNote.MatchString(n.Text) || uncleanNote.MatchString(n.Text):
			elections = append(elections, n.Text)
		case isrNote.MatchString(n.Text):
			isrChanges = append(isrChanges, n.Text)
		case strings.HasPrefix(n.Text, "crash broker"):
			faults = append(faults, n.Text)
		}
	}
	require.NotEmpty(t, elections, "the case crashes leaders, so leadership moves")
	require.NotEmpty(t, isrChanges, "crashed followers leave the ISR and come back")
	require.NotEmpty(t, faults)

	dir, err := WriteRun(t.TempDir(), r)
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
		m := leadsNote.FindStringSubmatch(e)
		if m == nil {
			m = uncleanNote.FindStringSubmatch(e)
		}
		assert.Contains(t, text, "broker "+m[2]+" leads in epoch "+m[3], e)
		assert.Contains(t, text, "broker "+m[2]+" (leader epoch "+m[3], "the leadership spans name %q", e)
	}
	for _, c := range isrChanges {
		m := isrNote.FindStringSubmatch(c)
		assert.Contains(t, text, "ISR "+m[2]+" -> "+m[3]+" (partition epoch "+m[4]+")", c)
	}
	// The leadership of t-0 is listed in time order.
	t0 := text[strings.Index(text, "partition t-0\n"):]
	last := -1
	for _, e := range elections {
		m := leadsNote.FindStringSubmatch(e)
		if m == nil || m[1] != "t-0" {
			continue
		}
		i := strings.Index(t0, "broker "+m[2]+" (leader epoch "+m[3])
		require.GreaterOrEqual(t, i, 0, e)
		assert.Greater(t, i, last, "%q comes after the elections before it", e)
		last = i
	}
}

func TestTimelineMarksUncleanElections(t *testing.T) {
	notes := []sim.Note{
		{AtMs: 10, Text: "isolate broker 1"},
		{AtMs: 20, Text: "t-0: ISR [1 2] -> [1] (partition epoch 3)"},
		{AtMs: 30, Text: "crash broker 1 (scheduled)"},
		{AtMs: 40, Text: "t-0: unclean election of broker 2 in epoch 5"},
	}
	r := &RunResult{Case: "x", Seed: 3, Verdict: Violated, Sim: &sim.Result{Notes: notes, Stats: sim.Stats{EndMs: 100}}}
	var b strings.Builder
	require.NoError(t, writeTimeline(&b, r))
	text := b.String()
	assert.Contains(t, text, "UNCLEAN")
	assert.Contains(t, text, "40 .. 100")
	assert.Contains(t, text, "the initial leader")
	// The fault list comes first, in time order.
	assert.Less(t, strings.Index(text, "isolate broker 1"), strings.Index(text, "crash broker 1"))
	assert.Less(t, strings.Index(text, "crash broker 1"), strings.Index(text, "partition t-0"))
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

func TestWriteIndexLinksFailedRunsAndEscapes(t *testing.T) {
	root := t.TempDir()
	r := leaderCrashRun(t)
	r.Verdict = Violated
	r.Reasons = []string{`<script>alert("reason")</script>`}
	r.Found = []linearizability.Anomaly{{Name: "lost-write"}}
	runDir, err := WriteRun(root, r)
	require.NoError(t, err)
	// A file that went missing must not be linked.
	require.NoError(t, os.Remove(filepath.Join(runDir, "history.html")))

	// A run whose folder was never written gets no links.
	unwritten := &RunResult{Case: r.Case, Seed: 2, Verdict: Unknown, Reasons: []string{"porcupine ran out of time"}, Sim: r.Sim}

	rep := &Report{Verdict: Violated, Runs: 3, Elapsed: 1500 * time.Millisecond, Cases: []*CaseResult{
		{Name: "acks-all-leader-crash", Seeds: 2, Ops: 40, Verdict: Violated,
			Found: map[string]int{"lost-write": 1}, Allowed: map[string]int{}, Failed: []*RunResult{r, unwritten}},
		{Name: `<b>bold&case</b>`, Summary: `a "quoted" <summary>`, Seeds: 1, Ops: 7, Verdict: Holds,
			Found: map[string]int{}, Allowed: map[string]int{"duplicate": 2}},
	}}
	path, err := WriteIndex(root, rep, map[*RunResult]string{r: runDir})
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
	assert.Contains(t, page, ReplayCommand(r))
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
	}, links)
}

func TestWriteIndexWhenEveryCaseHolds(t *testing.T) {
	root := filepath.Join(t.TempDir(), "not-yet")
	rep := &Report{Verdict: Holds, Runs: 1, Cases: []*CaseResult{
		{Name: "follower-restart", Seeds: 1, Ops: 10, Verdict: Holds, Found: map[string]int{}, Allowed: map[string]int{}},
	}}
	path, err := WriteIndex(root, rep, nil)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "follower-restart")
	assert.Contains(t, string(b), "Every case holds")
	assert.NotRegexp(t, `href="[^#]`, string(b))
}
