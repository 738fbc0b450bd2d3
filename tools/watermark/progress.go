package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/watermarkhq/watermark/conformance"
)

// progress shows how far a check is: a line that rewrites itself on a
// terminal, a line every few seconds elsewhere (CI logs).
type progress struct {
	w        io.Writer
	off      bool
	tty      bool
	last     time.Time
	failed   int
	printed  bool
	start    time.Time
	interval time.Duration
}

func newProgress(w io.Writer, off bool) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, off: off, tty: tty, start: time.Now(), interval: 5 * time.Second}
}

func (p *progress) update(done, total int, r *conformance.RunResult) {
	if r.Verdict == conformance.Violated || r.Verdict == conformance.Unknown {
		p.failed++
	}
	if p.off {
		return
	}
	line := fmt.Sprintf("[%d/%d] %s seed %d: %s (%d not holding so far, %s)", done, total, r.Case, r.Seed, r.Verdict,
		p.failed, time.Since(p.start).Round(time.Second))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.printed = true
		return
	}
	if done == total || time.Since(p.last) >= p.interval {
		p.last = time.Now()
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) done() {
	if p.printed {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
