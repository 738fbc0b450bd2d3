package live

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/traffic"
)

// signalsOnly is a Cluster of signals and proxies: no DiskReplacer, no
// Stopper. Every fault it is asked for succeeds.
type signalsOnly struct{}

func (signalsOnly) Brokers() int                        { return 3 }
func (signalsOnly) Kill(int) error                      { return nil }
func (signalsOnly) Restart(int) error                   { return nil }
func (signalsOnly) Pause(int) error                     { return nil }
func (signalsOnly) Resume(int) error                    { return nil }
func (signalsOnly) Isolate(int) error                   { return nil }
func (signalsOnly) Heal() error                         { return nil }
func (signalsOnly) SetLatency(int, time.Duration) error { return nil }
func (signalsOnly) How(run.FaultKind, int) string       { return "a signal" }

// A fault the live runner has no primitive for fails as it strikes with
// an error that names the fault, the broker and the runner; and its
// definition refuses it on what real processes offer before any run.
func TestLiveCannotStrikeWhatItLacks(t *testing.T) {
	spec := run.DefaultSpec(1)
	l := &live{World: traffic.World{Spec: spec}, opts: Options{Cluster: signalsOnly{}},
		faulted: make([]int, 4), down: make([]bool, 4), paused: make([]bool, 4), stopping: make([]bool, 4)}
	l.Host = l
	for _, c := range []struct {
		f    run.Fault
		want string
	}{
		{run.Fault{Kind: run.FaultPowerLoss, Node: 1}, "powerloss broker 1 failed: the live runner cannot cut a machine's power"},
		{run.Fault{Kind: run.FaultPowerLossAll}, "powerloss-all failed: the live runner cannot cut the machines' power"},
		{run.Fault{Kind: run.FaultMessages, Node: 2, Messages: &run.MessageFault{Drop: 1}}, "messages broker 2 failed: the live runner cannot strike single messages"},
		{run.Fault{Kind: run.FaultReplaceDisk, Node: 3}, "replace-disk broker 3 failed: the live runner cannot replace a broker's disk: its Cluster is no DiskReplacer (live.signalsOnly)"},
		{run.Fault{Kind: run.FaultStop, Node: 3}, "stop broker 3 failed: the live runner cannot stop a broker cleanly: its Cluster is no Stopper"},
	} {
		err := run.Def(c.f.Kind).Inject(l, &l.Spec, c.f)
		require.ErrorContains(t, err, c.want)
	}
	for _, k := range []run.FaultKind{run.FaultPowerLoss, run.FaultPowerLossAll, run.FaultMessages} {
		require.Error(t, run.Def(k).Available(Capabilities), "%s on real processes", k)
	}
	// What it has, it strikes.
	require.NoError(t, run.Def(run.FaultCrash).Inject(l, &l.Spec, run.Fault{Kind: run.FaultCrash, Node: 1}))
	require.True(t, l.down[1])
	require.NoError(t, run.Def(run.FaultCrash).Available(Capabilities))
}
