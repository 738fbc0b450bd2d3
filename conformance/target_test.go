package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/report"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/targets"
	"github.com/watermarkhq/watermark/failpoints"
)

// clusterBinary is built (or taken from WATERMARK_BIN) once for the
// package's tests that start real processes.
var clusterBinary string

func TestMain(m *testing.M) {
	bin, cleanup, err := cluster.TestBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	clusterBinary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// TestClusterTargetRunsCasesOnRealProcesses runs cases end to end on real
// `watermark serve` processes: a leader crash by SIGKILL, a paused
// follower (SIGSTOP) and an isolated leader (proxies), judged like the
// simulator's runs; and a power-loss case, which real processes cannot do,
// is reported skipped with its reason.
func TestClusterTargetRunsCasesOnRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes for about a minute; run without -short")
	}
	ct := &targets.ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 10000, SettleMs: 6000, Logf: t.Logf} // long enough that a crash leaves the failover bound (2 sessions) inside the run
	list, err := cases.Lookup([]string{"acks-all-leader-crash", "leader-isolated", "power-loss-minority"})
	require.NoError(t, err)
	rep, err := conformance.Check(list, []uint64{1}, conformance.Options{Target: ct, Context: context.Background(), CheckTimeout: time.Minute, Workers: 2})
	require.NoError(t, err)
	byName := map[string]*conformance.CaseResult{}
	for _, cr := range rep.Cases {
		byName[cr.Name] = cr
		for _, r := range cr.Failed {
			t.Logf("%s seed %d: %s %v", r.Case, r.Seed, r.Verdict, r.Reasons)
		}
	}
	require.Equal(t, conformance.Holds, byName["acks-all-leader-crash"].Verdict)
	require.Equal(t, conformance.Holds, byName["leader-isolated"].Verdict)
	require.Equal(t, conformance.Skipped, byName["power-loss-minority"].Verdict)
	require.Contains(t, byName["power-loss-minority"].Skipped, "power")
	require.Equal(t, conformance.Holds, rep.Verdict)
}

// TestClusterTargetRunResult checks what one run on real processes
// reports: its target, a replay command that names it, and that the run's
// cluster directory is cleaned up when the run holds.
func TestClusterTargetRunResult(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; run without -short")
	}
	ct := &targets.ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 4000, SettleMs: 5000}
	c := caseNamed(t, "acks-all-leader-crash")
	r, err := conformance.RunOne(c, 3, conformance.Options{Target: ct, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, "cluster", r.Target)
	require.True(t, r.Run.Live)
	require.Greater(t, r.Ops, 50)
	require.Contains(t, r.Replay, "--target cluster")
	// The run's cluster is removed when it holds.
	entries, err := os.ReadDir(ct.Dir)
	require.NoError(t, err)
	if r.Verdict == conformance.Holds {
		require.Empty(t, entries)
	}
}

// The kit as a Go implementation uses it: conformance.Run from a test, on the
// simulated reference and on a real reference cluster. (kfake_test.go
// runs it on a third-party broker.)
func TestRunKitOnTheSimulator(t *testing.T) {
	list, err := cases.Lookup([]string{"acks-all-leader-crash", "lost-answers", "coordinator-failover"})
	require.NoError(t, err)
	conformance.Run(t, targets.Simulator, conformance.RunOptions{Cases: list, Seeds: []uint64{1, 2}})
}

func TestRunKitOnTheClusterTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; run without -short")
	}
	list, err := cases.Lookup([]string{"lost-answers", "follower-restart", "power-loss-minority"})
	require.NoError(t, err)
	conformance.Run(t, &targets.ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 6000, SettleMs: 6000},
		conformance.RunOptions{Cases: list, ReportDir: t.TempDir()})
}

// A consumer-group case on real processes: the coordinator's broker is
// SIGKILLed while members commit; offsets survive in the replicated
// offsets topic and the group goes on from them.
func TestClusterTargetRunsAGroupCase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; run without -short")
	}
	ct := &targets.ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 10000, SettleMs: 8000, Logf: t.Logf}
	r, err := conformance.RunOne(caseNamed(t, "coordinator-failover"), 1, conformance.Options{Target: ct, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, conformance.Holds, r.Verdict, "%v", r.Reasons)
	require.Positive(t, r.Run.Stats.Crashes)
	require.Positive(t, r.Run.Stats.Commits)
}

// The replaced-disk case on real processes: a broker is killed, its data
// directory emptied, and it restarts on nothing; it catches up before it
// rejoins the ISR, and nothing acknowledged is lost.
func TestClusterTargetReplacesADisk(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; run without -short")
	}
	ct := &targets.ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 8000, SettleMs: 6000, Logf: t.Logf}
	r, err := conformance.RunOne(caseNamed(t, "replaced-disk"), 1, conformance.Options{Target: ct, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, conformance.Holds, r.Verdict, "%v", r.Reasons)
	require.Positive(t, r.Run.Stats.DiskReplacements)
}

// allFaults declares every capability, failpoints included, as a Go
// implementation's Faults value might.
type allFaults struct{}

func (allFaults) Capabilities() conformance.Capabilities { return conformance.AllCapabilities }

// A case that switches failpoints at exact protocol steps is skipped, with
// the reason and where it does run, on every target but the simulator: the
// real reference cluster (its processes have failpoints, but the harness
// cannot switch them at a step across processes) and any Kafka cluster,
// even one whose Faults claims every capability. It is skipped before the
// target is asked to run anything: no binary, no broker is needed.
func TestFailpointCasesSkipWithoutTheCapability(t *testing.T) {
	c := caseNamed(t, "kip101-data-loss")
	require.NotEmpty(t, c.Spec(1).Failpoints, "the case must switch failpoints for this test to mean anything")
	for name, target := range map[string]conformance.Target{
		"cluster":            &targets.ClusterTarget{Binary: "/nonexistent/watermark"},
		"kafka":              &conformance.KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}},
		"kafka-claiming-all": &conformance.KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}, Faults: allFaults{}},
	} {
		t.Run(name, func(t *testing.T) {
			require.False(t, target.Capabilities().Failpoints)
			r, err := conformance.RunOne(c, 1, conformance.Options{Target: target, CheckTimeout: time.Minute})
			require.NoError(t, err, "skipped before the target runs anything")
			require.Equal(t, conformance.Skipped, r.Verdict)
			require.Len(t, r.Reasons, 1)
			require.Contains(t, r.Reasons[0], "switching failpoints")
			require.Contains(t, r.Reasons[0], "--target sim")
		})
	}
	// A case without failpoints is not held back by the missing capability:
	// the target is asked to run it (and fails without its binary: an
	// error verdict naming the binary).
	r, err := conformance.RunOne(caseNamed(t, "acks-all-leader-crash"), 1, conformance.Options{Target: &targets.ClusterTarget{Binary: "/nonexistent/watermark"}})
	require.NoError(t, err)
	require.Equal(t, conformance.Error, r.Verdict)
	require.Contains(t, r.Reasons[0], "/nonexistent/watermark")
}

// failingTarget is the simulator, except that the runs with no scheduled
// faults fail to be set up, as a broker that refuses to create a topic does.
type failingTarget struct {
	conformance.Target
}

func (f failingTarget) Run(ctx context.Context, s run.Spec) (*run.Result, error) {
	if len(s.Faults) == 0 && len(s.Nemesis.Kinds) == 0 {
		return nil, errors.New("create topic t-0: NOT_CONTROLLER")
	}
	return f.Target.Run(ctx, s)
}

// A run that cannot be set up is an error verdict of its own case, with
// the error, and the check goes on to judge every other case: one setup
// failure never throws away a finished check.
func TestSetupErrorIsACaseVerdictAndTheCheckGoesOn(t *testing.T) {
	list := []conformance.Case{*caseNamed(t, "no-faults"), *caseNamed(t, "follower-restart")}
	require.Empty(t, list[0].Spec(1).Faults)
	require.Empty(t, list[0].Spec(1).Nemesis.Kinds)
	require.NotEmpty(t, list[1].Spec(1).Nemesis.Kinds)
	rep, err := conformance.Check(list, []uint64{1, 2}, conformance.Options{
		Target: failingTarget{Target: targets.Simulator}, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 4, rep.Runs, "every run is counted")
	require.Equal(t, conformance.Error, rep.Cases[0].Verdict)
	require.Len(t, rep.Cases[0].Failed, 2)
	assert.Contains(t, rep.Cases[0].Failed[0].Reasons[0], "NOT_CONTROLLER")
	assert.NotEmpty(t, rep.Cases[0].Failed[0].Replay)
	assert.Equal(t, conformance.Holds, rep.Cases[1].Verdict, "the other case is judged")
	assert.Equal(t, conformance.Error, rep.Verdict, "not a pass")

	// Its report folder holds the verdict and the replay line, no history.
	dir, err := report.WriteRun(t.TempDir(), rep.Cases[0].Failed[0], &list[0])
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "verdict.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "NOT_CONTROLLER")
	var junit strings.Builder
	require.NoError(t, report.WriteJUnit(&junit, rep, "sim"))
	assert.Contains(t, junit.String(), `type="error"`)
}

// The simulator offers failpoints, so the same case runs there and holds.
func TestSimulatorRunsFailpointCases(t *testing.T) {
	c := caseNamed(t, "kip101-data-loss")
	require.True(t, targets.Simulator.Capabilities().Failpoints)
	failpoints.Require(t)
	r, err := conformance.RunOne(c, 1, conformance.Options{Target: targets.Simulator, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, conformance.Holds, r.Verdict, "%v", r.Reasons)
	require.Positive(t, r.Run.Stats.FailpointsFired)
}

// The kit names no default target: a check without one is refused with
// what to set, not run on a simulator a third party's build would have
// to compile.
func TestATargetIsRequired(t *testing.T) {
	list := cases.Cases
	_, err := conformance.RunOne(&list[0], 1, conformance.Options{})
	require.ErrorIs(t, err, conformance.ErrNoTarget)
	_, err = conformance.Check(list[:1], []uint64{1}, conformance.Options{})
	require.ErrorIs(t, err, conformance.ErrNoTarget)
}
