package conformance

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
)

// A case's broker-wide settings are the cluster's to have: a cluster
// that says it has another value skips the case with the flag to give;
// one that says nothing runs it, and an unknown verdict names them.
// Topic configs are the harness's to set and never count.
func TestClusterSettingsOfACase(t *testing.T) {
	cfg := run.DefaultSpec(1)
	cfg.Broker.ReplicaFetchMaxBytes = 1
	cfg.Broker.MinInsyncReplicas = 1
	cfg.Controller.UncleanLeaderElection = true
	need := ClusterSettings(cfg)
	require.Equal(t, []string{"replica_fetch_max_bytes=1"}, names(need))

	kt := &KafkaTarget{Settings: map[string]string{"replica_fetch_max_bytes": "1048576"}}
	_, err := kt.clusterSettings(cfg, kt.Settings)
	var skip *SkipError
	require.True(t, errors.As(err, &skip), "%v", err)
	require.Contains(t, skip.Reason, "needs replica_fetch_max_bytes=1")
	require.Contains(t, skip.Reason, "watermark cluster --replica-fetch-max-bytes=1")

	kt.Settings["replica_fetch_max_bytes"] = "1"
	unset, err := kt.clusterSettings(cfg, kt.Settings)
	require.NoError(t, err)
	require.Empty(t, unset)

	cfg.Controller.AutoLeaderRebalance = true
	kt.Settings["auto_leader_rebalance"] = "True"
	unset, err = kt.clusterSettings(cfg, kt.Settings)
	require.NoError(t, err, "True reads as true")
	require.Empty(t, unset)

	unset, err = (&KafkaTarget{}).clusterSettings(cfg, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"replica_fetch_max_bytes=1", "auto_leader_rebalance=true"}, names(unset))

	c := cases.Case{Name: "x", Require: func(*run.Result) error { return errors.New("never got there") }}
	res := &run.Result{Spec: cfg, Live: true, Unapplied: unset, Stats: run.Stats{FinalReadDone: true}}
	r := judge.Judge(&c, res, 0)
	require.Equal(t, judge.Unknown, r.Verdict)
	require.Contains(t, r.Reasons[len(r.Reasons)-1], "watermark cluster --replica-fetch-max-bytes=1 --auto-leader-rebalance=true")
}

func names(ss []run.Setting) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.String())
	}
	return out
}

// A case that keeps the harness's session and lag times is judged by the
// cluster's: the target file's, else what DescribeConfigs answers, else
// Kafka's default, and the run's notes say which and whence. A case that
// needs its own value keeps it (clusterSettings compares it with the
// cluster's).
func TestTimingPromisesUseTheClustersSettings(t *testing.T) {
	cfg := run.DefaultSpec(1)
	timing := map[string]declared{
		"session_timeout_ms":      {"9000", "DescribeConfigs of broker 1"},
		"replica_lag_time_max_ms": {"30000", "Kafka's default"},
	}
	note := applyTiming(&cfg, timing)
	require.Equal(t, int64(9000), cfg.Controller.SessionTimeoutMs)
	require.Equal(t, int64(30000), cfg.Broker.ReplicaLagTimeMaxMs)
	require.Contains(t, note, "broker.session.timeout.ms=9000 ms (DescribeConfigs of broker 1)")
	require.Contains(t, note, "replica.lag.time.max.ms=30000 ms (Kafka's default)")

	own := run.DefaultSpec(1)
	own.Broker.ReplicaLagTimeMaxMs = 2000
	applyTiming(&own, timing)
	require.Equal(t, int64(2000), own.Broker.ReplicaLagTimeMaxMs, "the case's own value stays")
	kt := &KafkaTarget{}
	_, err := kt.clusterSettings(own, known(nil, timing))
	var skip *SkipError
	require.True(t, errors.As(err, &skip), "the cluster's 30000 is not the case's 2000: %v", err)
	require.Contains(t, skip.Reason, "replica_lag_time_max_ms=2000")
}
