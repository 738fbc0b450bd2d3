package report_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/report"
	"github.com/watermarkhq/watermark/conformance/run"
)

// The JUnit document as a CI server reads it back.
type parsedSuites struct {
	XMLName  xml.Name      `xml:"testsuites"`
	Tests    int           `xml:"tests,attr"`
	Failures int           `xml:"failures,attr"`
	Errors   int           `xml:"errors,attr"`
	Skipped  int           `xml:"skipped,attr"`
	Time     string        `xml:"time,attr"`
	Suites   []parsedSuite `xml:"testsuite"`
}

type parsedSuite struct {
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Cases    []parsedCase `xml:"testcase"`
}

type parsedCase struct {
	Classname string `xml:"classname,attr"`
	Name      string `xml:"name,attr"`
	Time      string `xml:"time,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	SystemOut string `xml:"system-out"`
}

// tricky is a reason with every character XML must escape.
const tricky = `offset <7> & "quoted" 'single' lost`

func failedRun(name string, seed uint64, v judge.Verdict, reasons ...string) *judge.RunResult {
	return &judge.RunResult{Case: name, Seed: seed, Verdict: v, Reasons: reasons, Target: "sim",
		Run: &run.Result{Spec: run.DefaultSpec(seed)}, Replay: fmt.Sprintf("watermark check --case %s --seed %d", name, seed), Elapsed: time.Second}
}

// fourVerdicts is a check with one case of each verdict.
func fourVerdicts() *judge.Report {
	return &judge.Report{
		Verdict: judge.Violated,
		Runs:    31,
		Elapsed: 12500 * time.Millisecond,
		Cases: []*judge.CaseResult{
			{Name: "acks-1-leader-crash", Seeds: 10, Ops: 14511, Verdict: judge.Holds,
				Found: map[string]int{}, Allowed: map[string]int{"unseen": 31, "nonmonotonic-send": 2}},
			{Name: "kip101-data-loss", Seeds: 10, Ops: 900, Verdict: judge.Violated,
				Found:   map[string]int{"lost-write": 2},
				Allowed: map[string]int{},
				Failed: []*judge.RunResult{
					failedRun("kip101-data-loss", 3, judge.Violated, "1 anomalies: lost-write x1", tricky),
					failedRun("kip101-data-loss", 7, judge.Violated, "1 anomalies: lost-write x1"),
				}},
			{Name: "long-poll", Seeds: 1, Ops: 40, Verdict: judge.Unknown,
				Found: map[string]int{}, Allowed: map[string]int{},
				Failed: []*judge.RunResult{failedRun("long-poll", 1, judge.Unknown, "porcupine ran out of time (30s); rerun with a longer --check-timeout")}},
			{Name: "power-loss-minority", Verdict: judge.Skipped, Found: map[string]int{}, Allowed: map[string]int{},
				Skipped: "cannot run on real processes: it cuts power"},
		},
	}
}

func writeAndParse(t *testing.T, rep *judge.Report, target string) (string, parsedSuites) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, report.WriteJUnit(&buf, rep, target))
	var doc parsedSuites
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc), buf.String())
	return buf.String(), doc
}

// A CI server counts failures, errors and skips from the attributes and
// shows each case's message and text: a violated case is a failure with
// every failed run's reasons and replay command, an unknown one is an
// error (never a pass), a skipped one says why.
func TestJUnitOneCaseOfEachVerdict(t *testing.T) {
	_, doc := writeAndParse(t, fourVerdicts(), "sim")

	assert.Equal(t, 4, doc.Tests)
	assert.Equal(t, 1, doc.Failures)
	assert.Equal(t, 1, doc.Errors)
	assert.Equal(t, 1, doc.Skipped)
	assert.Equal(t, "12.500", doc.Time)
	require.Len(t, doc.Suites, 1)
	s := doc.Suites[0]
	assert.Equal(t, "watermark sim", s.Name)
	assert.Equal(t, []int{4, 1, 1, 1}, []int{s.Tests, s.Failures, s.Errors, s.Skipped})
	assert.Equal(t, "12.500", s.Time)
	require.Len(t, s.Cases, 4)
	var names []string
	for _, c := range s.Cases {
		names = append(names, c.Name)
		assert.Equal(t, "watermark.sim", c.Classname)
		assert.Equal(t, "0.000", c.Time)
	}
	assert.Equal(t, []string{"acks-1-leader-crash", "kip101-data-loss", "long-poll", "power-loss-minority"}, names,
		"cases in report order")

	holds := s.Cases[0]
	assert.Nil(t, holds.Failure)
	assert.Nil(t, holds.Error)
	assert.Nil(t, holds.Skipped)
	assert.Contains(t, holds.SystemOut, "seeds run: 10\n")
	assert.Contains(t, holds.SystemOut, "allowed anomalies seen: nonmonotonic-send x2, unseen x31\n")
	assert.Contains(t, holds.SystemOut, "anomalies found: none\n")

	violated := s.Cases[1]
	require.NotNil(t, violated.Failure)
	assert.Nil(t, violated.Error)
	assert.Equal(t, "violated", violated.Failure.Type)
	assert.Contains(t, violated.Failure.Message, "2 of 10 seeds")
	assert.Contains(t, violated.Failure.Message, "lost-write x2")
	for _, r := range fourVerdicts().Cases[1].Failed {
		assert.Contains(t, violated.Failure.Text, r.Replay)
	}
	assert.Contains(t, violated.Failure.Text, "seed 3: violated\n")
	assert.Contains(t, violated.Failure.Text, "seed 7: violated\n")
	assert.Contains(t, violated.Failure.Text, "watermark check --case kip101-data-loss --seed 7\n")
	assert.Contains(t, violated.Failure.Text, "  - "+tricky+"\n", "special characters round-trip")
	assert.Contains(t, violated.SystemOut, "seeds that did not hold: 3, 7\n")

	unknown := s.Cases[2]
	assert.Nil(t, unknown.Failure, "unknown is not a violation")
	require.NotNil(t, unknown.Error, "unknown is not a pass")
	assert.Contains(t, unknown.Error.Message, "unknown")
	assert.Contains(t, unknown.Error.Text, "porcupine ran out of time")
	assert.Contains(t, unknown.Error.Text, "replay: watermark check --case long-poll --seed 1\n")

	skipped := s.Cases[3]
	require.NotNil(t, skipped.Skipped)
	assert.Equal(t, "cannot run on real processes: it cuts power", skipped.Skipped.Message)
	assert.Nil(t, skipped.Failure)
	assert.Nil(t, skipped.Error)
}

// Reasons come from brokers and checkers: whatever they hold must come
// out as well-formed XML, in attributes and in text alike, and read back
// as it was.
func TestJUnitEscapesReasons(t *testing.T) {
	nasty := tricky + " ]]> end \x00\x1b"
	want := tricky + " ]]> end \uFFFD\uFFFD"
	rep := fourVerdicts()
	rep.Cases[3].Skipped = nasty
	rep.Cases[1].Failed[0].Reasons = []string{nasty}
	rep.Cases[2].Failed[0].Reasons = []string{nasty}
	rep.Cases[0].Allowed = map[string]int{nasty: 1}
	out, doc := writeAndParse(t, rep, `a"<b>&`)

	assert.NotContains(t, out, "\x00")
	assert.NotContains(t, out, "\x1b")
	s := doc.Suites[0]
	assert.Equal(t, `watermark a"<b>&`, s.Name)
	assert.Equal(t, `watermark.a"<b>&`, s.Cases[0].Classname)
	assert.Equal(t, want, s.Cases[3].Skipped.Message,
		"a character XML cannot hold becomes U+FFFD; the rest round-trips")
	assert.Contains(t, s.Cases[1].Failure.Text, "  - "+want+"\n")
	assert.Contains(t, s.Cases[2].Error.Text, "  - "+want+"\n")
	assert.Contains(t, s.Cases[0].SystemOut, want+" x1")
}

// A check with no cases (every case filtered out) is still a document a
// CI server accepts: zero tests, not a parse error.
func TestJUnitEmptyReport(t *testing.T) {
	out, doc := writeAndParse(t, &judge.Report{Verdict: judge.Skipped}, "kafka")
	assert.True(t, strings.HasPrefix(out, xml.Header), out)
	assert.Equal(t, 0, doc.Tests)
	require.Len(t, doc.Suites, 1)
	assert.Equal(t, "watermark kafka", doc.Suites[0].Name)
	assert.Empty(t, doc.Suites[0].Cases)
	assert.Equal(t, "0.000", doc.Time)

	require.Error(t, report.WriteJUnit(&bytes.Buffer{}, nil, "kafka"))
}

// The same report gives the same bytes: counts come from maps, and CI
// diffs and caches should not see them reorder.
func TestJUnitIsDeterministic(t *testing.T) {
	first, _ := writeAndParse(t, fourVerdicts(), "sim")
	for range 20 {
		again, _ := writeAndParse(t, fourVerdicts(), "sim")
		require.Equal(t, first, again)
	}
}

// A target name left empty is the simulator, as in Options.
func TestJUnitDefaultsToTheSimulator(t *testing.T) {
	_, doc := writeAndParse(t, fourVerdicts(), "")
	assert.Equal(t, "watermark sim", doc.Suites[0].Name)
}
