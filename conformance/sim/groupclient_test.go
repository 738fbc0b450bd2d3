package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

func groupConfig(seed uint64, mode run.CommitMode) run.Spec {
	cfg := run.DefaultSpec(seed)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 4, ReplicationFactor: 3}}
	cfg.Workload.Consumers = 0
	cfg.Workload.GroupConsumers = 3
	cfg.Workload.Group = "g"
	cfg.Workload.CommitMode = mode
	cfg.Workload.ConsumerSessionTimeoutMs = 1500
	cfg.Workload.ProcessPerTick = 2
	cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultCrashConsumer}, IntervalMs: 3000, FaultMs: 2000, MaxFaulty: 1}
	return cfg
}

func counts(as []linearizability.Anomaly) map[string]int {
	m := map[string]int{}
	for _, a := range as {
		m[a.Name]++
	}
	return m
}

func TestGroupConsumersAtLeastOnce(t *testing.T) {
	res, err := Run(groupConfig(1, run.CommitAfterProcess))
	require.NoError(t, err)
	require.NoError(t, linearizability.Validate(res.History))
	require.Nil(t, firstViolation(res), "%v", firstViolation(res))
	require.Positive(t, res.Stats.ConsumerCrashes)
	require.Greater(t, res.Stats.Rebalances, 3)
	require.Positive(t, res.Stats.Commits)
	c := counts(linearizability.CheckAnomalies(res.History))
	delete(c, linearizability.AnomalyReprocessed)
	require.Empty(t, c, "only reprocessing is allowed at least once")
	lin := linearizability.CheckLinearizability(res.History, 0)
	require.Equal(t, linearizability.VerdictOK, lin.Verdict)
}

func TestGroupConsumersAtMostOnce(t *testing.T) {
	res, err := Run(groupConfig(2, run.CommitBeforeProcess))
	require.NoError(t, err)
	require.NoError(t, linearizability.Validate(res.History))
	require.Positive(t, res.Stats.ConsumerCrashes)
	c := counts(linearizability.CheckAnomalies(res.History))
	delete(c, linearizability.AnomalyUnprocessed)
	require.Empty(t, c, "only gaps are allowed at most once")
	require.Equal(t, linearizability.VerdictOK, linearizability.CheckLinearizability(res.History, 0).Verdict)
}

func TestGroupRunsAreDeterministic(t *testing.T) {
	a, err := Run(groupConfig(3, run.CommitAfterProcess))
	require.NoError(t, err)
	b, err := Run(groupConfig(3, run.CommitAfterProcess))
	require.NoError(t, err)
	require.Equal(t, a.TraceHash, b.TraceHash)
	require.Equal(t, a.History, b.History)
}
