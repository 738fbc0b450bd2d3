package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/judge"
)

// printCoverage prints which protocol situations the check's runs
// reached and which none did: what the verdicts above rest on, and what
// they say nothing about.
func printCoverage(w io.Writer, rep *conformance.Report) {
	cov := rep.Coverage()
	reached := 0
	var never []string
	for _, c := range cov {
		if c.Runs > 0 {
			reached++
		} else {
			never = append(never, string(c.Situation))
		}
	}
	fmt.Fprintf(w, "\ncoverage: %d of %d protocol situations reached\n", reached, len(cov))
	if reached > 0 {
		printReached(w, cov)
	}
	if len(never) > 0 {
		fmt.Fprintln(w, strings.Join(wrap("never reached: "+strings.Join(never, ", "), width), "\n  "))
	}
}

func printReached(w io.Writer, cov []judge.Coverage) {
	name := len("SITUATION")
	for _, c := range cov {
		name = max(name, len(c.Situation))
	}
	room := max(width-name-2-6-2, 20)
	t := newTable(w)
	t.row("SITUATION", "RUNS", "CASES")
	for _, c := range cov {
		if c.Runs > 0 {
			t.row(string(c.Situation), fmt.Sprint(c.Runs), listIn(c.Cases, room))
		}
	}
	t.flush()
}

// listIn joins names into at most n columns, "+K more" for the rest.
func listIn(names []string, n int) string {
	out := ""
	for i, s := range names {
		next := s
		if out != "" {
			next = out + ", " + s
		}
		more := fmt.Sprintf(" +%d more", len(names)-i)
		if i < len(names)-1 && len(next)+len(more) > n || len(next) > n {
			if out == "" {
				return fmt.Sprintf("%d cases", len(names))
			}
			return out + more
		}
		out = next
	}
	return out
}

// jsonSituation is one line of the coverage in `check --json`.
type jsonSituation struct {
	Situation string   `json:"situation"`
	Runs      int      `json:"runs"`
	Cases     []string `json:"cases"`
}

func jsonCoverage(rep *conformance.Report) []jsonSituation {
	var out []jsonSituation
	for _, c := range rep.Coverage() {
		out = append(out, jsonSituation{Situation: string(c.Situation), Runs: c.Runs, Cases: append([]string{}, c.Cases...)})
	}
	return out
}
