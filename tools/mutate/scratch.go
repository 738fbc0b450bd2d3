package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// stepTimeout bounds one build, one check and one unit-test run.
const stepTimeout = 10 * time.Minute

// file is one file of the working tree, as read when the run started.
type file struct {
	path string // relative to the root, slash-separated
	mode fs.FileMode
	data []byte
}

// tree is the working tree every mutant starts from: the tracked files and
// the untracked ones git does not ignore, so that uncommitted work is
// measured. It is read once, so every mutant of a run starts from the same
// tree even while others edit it.
type tree struct {
	root  string
	files []file
	index map[string]int // path -> files index
}

// readTree snapshots the working tree of the git repository at root.
func readTree(ctx context.Context, root string) (*tree, error) {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	t := &tree{root: root, index: map[string]int{}}
	for _, p := range strings.Split(string(out), "\x00") {
		if p == "" {
			continue
		}
		if _, dup := t.index[p]; dup {
			continue
		}
		name := filepath.Join(root, filepath.FromSlash(p))
		info, err := os.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked, but deleted in the working tree
		}
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		t.index[p] = len(t.files)
		t.files = append(t.files, file{path: p, mode: info.Mode().Perm(), data: data})
	}
	return t, nil
}

// source returns a file's contents in the snapshot.
func (t *tree) source(p string) ([]byte, bool) {
	i, ok := t.index[path.Clean(p)]
	if !ok {
		return nil, false
	}
	return t.files[i].data, true
}

// write puts the snapshot into dir, with file p's contents replaced by
// data (none when p is "").
func (t *tree) write(dir, p string, data []byte) error {
	for _, f := range t.files {
		name := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		content := f.data
		if f.path == p {
			content = data
		}
		if err := os.WriteFile(name, content, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// toolchain is how mutants are built, as `make build` builds bin/watermark:
// failpoints compiled in by failpoint-toolexec, with the failpoint build's
// own cache (shared by every mutant, so builds are incremental).
type toolchain struct {
	goBin    string
	cache    string // GOCACHE for failpoint builds
	toolexec string
}

func findToolchain(ctx context.Context) (toolchain, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return toolchain{}, err
	}
	out, err := exec.CommandContext(ctx, goBin, "env", "GOCACHE", "GOPATH").Output()
	if err != nil {
		return toolchain{}, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] == "" || lines[1] == "" {
		return toolchain{}, fmt.Errorf("go env GOCACHE GOPATH: %q", out)
	}
	gopath := filepath.SplitList(lines[1])[0]
	tc := toolchain{goBin: goBin, cache: lines[0] + "-failpoint", toolexec: filepath.Join(gopath, "bin", "failpoint-toolexec")}
	if _, err := os.Stat(tc.toolexec); err != nil {
		return toolchain{}, fmt.Errorf("%s: %w (make tools installs it)", tc.toolexec, err)
	}
	return tc, nil
}

// run runs a command in dir with the failpoint cache, and returns its
// stdout; on failure the error carries the end of its stderr.
func (tc toolchain) run(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOCACHE="+tc.cache)
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %s", stepTimeout)
	}
	if err != nil {
		return stdout.Bytes(), &runError{err: err, stderr: tail(stderr.String(), 12)}
	}
	return stdout.Bytes(), nil
}

// runError is a command that failed, with the end of what it printed.
type runError struct {
	err    error
	stderr string
}

func (e *runError) Error() string {
	if e.stderr == "" {
		return e.err.Error()
	}
	return e.err.Error() + ":\n" + e.stderr
}

func (e *runError) Unwrap() error { return e.err }

// exitCode is a failed command's exit status, or -1 if it did not exit.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// tail returns the last n lines of s, indented.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return "    " + strings.Join(lines, "\n    ")
}

// build compiles the watermark command in dir to dir/watermark.
func (tc toolchain) build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "watermark")
	_, err := tc.run(ctx, dir, nil, tc.goBin, "build", "-toolexec="+tc.toolexec, "-buildvcs=auto", "-o", bin, "./tools/watermark")
	if err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	return bin, nil
}

// checkReport is what `watermark check --json` prints that the runner
// reads.
type checkReport struct {
	Verdict string `json:"verdict"`
	Cases   []struct {
		Name    string `json:"name"`
		Verdict string `json:"verdict"`
	} `json:"cases"`
}

// checkResult is one check: the cases violated and those unknown.
type checkResult struct {
	violated []string
	unknown  []string
}

// check runs `watermark check` with the built binary. Exit status 0 is
// every case holding and 1 a case violated or unknown (the JSON says
// which); anything else, or output that is not the report, is an error.
func (tc toolchain) check(ctx context.Context, dir, bin string, seeds int, extra []string) (checkResult, error) {
	args := []string{"check", "--seeds", fmt.Sprint(seeds), "--quiet", "--json", "--report-dir", filepath.Join(dir, "report")}
	args = append(args, extra...)
	out, err := tc.run(ctx, dir, nil, bin, args...)
	if err != nil && exitCode(err) != 1 {
		return checkResult{}, fmt.Errorf("check: %w", err)
	}
	var rep checkReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil || rep.Verdict == "" {
		if err != nil {
			return checkResult{}, fmt.Errorf("check: %w", err)
		}
		return checkResult{}, fmt.Errorf("check: not a JSON report (%v): %s", jerr, tail(string(out), 5))
	}
	var res checkResult
	for _, c := range rep.Cases {
		switch c.Verdict {
		case "violated":
			res.violated = append(res.violated, c.Name)
		case "unknown":
			res.unknown = append(res.unknown, c.Name)
		}
	}
	if err != nil && len(res.violated) == 0 && len(res.unknown) == 0 {
		return checkResult{}, fmt.Errorf("check exited 1 with every case holding: %w", err)
	}
	return res, nil
}

// checkRandom runs `watermark check --random n` with the built binary.
func (tc toolchain) checkRandom(ctx context.Context, dir, bin string, n int) (checkResult, error) {
	out, err := tc.run(ctx, dir, nil, bin, "check", "--random", fmt.Sprint(n), "--quiet", "--json", "--report-dir", filepath.Join(dir, "report-random"))
	if err != nil && exitCode(err) != 1 {
		return checkResult{}, fmt.Errorf("check --random: %w", err)
	}
	var rep checkReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil || rep.Verdict == "" {
		return checkResult{}, fmt.Errorf("check --random: not a JSON report (%v): %s", jerr, tail(string(out), 5))
	}
	var res checkResult
	for _, c := range rep.Cases {
		switch c.Verdict {
		case "violated":
			res.violated = append(res.violated, c.Name)
		case "unknown":
			res.unknown = append(res.unknown, c.Name)
		}
	}
	return res, nil
}

// unitTests runs the unit tests of the package holding file p, with
// failpoints compiled in as `make test` runs them, and reports whether they
// failed, with the first failing test. A mutant that does not compile is
// an error, as it is for check.
func (tc toolchain) unitTests(ctx context.Context, dir, p string) (failed bool, first string, err error) {
	pkg := "./" + path.Dir(p)
	env := []string{"WATERMARK_REQUIRE_FAILPOINTS=1"}
	out, err := tc.run(ctx, dir, env, tc.goBin, "test", "-toolexec="+tc.toolexec, "-count=1", pkg)
	if err == nil {
		return false, "", nil
	}
	if exitCode(err) != 1 || bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
		return false, "", fmt.Errorf("go test %s: %w", pkg, err)
	}
	return true, firstFailure(string(out)), nil
}

// firstFailure picks the first failing test's name out of go test's output.
func firstFailure(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(strings.TrimSpace(l), "--- FAIL: "); ok {
			return strings.Fields(f)[0]
		}
	}
	return "a test failed"
}
