package conformance

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/cluster"
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
	ct := &ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 6000, SettleMs: 6000, Logf: t.Logf}
	cases, err := Lookup([]string{"acks-all-leader-crash", "leader-isolated", "power-loss-minority"})
	require.NoError(t, err)
	rep, err := Check(cases, []uint64{1}, Options{Target: ct, Context: context.Background()}, time.Minute, 2, nil)
	require.NoError(t, err)
	byName := map[string]*CaseResult{}
	for _, cr := range rep.Cases {
		byName[cr.Name] = cr
		for _, r := range cr.Failed {
			t.Logf("%s seed %d: %s %v", r.Case, r.Seed, r.Verdict, r.Reasons)
		}
	}
	require.Equal(t, Holds, byName["acks-all-leader-crash"].Verdict)
	require.Equal(t, Holds, byName["leader-isolated"].Verdict)
	require.Equal(t, Skipped, byName["power-loss-minority"].Verdict)
	require.Contains(t, byName["power-loss-minority"].Skipped, "power")
	require.Equal(t, Holds, rep.Verdict)
}

// TestClusterTargetRunResult checks what one run on real processes
// reports: its target, a replay command that names it, and that the run's
// cluster directory is cleaned up when the run holds.
func TestClusterTargetRunResult(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; run without -short")
	}
	ct := &ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 4000, SettleMs: 5000}
	c := caseNamed("acks-all-leader-crash")
	r, err := RunOne(c, 3, Options{Target: ct}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, "cluster", r.Target)
	require.True(t, r.Sim.Live)
	require.Greater(t, r.Ops, 50)
	require.Contains(t, ReplayCommand(r), "--target cluster")
	// The run's cluster is removed when it holds.
	entries, err := os.ReadDir(ct.Dir)
	require.NoError(t, err)
	if r.Verdict == Holds {
		require.Empty(t, entries)
	}
}

// The kit as a Go implementation uses it: Run from a test, on the
// simulated reference and on a real reference cluster. (kfake_test.go
// runs it on a third-party broker.)
func TestRunKitOnTheSimulator(t *testing.T) {
	cases, err := Lookup([]string{"acks-all-leader-crash", "lost-answers", "coordinator-failover"})
	require.NoError(t, err)
	Run(t, Simulator, RunOptions{Cases: cases, Seeds: []uint64{1, 2}})
}

func TestRunKitOnTheClusterTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; run without -short")
	}
	cases, err := Lookup([]string{"lost-answers", "follower-restart", "power-loss-minority"})
	require.NoError(t, err)
	Run(t, &ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 6000, SettleMs: 6000},
		RunOptions{Cases: cases, ReportDir: t.TempDir()})
}

// A consumer-group case on real processes: the coordinator's broker is
// SIGKILLed while members commit; offsets survive in the replicated
// offsets topic and the group goes on from them.
func TestClusterTargetRunsAGroupCase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; run without -short")
	}
	ct := &ClusterTarget{Binary: clusterBinary, Dir: t.TempDir(), DurationMs: 10000, SettleMs: 8000, Logf: t.Logf}
	r, err := RunOne(caseNamed("coordinator-failover"), 1, Options{Target: ct}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, Holds, r.Verdict, "%v", r.Reasons)
	require.Positive(t, r.Sim.Stats.Crashes)
	require.Positive(t, r.Sim.Stats.Commits)
}
