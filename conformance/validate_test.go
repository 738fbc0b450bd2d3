package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// Options.ValidateProtocol turns trace validation on for every run of a
// case, and with it leaders that answer replica fetches at once: a held
// fetch is answered later with what the leader has then, which the model
// does not do.
func TestValidateProtocolOptionConfiguresTheRun(t *testing.T) {
	for i := range Cases {
		c := &Cases[i]
		plain := c.config(1, Options{})
		assert.False(t, plain.ValidateProtocol, c.Name)
		assert.Equal(t, c.Config(1).Broker.ReplicaFetchWaitMaxMs, plain.Broker.ReplicaFetchWaitMaxMs, c.Name)

		cfg := c.config(1, Options{ValidateProtocol: true})
		assert.True(t, cfg.ValidateProtocol, c.Name)
		assert.Zero(t, cfg.Broker.ReplicaFetchWaitMaxMs, c.Name)
	}
}

// Only the simulator exposes every replication step; asking another
// target for trace validation is an error, not a silent pass.
func TestValidateProtocolNeedsTheSimulator(t *testing.T) {
	_, err := RunOne(&Cases[0], 1, Options{ValidateProtocol: true, Target: &KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}}}, time.Second)
	require.ErrorIs(t, err, ErrValidateNeedsSimulator)
}

// A step the model does not allow violates the run, with the failure's
// first line as the reason, the whole of it in verdict.txt, and a replay
// command that validates again. The run is KAFKA-7164's on a broker that
// skips truncation when the same leader returns, judged by the model of
// the fixed rule. Reference: KAFKA-7164.
func TestTraceValidationFailureViolatesTheRun(t *testing.T) {
	cfg := sim.KAFKA7164(1, partition.TruncateToEpochNoBump)
	cfg.ValidateProtocol = true
	cfg.Broker.ReplicaFetchWaitMaxMs = 0
	fixed := protocol.Variant{Truncation: protocol.TruncateEpoch, MinISR: cfg.Broker.MinInsyncReplicas,
		KeepISROnRestart: cfg.Controller.KeepISROnRestart, Unclean: cfg.Controller.UncleanLeaderElection}
	cfg.ProtocolModel = &fixed
	res, err := sim.Run(cfg)
	require.NoError(t, err)
	require.NotNil(t, res.Protocol)
	require.NotEmpty(t, res.Protocol.Failure)

	r := Judge(&Case{Name: "kafka-7164", LossAllowed: true}, res, 10*time.Second)
	require.Equal(t, Violated, r.Verdict)
	first, _, _ := strings.Cut(res.Protocol.Failure, "\n")
	assert.Contains(t, r.Reasons, "trace validation: "+first)
	assert.Contains(t, ReplayCommand(r), " --validate-protocol")

	dir, err := WriteRun(t.TempDir(), r)
	require.NoError(t, err)
	verdict, err := os.ReadFile(filepath.Join(dir, "verdict.txt"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(res.Protocol.Failure), "\n") {
		assert.Contains(t, string(verdict), strings.TrimSpace(line))
	}
	// The run file replays it with validation on.
	f, err := LoadRunFile(filepath.Join(dir, "run.yaml"))
	require.NoError(t, err)
	assert.True(t, f.ValidateProtocol)
	assert.True(t, f.SimConfig().ValidateProtocol)
	assert.Zero(t, f.SimConfig().Broker.ReplicaFetchWaitMaxMs)
}
