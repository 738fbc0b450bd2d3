package conformance

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/watermarkhq/watermark/conformance/sim"
)

// kfakeExpected is franz-go's kfake, run in-process as a third-party
// broker, case by case: the table of conformance/KIT.md. kfake keeps one
// in-memory log per partition and does not replicate, and the harness
// cannot crash, pause or cut off its brokers, so every case built on
// broker faults is skipped; what is left is checked like any broker.
// A change in kfake's results fails TestKfakeTable, so the table stays
// true. Runs on kfake take real time on a shared machine, so where a row
// was seen to vary between runs here, it lists every verdict seen; any
// other verdict, and a case run or skipped contrary to the table, fails.
var kfakeExpected = map[string][]Verdict{
	"no-faults":              {Holds},
	"long-poll":              {Holds},
	"reconsume":              {Holds},
	"at-least-once-consumer": {Holds},
	"at-most-once-consumer":  {Holds},
	"producer-restart":       {Holds},
	// In some runs (2 of 6 here) the idempotent producer's sends to a partition
	// landed out of order (nonmonotonic-send) after kfake stalled its
	// answers for seconds and the producer took a new producer id; the
	// reference holds on the same schedule. Not yet explained.
	"lost-answers": {Holds, Violated},
	// A member dies without leaving: in every run here either no member
	// was assigned its partitions within two session timeouts (12 s), or
	// the group had not consumed to the end when the run ended.
	"group-member-crash": {Unknown},
}

func TestKfakeTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fault-free cases on kfake in real time; run without -short")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	defer c.Close()
	target := &KafkaTarget{Bootstrap: c.ListenAddrs(), DurationMs: 12000, SettleMs: 8000, Prefix: "kfake"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := Check(Cases, []uint64{1}, Options{Target: target, Context: ctx}, time.Minute, 1, nil)
	require.NoError(t, err)
	var diffs, table []string
	for _, cr := range rep.Cases {
		want, ok := kfakeExpected[cr.Name]
		if !ok {
			want = []Verdict{Skipped}
		}
		line := fmt.Sprintf("%-24s %-8s", cr.Name, cr.Verdict)
		switch cr.Verdict {
		case Skipped:
			line += " " + cr.Skipped
		default:
			for _, r := range cr.Failed {
				line += " " + strings.Join(r.Reasons, "; ")
			}
		}
		table = append(table, line)
		if !slices.Contains(want, cr.Verdict) {
			diffs = append(diffs, fmt.Sprintf("%s: kfake %s, the table says %v", cr.Name, cr.Verdict, want))
		}
		if cr.Verdict == Skipped {
			require.NotEmpty(t, cr.Skipped, "%s: skipped without a reason", cr.Name)
		}
	}
	sort.Strings(table)
	t.Logf("kfake, case by case:\n%s", strings.Join(table, "\n"))
	require.Empty(t, diffs, "kfake's results changed: update kfakeExpected and the table in conformance/KIT.md")
}

// TestKafkaTargetFailsFastWithoutABroker: a bootstrap address where nothing
// listens is an error that says so, within seconds, not a hang or a pass.
func TestKafkaTargetFailsFastWithoutABroker(t *testing.T) {
	target := &KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}}
	start := time.Now()
	_, _, err := target.Probe(context.Background())
	require.ErrorIs(t, err, ErrNoBroker)
	require.ErrorContains(t, err, "127.0.0.1:1")
	require.Less(t, time.Since(start), 15*time.Second)

	_, err = RunOne(caseNamed("no-faults"), 1, Options{Target: target}, time.Minute)
	require.ErrorIs(t, err, ErrNoBroker)
}

// TestCapabilitiesSkipWithTheReason: a target without fault commands skips
// the fault cases, naming the commands that would run them.
func TestCapabilitiesSkipWithTheReason(t *testing.T) {
	target := &KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}}
	r, err := RunOne(caseNamed("acks-all-leader-crash"), 1, Options{Target: target}, time.Minute)
	require.NoError(t, err, "skipped before anything is dialled")
	require.Equal(t, Skipped, r.Verdict)
	require.Contains(t, r.Reasons[0], "--kill-cmd and --restart-cmd")

	target.KillCmd, target.RestartCmd = "true", "true"
	require.True(t, target.Capabilities().Crash)
	require.Empty(t, missing(caseNamed("acks-all-leader-crash").config(1, Options{}), target.Capabilities()))
	require.Contains(t, missing(caseNamed("leader-isolated").config(1, Options{}), target.Capabilities()), "--isolate-cmd")
}

// TestKafkaTargetSlowsBrokersThroughItsProxies: the harness reaches every
// broker of a kafka target through a proxy of its own, so it can slow a
// broker's links to the clients; here kfake's, under the no-faults
// workload, still holds.
func TestKafkaTargetSlowsBrokersThroughItsProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("real time; run without -short")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	defer c.Close()
	target := &KafkaTarget{Bootstrap: c.ListenAddrs(), DurationMs: 4000, SettleMs: 4000, Prefix: "slow"}
	require.True(t, target.Capabilities().Slow)
	slow := Case{Name: "slow-leader", Config: func(seed uint64) sim.Config {
		cfg := base(seed)
		cfg.Faults = []sim.Fault{{When: sim.Trigger{AtMs: 500}, Kind: sim.FaultSlow, Role: sim.RoleLeader, ForMs: 2000, DelayMs: 300}}
		return cfg
	}}
	r, err := RunOne(&slow, 1, Options{Target: target, Context: context.Background()}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, Holds, r.Verdict, "%v", r.Reasons)
	slowed := slices.ContainsFunc(r.Sim.Notes, func(n sim.Note) bool { return strings.HasPrefix(n.Text, "slow broker") })
	require.True(t, slowed, "no broker was slowed: %v", r.Sim.Notes)
	require.Positive(t, r.Sim.Stats.Faults)
}
