package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cancelOnWrite cancels a check's context the first time the check writes
// progress: the moment its first run has started.
type cancelOnWrite struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	b      strings.Builder
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel()
	return w.b.Write(p)
}

// Ctrl-C during a check finishes the run in flight, abandons the rest,
// prints the table and writes the report of what ran, says how to go on,
// and exits 130.
func TestCheckInterruptedReportsWhatRan(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errOut := &cancelOnWrite{cancel: cancel}
	var out strings.Builder
	dir := t.TempDir()
	code := check(ctx, []string{"--case", "follower-restart", "--seeds", "50", "--workers", "1", "--report-dir", dir}, &out, errOut)
	require.Equal(t, exitInterrupted, code, out.String()+errOut.b.String())
	assert.Contains(t, out.String(), "follower-restart")
	assert.Contains(t, out.String(), "1 run in")
	assert.Contains(t, errOut.b.String(), "interrupted after 1 of 50 runs")
	assert.Contains(t, errOut.b.String(), "check --case follower-restart --seeds 50")
	_, err := os.Stat(filepath.Join(dir, "index.html"))
	assert.NoError(t, err, "the summary page is written for what ran")
}

// The table fits a terminal's 100 columns, however much a case tolerates.
func TestCheckTableFitsAHundredColumns(t *testing.T) {
	code, out, errOut := runCLI("check", "--case", "unclean-election/on", "--seeds", "2", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, out+errOut)
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len(line), 100, "%q", line)
	}
	assert.Contains(t, out, "more", "the long list of allowed anomalies is shortened")
}

// A CI system's job timeout stops a check with SIGTERM: the check reports
// what ran and writes its summary as for Ctrl-C, and exits 143, as a shell
// reports a command SIGTERM ended.
func TestCheckTerminatedReportsWhatRan(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(self, "check", "--case", "follower-restart", "--seeds", "200", "--workers", "1", "--report-dir", dir)
	cmd.Env = append(os.Environ(), asCLI+"=1")
	var out strings.Builder
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var errOut strings.Builder
	first := make([]byte, 1)
	_, err = io.ReadFull(stderr, first) // progress: the first run started
	require.NoError(t, err)
	errOut.Write(first)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_, _ = io.Copy(&errOut, stderr)
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out.String()+errOut.String())
	assert.Equal(t, exitTerminated, exit.ExitCode(), out.String()+errOut.String())
	assert.Contains(t, out.String(), "follower-restart")
	assert.Contains(t, errOut.String(), "interrupted after")
	_, err = os.Stat(filepath.Join(dir, "index.html"))
	assert.NoError(t, err, "the summary page is written for what ran")
}
