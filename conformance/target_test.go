package conformance

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/cluster"
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

// allFaults declares every capability, failpoints included, as a Go
// implementation's Faults value might.
type allFaults struct{}

func (allFaults) Capabilities() Capabilities { return AllCapabilities }

// A case that switches failpoints at exact protocol steps is skipped, with
// the reason and where it does run, on every target but the simulator: the
// real reference cluster (its processes have failpoints, but the harness
// cannot switch them at a step across processes) and any Kafka cluster,
// even one whose Faults claims every capability. It is skipped before the
// target is asked to run anything: no binary, no broker is needed.
func TestFailpointCasesSkipWithoutTheCapability(t *testing.T) {
	c := caseNamed("kip101-data-loss")
	require.NotEmpty(t, c.Config(1).Failpoints, "the case must switch failpoints for this test to mean anything")
	for name, target := range map[string]Target{
		"cluster":            &ClusterTarget{Binary: "/nonexistent/watermark"},
		"kafka":              &KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}},
		"kafka-claiming-all": &KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}, Faults: allFaults{}},
	} {
		t.Run(name, func(t *testing.T) {
			require.False(t, target.Capabilities().Failpoints)
			r, err := RunOne(c, 1, Options{Target: target}, time.Minute)
			require.NoError(t, err, "skipped before the target runs anything")
			require.Equal(t, Skipped, r.Verdict)
			require.Len(t, r.Reasons, 1)
			require.Contains(t, r.Reasons[0], "switching failpoints")
			require.Contains(t, r.Reasons[0], "--target sim")
		})
	}
	// A case without failpoints is not held back by the missing capability.
	require.Empty(t, missing(caseNamed("acks-all-leader-crash").config(1, Options{}), (&ClusterTarget{}).Capabilities()))
}

// The simulator offers failpoints, so the same case runs there and holds.
func TestSimulatorRunsFailpointCases(t *testing.T) {
	c := caseNamed("kip101-data-loss")
	require.True(t, Simulator.Capabilities().Failpoints)
	require.Empty(t, missing(c.config(1, Options{}), Simulator.Capabilities()))
	failpoints.Require(t)
	r, err := RunOne(c, 1, Options{Target: Simulator}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, Holds, r.Verdict, "%v", r.Reasons)
	require.Positive(t, r.Sim.Stats.FailpointsFired)
}
