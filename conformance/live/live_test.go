package live_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/live"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafkaclient"
	"github.com/watermarkhq/watermark/impl/node"
	"github.com/watermarkhq/watermark/linearizability"
)

// liveConfig is a short run of the default workload for real time.
func liveConfig(seed uint64) run.Spec {
	cfg := run.DefaultSpec(seed)
	cfg.DurationMs = 4000
	cfg.SettleMs = 4000
	cfg.RestartAfterMs = 800
	cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultCrash}, Role: run.RoleLeader, IntervalMs: 1500, FaultMs: 800, MaxFaulty: 1}
	return cfg
}

func startLocal(t *testing.T, cfg run.Spec) *node.LocalCluster {
	t.Helper()
	lc, err := node.StartLocalCluster(node.LocalOptions{
		Brokers:    cfg.Brokers,
		Dir:        t.TempDir(),
		Broker:     func(int) broker.Config { return broker.Config{Settings: cfg.Broker} },
		Controller: cfg.Controller,
	})
	require.NoError(t, err)
	t.Cleanup(lc.Close)
	return lc
}

func TestRunLiveAgainstAnInProcessCluster(t *testing.T) {
	cfg := liveConfig(7)
	lc := startLocal(t, cfg)
	cl, err := kafkaclient.NewClient(lc.Bootstrap())
	require.NoError(t, err)
	defer cl.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := live.Run(ctx, cfg, live.Options{Cluster: inProcess{lc}, Net: cl})
	require.NoError(t, err)
	for _, n := range res.Notes {
		t.Logf("%6d ms  %s", n.AtMs, n.Text)
	}
	require.Positive(t, res.Stats.Crashes, "the nemesis never struck")
	require.True(t, res.Stats.FinalReadDone, "the final read did not finish")
	acked := 0
	for _, op := range res.History {
		if op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeOK {
			acked++
		}
	}
	require.Greater(t, acked, 20, "too few acknowledged writes to mean anything")
	anomalies := linearizability.CheckAnomalies(res.History)
	require.Empty(t, anomalies, "the reference over TCP must hold: %v", anomalies)
}

func TestLiveUnsupportedNamesTheReason(t *testing.T) {
	cfg := run.DefaultSpec(1)
	require.Empty(t, live.Unsupported(cfg))
	cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultPowerLoss}}
	require.Contains(t, live.Unsupported(cfg), "power")
	cfg = run.DefaultSpec(1)
	cfg.Network.ResponseDropRate = 0.1
	require.Empty(t, live.Unsupported(cfg), "lost answers are the live runner's own doing")
	cfg.Network.DropRate = 0.1
	require.Contains(t, live.Unsupported(cfg), "drops single messages")
	_, err := live.Run(context.Background(), cfg, live.Options{})
	require.ErrorContains(t, err, "cannot run on real processes")
}

// inProcess is a cluster of brokers in this process as the live runner
// faults it.
type inProcess struct{ *node.LocalCluster }

func (inProcess) How(run.FaultKind, int) string { return "in process" }
