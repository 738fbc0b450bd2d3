package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/conformance"
)

// progress shows how far a check is: the run going on (case, seed, phase,
// and a live run's time) and how many are done, on a line that rewrites
// itself on a terminal, or a line every few seconds elsewhere (CI logs).
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	off      bool
	tty      bool
	last     time.Time
	failed   int
	printed  bool
	start    time.Time
	interval time.Duration
	// current is the last run started, for a live run's time.
	current conformance.Progress
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

// update hears a check's progress.
func (p *progress) update(e conformance.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Phase == conformance.PhaseDone && e.Result.Verdict != conformance.Holds && e.Result.Verdict != conformance.Skipped {
		p.failed++
	}
	if e.Phase != conformance.PhaseDone {
		p.current = e
	}
	what := fmt.Sprintf("%s seed %d %s", e.Case, e.Seed, e.Phase)
	if e.Phase == conformance.PhaseDone {
		what = fmt.Sprintf("%s seed %d: %s", e.Case, e.Seed, e.Result.Verdict)
	}
	p.show(fmt.Sprintf("[%d/%d] %s", e.Done, e.Total, what), e.Done == e.Total)
}

// runTime hears a live run's clock.
func (p *progress) runTime(nowMs, endMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.current
	p.show(fmt.Sprintf("[%d/%d] %s seed %d: %d of %d s", e.Done, e.Total, e.Case, e.Seed, nowMs/1000, endMs/1000), false)
}

func (p *progress) show(line string, final bool) {
	if p.off {
		return
	}
	line = fmt.Sprintf("%s (%d not holding so far, %s)", line, p.failed, time.Since(p.start).Round(time.Second))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.printed = true
		return
	}
	if final || time.Since(p.last) >= p.interval {
		p.last = time.Now()
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.printed {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
