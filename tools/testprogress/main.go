// Command testprogress shows how far `go test -json` is, for `make test`:
// a line per package as it finishes, every interval the tests still
// running and for how long, and the full output of every test that
// failed. It exits 1 when a test, a package or a build failed, or when
// the input ended without a result for a package that started.
//
//	go test -json ./... | testprogress [-every 30s]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type key struct{ pkg, test string }

// progress is what the events told so far.
type progress struct {
	mu       sync.Mutex
	out      io.Writer
	start    time.Time
	running  map[key]time.Time // tests started and not ended
	output   map[key][]string  // output of running tests, kept for failures
	started  map[string]bool   // packages with a first event
	finished map[string]bool
	failed   []string
	passed   int
}

func main() {
	every := flag.Duration("every", 30*time.Second, "how often to say which tests are still running")
	flag.Parse()
	p := &progress{out: os.Stdout, start: time.Now(), running: map[key]time.Time{}, output: map[key][]string{},
		started: map[string]bool{}, finished: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(*every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.report()
			}
		}
	}()
	err := p.read(os.Stdin)
	close(done)
	os.Exit(p.finish(err))
}

func (p *progress) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not test2json: a build error printed by go itself.
			fmt.Fprintln(p.out, string(line))
			continue
		}
		p.handle(e)
	}
	return sc.Err()
}

func (p *progress) handle(e event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key{e.Package, e.Test}
	if e.Package != "" {
		p.started[e.Package] = true
	}
	switch e.Action {
	case "run":
		p.running[k] = e.Time
	case "output", "build-output":
		if e.Test != "" {
			p.output[k] = append(p.output[k], e.Output)
		} else if e.Action == "build-output" || strings.HasPrefix(e.Output, "FAIL") || strings.Contains(e.Output, "panic:") {
			fmt.Fprint(p.out, e.Output)
		}
	case "pass", "skip":
		delete(p.running, k)
		delete(p.output, k)
		if e.Test == "" && e.Package != "" {
			p.finished[e.Package] = true
			p.passed++
			if e.Action == "pass" {
				fmt.Fprintf(p.out, "ok    %-55s %6.1fs\n", e.Package, e.Elapsed)
			}
		}
	case "fail", "build-fail":
		if e.Test != "" {
			fmt.Fprintf(p.out, "--- FAIL: %s (%.1fs) in %s\n%s", e.Test, e.Elapsed, e.Package, strings.Join(p.output[k], ""))
			delete(p.running, k)
			delete(p.output, k)
			return
		}
		p.finished[e.Package] = true
		p.failed = append(p.failed, e.Package)
		fmt.Fprintf(p.out, "FAIL  %-55s %6.1fs\n", e.Package, e.Elapsed)
	}
}

// report says which top-level tests are still running, longest first.
func (p *progress) report() {
	p.mu.Lock()
	defer p.mu.Unlock()
	type run struct {
		name string
		for_ time.Duration
	}
	var runs []run
	now := time.Now()
	for k, at := range p.running {
		if k.test == "" || strings.Contains(k.test, "/") {
			continue
		}
		runs = append(runs, run{strings.TrimPrefix(k.pkg, "github.com/watermarkhq/watermark/") + " " + k.test, now.Sub(at)})
	}
	slices.SortFunc(runs, func(a, b run) int { return int(b.for_ - a.for_) })
	var parts []string
	for i, r := range runs {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(runs)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", r.name, r.for_.Round(time.Second)))
	}
	if len(parts) == 0 {
		parts = []string{"building"}
	}
	fmt.Fprintf(p.out, "  ... %s in: %s\n", time.Since(p.start).Round(time.Second), strings.Join(parts, ", "))
}

// finish sums up and picks the exit code.
func (p *progress) finish(readErr error) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var unfinished []string
	for pkg := range p.started {
		if !p.finished[pkg] {
			unfinished = append(unfinished, pkg)
		}
	}
	slices.Sort(unfinished)
	switch {
	case readErr != nil:
		fmt.Fprintf(p.out, "testprogress: reading go test's output: %v\n", readErr)
		return 1
	case len(p.failed) > 0:
		fmt.Fprintf(p.out, "FAIL: %s in %s\n", strings.Join(p.failed, ", "), time.Since(p.start).Round(time.Second))
		return 1
	case len(unfinished) > 0:
		fmt.Fprintf(p.out, "FAIL: no result for %s (go test stopped early?)\n", strings.Join(unfinished, ", "))
		return 1
	case p.passed == 0:
		fmt.Fprintln(p.out, "FAIL: no package passed: did go test run at all?")
		return 1
	}
	fmt.Fprintf(p.out, "every package passed in %s\n", time.Since(p.start).Round(time.Second))
	return 0
}
