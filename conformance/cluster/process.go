package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotRunning is returned for a fault on a node whose process is down.
var ErrNotRunning = errors.New("not running")

// Exit describes a node process that ended without the cluster asking it
// to (a crash, a failpoint, a bug).
type Exit struct {
	// Node is "controller" or "broker N"; ID is N, 0 for the controller.
	Node string
	ID   int
	// Code is the exit code, -1 if a signal ended the process.
	Code int
	// State is the process's end as the OS reports it ("exit status 3").
	State string
	// LogTail is the end of the node's log file.
	LogTail string
}

func (e Exit) String() string {
	return fmt.Sprintf("%s exited unexpectedly (%s)", e.Node, e.State)
}

// process is one `watermark serve` child, across its restarts.
type process struct {
	name    string // "broker 1", "controller"
	id      int
	binary  string
	logPath string
	onExit  func(Exit)
	logf    func(string, ...any)

	mu       sync.Mutex
	args     []string // serve flags, the same at every start
	env      []string // extra environment of the next start
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has been waited for
	expected bool          // the cluster ended this run itself
	paused   bool
	starts   int
	forced   bool // the last terminate had to kill
}

// running reports whether the process is up (it may be paused).
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

func (p *process) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// start launches the process and waits until it prints its listening line.
func (p *process) start(ctx context.Context, timeout time.Duration) error {
	p.mu.Lock()
	if p.runningLocked() {
		p.mu.Unlock()
		return fmt.Errorf("%s is already running", p.name)
	}
	p.starts++
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		return fmt.Errorf("%s: log file: %w", p.name, err)
	}
	fmt.Fprintf(logFile, "=== %s start %d at %s: %s serve %s\n", p.name, p.starts,
		time.Now().Format(time.RFC3339Nano), p.binary, strings.Join(p.args, " "))
	if len(p.env) > 0 {
		fmt.Fprintf(logFile, "=== extra environment: %s\n", strings.Join(p.env, " "))
	}
	cmd := exec.Command(p.binary, append([]string{"serve"}, p.args...)...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.mu.Unlock()
		_ = logFile.Close()
		return fmt.Errorf("%s: %w", p.name, err)
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		_ = logFile.Close()
		return fmt.Errorf("start %s (%s): %w", p.name, p.binary, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.expected, p.paused = cmd, exited, false, false
	p.mu.Unlock()

	listening := make(chan struct{})
	go p.watch(cmd, stdout, logFile, listening, exited)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-listening:
		return nil
	case <-exited:
		return fmt.Errorf("%s exited before it was listening (%s); end of %s:\n%s",
			p.name, cmd.ProcessState, p.logPath, p.tail())
	case <-timer.C:
		_ = p.kill()
		return fmt.Errorf("%s did not print its listening line within %v; end of %s:\n%s",
			p.name, timeout, p.logPath, p.tail())
	case <-ctx.Done():
		_ = p.kill()
		return fmt.Errorf("start %s: %w", p.name, ctx.Err())
	}
}

// watch copies the child's stdout to its log, tells start when the child is
// listening, then reaps the child.
func (p *process) watch(cmd *exec.Cmd, stdout io.Reader, logFile *os.File, listening, exited chan struct{}) {
	sc := bufio.NewScanner(stdout)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(logFile, line)
		if !seen && strings.Contains(line, " listening on ") {
			seen = true
			close(listening)
		}
	}
	// Drain whatever a too-long line left, so Wait does not block on it.
	_, _ = io.Copy(logFile, stdout)
	err := cmd.Wait()
	fmt.Fprintf(logFile, "=== %s exited: %s\n", p.name, cmd.ProcessState)
	_ = logFile.Close()

	p.mu.Lock()
	expected := p.expected
	close(exited)
	p.mu.Unlock()
	if expected {
		return
	}
	e := Exit{Node: p.name, ID: p.id, Code: cmd.ProcessState.ExitCode(), State: cmd.ProcessState.String(), LogTail: p.tail()}
	if err != nil && cmd.ProcessState == nil {
		e.State = err.Error()
	}
	p.logf("%s", e)
	if p.onExit != nil {
		p.onExit(e)
	}
}

// signalLocked sends sig to the child's process group.
func (p *process) signalLocked(sig syscall.Signal) error {
	if !p.runningLocked() {
		return fmt.Errorf("%s: %w", p.name, ErrNotRunning)
	}
	// The child leads its own process group (Setpgid).
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: %v: %w", p.name, sig, err)
	}
	return nil
}

// kill sends SIGKILL and waits until the process is gone. A process that
// is already down is not an error.
func (p *process) kill() error {
	p.mu.Lock()
	if !p.runningLocked() {
		p.mu.Unlock()
		return nil
	}
	p.expected = true
	err := p.signalLocked(syscall.SIGKILL)
	exited := p.exited
	p.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not exit within 10s of SIGKILL", p.name)
	}
}

// killedAfterGrace reports whether the last terminate had to kill.
func (p *process) killedAfterGrace() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forced
}

// terminate asks the process to stop (SIGTERM, waking it if paused) and
// kills it if it has not exited after grace.
func (p *process) terminate(grace time.Duration) error {
	p.mu.Lock()
	p.forced = false
	if !p.runningLocked() {
		p.mu.Unlock()
		return nil
	}
	p.expected = true
	err := p.signalLocked(syscall.SIGTERM)
	if p.paused {
		_ = p.signalLocked(syscall.SIGCONT)
		p.paused = false
	}
	exited := p.exited
	p.mu.Unlock()
	if err == nil {
		select {
		case <-exited:
			p.mu.Lock()
			p.forced = false
			p.mu.Unlock()
			return nil
		case <-time.After(grace):
		}
	}
	p.mu.Lock()
	p.forced = true
	p.mu.Unlock()
	return p.kill()
}

func (p *process) pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.signalLocked(syscall.SIGSTOP); err != nil {
		return err
	}
	p.paused = true
	return nil
}

func (p *process) resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.signalLocked(syscall.SIGCONT); err != nil {
		return err
	}
	p.paused = false
	return nil
}

// tailLines is how much of a log an error message shows.
const tailLines = 30

// tail is the end of the node's log file.
func (p *process) tail() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	defer f.Close()
	// Only the end matters, and a verbose log can be long.
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(fi.Size()-window, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	return tailOf(data, tailLines)
}

func tailOf(data []byte, n int) string {
	data = bytes.TrimRight(data, "\n")
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + string(bytes.Join(lines, []byte("\n  ")))
}
