package report

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/watermarkhq/watermark/conformance/judge"
)

// The JUnit XML that CI servers read (Jenkins, GitHub Actions reporters,
// GitLab): one testsuite per check, one testcase per conformance case.
// There is no single schema; these elements and attributes are the ones
// all of them agree on.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// junitProblem is a <failure> or an <error>: a one-line message, and the
// failed runs in full as the element's text.
type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// junitText is text kept in CDATA, so that the lines of the report file
// read as lines; xmlText makes it hold only characters XML allows.
type junitText struct {
	Text string `xml:",cdata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes rep as JUnit XML, the test report format CI servers
// show: a violated case is a <failure>, an unknown one an <error> (not a
// pass and not a violation), a skipped one <skipped> with the reason, and
// every failed run's reasons and replay command are in the case's text.
//
// Each case's time is 0: a Report keeps the time of the whole check but
// not of each case (only failed runs are kept, and summing them would make
// a failing case look slower than a passing one). The suite's time is the
// check's.
func WriteJUnit(w io.Writer, rep *judge.Report, target string) error {
	if rep == nil {
		return errors.New("junit: no report")
	}
	if target == "" {
		target = "sim"
	}
	suite := junitSuite{Name: "watermark " + target, Time: seconds(rep.Elapsed), Cases: []junitCase{}}
	for _, cr := range rep.Cases {
		tc := junitCase{Classname: "watermark." + target, Name: cr.Name, Time: seconds(0)}
		if out := caseOutput(cr); out != "" {
			tc.SystemOut = &junitText{Text: xmlText(out)}
		}
		switch cr.Verdict {
		case judge.Violated:
			suite.Failures++
			tc.Failure = &junitProblem{Message: problemMessage(cr), Type: string(judge.Violated), Text: xmlText(failedRuns(cr))}
		case judge.Unknown, judge.Error:
			suite.Errors++
			tc.Error = &junitProblem{Message: problemMessage(cr), Type: string(cr.Verdict), Text: xmlText(failedRuns(cr))}
		case judge.Skipped:
			suite.Skipped++
			reason := cr.Skipped
			if reason == "" {
				reason = "the target ran none of the case's runs"
			}
			tc.Skipped = &junitSkipped{Message: reason}
		}
		suite.Tests++
		suite.Cases = append(suite.Cases, tc)
	}
	doc := junitSuites{Name: "watermark", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	return nil
}

// seconds is a duration as JUnit's time attribute: seconds, to the
// millisecond.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// problemMessage is the one line a CI server shows for a case that did
// not hold: how many seeds, and what was found.
func problemMessage(cr *judge.CaseResult) string {
	msg := fmt.Sprintf("%s: %d of %d seeds did not hold", cr.Verdict, len(cr.Failed), cr.Seeds)
	if found := cr.Counts(false); found != "-" {
		msg += "; found " + found
	}
	switch cr.Verdict {
	case judge.Unknown:
		msg += "; a checker ran out of time or the run did not exercise the case: not a pass, not a violation"
	case judge.Error:
		msg += "; a run could not be carried out (the reasons say why): not a pass, not a violation"
	}
	return msg
}

// failedRuns lists every run that did not hold: its seed and verdict, its
// reasons, and the command that replays it.
func failedRuns(cr *judge.CaseResult) string {
	var b strings.Builder
	for _, r := range cr.Failed {
		fmt.Fprintf(&b, "seed %d: %s\n", r.Seed, r.Verdict)
		for _, reason := range r.Reasons {
			fmt.Fprintf(&b, "  - %s\n", reason)
		}
		if r.Replay != "" {
			fmt.Fprintf(&b, "  replay: %s\n", r.Replay)
		}
	}
	return b.String()
}

// caseOutput is the case's <system-out>: what ran and what was seen,
// allowed or not.
func caseOutput(cr *judge.CaseResult) string {
	if cr.Verdict == judge.Skipped {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seeds run: %d\n", cr.Seeds)
	if len(cr.Failed) > 0 {
		seeds := make([]string, len(cr.Failed))
		for i, r := range cr.Failed {
			seeds[i] = strconv.FormatUint(r.Seed, 10)
		}
		fmt.Fprintf(&b, "seeds that did not hold: %s\n", strings.Join(seeds, ", "))
	}
	fmt.Fprintf(&b, "operations: %d\n", cr.Ops)
	fmt.Fprintf(&b, "anomalies found: %s\n", orNone(cr.Counts(false)))
	fmt.Fprintf(&b, "allowed anomalies seen: %s\n", orNone(cr.Counts(true)))
	if cr.StepsChecked+cr.StepsSkipped > 0 {
		fmt.Fprintf(&b, "trace validation: %d steps checked, %d skipped\n", cr.StepsChecked, cr.StepsSkipped)
	}
	if cr.Skipped != "" {
		// Some seeds ran and some could not: say so, since the verdict
		// covers only the ones that ran.
		fmt.Fprintf(&b, "some seeds skipped: %s\n", cr.Skipped)
	}
	return b.String()
}

func orNone(counts string) string {
	if counts == "-" {
		return "none"
	}
	return counts
}

// xmlText replaces what XML 1.0 cannot hold, even in CDATA (control
// characters, invalid UTF-8), with U+FFFD, as encoding/xml does for
// escaped text; CDATA's own end marker is split by the encoder.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r',
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= utf8.MaxRune:
			return r
		}
		return utf8.RuneError
	}, s)
}
