package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafkawire"
	"github.com/watermarkhq/watermark/impl/node"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/linearizability"
)

// liveConfig is a short run of the default workload for real time.
func liveConfig(seed uint64) sim.Config {
	cfg := sim.DefaultConfig(seed)
	cfg.DurationMs = 4000
	cfg.SettleMs = 4000
	cfg.RestartAfterMs = 800
	cfg.Nemesis = sim.Nemesis{Kinds: []sim.FaultKind{sim.FaultCrash}, Role: sim.RoleLeader, IntervalMs: 1500, FaultMs: 800, MaxFaulty: 1}
	return cfg
}

func startLocal(t *testing.T, cfg sim.Config) *node.LocalCluster {
	t.Helper()
	lc, err := node.StartLocalCluster(node.LocalOptions{
		Brokers: cfg.Brokers,
		Dir:     t.TempDir(),
		Broker: func(id int) broker.Config {
			p := partition.DefaultConfig(int32(id))
			p.MinInsyncReplicas = cfg.Broker.MinInsyncReplicas
			p.ReplicaLagTimeMaxMs = cfg.Broker.ReplicaLagTimeMaxMs
			p.ReplicaFetchWaitMaxMs = cfg.Broker.ReplicaFetchWaitMaxMs
			p.RequestTimeoutMs = cfg.Broker.RequestTimeoutMs
			return broker.Config{Partition: p, HeartbeatIntervalMs: cfg.Broker.HeartbeatIntervalMs, HWCheckpointIntervalMs: cfg.Broker.HWCheckpointIntervalMs}
		},
		Controller: controller.Config{SessionTimeoutMs: cfg.Controller.SessionTimeoutMs},
	})
	require.NoError(t, err)
	t.Cleanup(lc.Close)
	return lc
}

func TestRunLiveAgainstAnInProcessCluster(t *testing.T) {
	cfg := liveConfig(7)
	lc := startLocal(t, cfg)
	cl, err := kafkawire.NewClient(lc.Bootstrap())
	require.NoError(t, err)
	defer cl.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := sim.RunLive(ctx, cfg, sim.LiveOptions{Cluster: lc, Net: cl})
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
	cfg := sim.DefaultConfig(1)
	require.Empty(t, sim.LiveUnsupported(cfg))
	cfg.Nemesis = sim.Nemesis{Kinds: []sim.FaultKind{sim.FaultPowerLoss}}
	require.Contains(t, sim.LiveUnsupported(cfg), "power")
	cfg = sim.DefaultConfig(1)
	cfg.Network.ResponseDropRate = 0.1
	require.Empty(t, sim.LiveUnsupported(cfg), "lost answers are the live runner's own doing")
	cfg.Network.DropRate = 0.1
	require.Contains(t, sim.LiveUnsupported(cfg), "drops single messages")
	_, err := sim.RunLive(context.Background(), cfg, sim.LiveOptions{})
	require.ErrorContains(t, err, "cannot run on real processes")
}
