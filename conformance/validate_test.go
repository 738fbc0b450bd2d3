package conformance_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/report"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/conformance/targets"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// conformance.Options.ValidateProtocol turns trace validation on for every run of a
// case, and with it leaders that answer replica fetches at once: a held
// fetch is answered later with what the leader has then, which the model
// does not do.
func TestValidateProtocolOptionConfiguresTheRun(t *testing.T) {
	for i := range cases.Cases {
		c := &cases.Cases[i]
		plain := spec(c, 1)
		assert.False(t, plain.ValidateProtocol, c.Name)
		assert.Equal(t, c.Spec(1).Broker.ReplicaFetchWaitMaxMs, plain.Broker.ReplicaFetchWaitMaxMs, c.Name)

		cfg, err := conformance.Options{Target: targets.Simulator, ValidateProtocol: true}.Spec(c, 1)
		require.NoError(t, err)
		assert.True(t, cfg.ValidateProtocol, c.Name)
		assert.Zero(t, cfg.Broker.ReplicaFetchWaitMaxMs, c.Name)
	}
}

// Only the simulator exposes every replication step; asking another
// target for trace validation is an error, not a silent pass.
func TestValidateProtocolNeedsTheSimulator(t *testing.T) {
	_, err := conformance.RunOne(&cases.Cases[0], 1, conformance.Options{ValidateProtocol: true, Target: &conformance.KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}}, CheckTimeout: time.Second})
	require.ErrorIs(t, err, conformance.ErrValidateNeedsSimulator)
}

// A step the model does not allow violates the run, with the failure's
// first line as the reason, the whole of it in verdict.txt, and a replay
// command that validates again. The run is KAFKA-7164's on a broker that
// skips truncation when the same leader returns, judged by the model of
// the fixed rule. Reference: KAFKA-7164.
func TestTraceValidationFailureViolatesTheRun(t *testing.T) {
	cfg := cases.KAFKA7164(1, partition.TruncateToEpochNoBump)
	cfg.ValidateProtocol = true
	cfg.Broker.ReplicaFetchWaitMaxMs = 0
	fixed := protocol.Variant{Truncation: protocol.TruncateEpochQuery, MinISR: cfg.Broker.MinInsyncReplicas,
		KeepISROnRestart: cfg.Controller.KeepISROnRestart, Unclean: cfg.Controller.UncleanLeaderElection}
	cfg.ProtocolModel = &fixed
	res, err := sim.Run(cfg)
	require.NoError(t, err)
	require.NotNil(t, res.Protocol)
	require.NotEmpty(t, res.Protocol.Failure)

	r := judge.Judge(&cases.Case{Name: "kafka-7164", LossAllowed: true}, res, 10*time.Second)
	r.Replay = "watermark check --case kafka-7164 --seed 1 --validate-protocol"
	require.Equal(t, conformance.Violated, r.Verdict)
	first, _, _ := strings.Cut(res.Protocol.Failure, "\n")
	assert.Contains(t, r.Reasons, "trace validation: "+first)

	dir, err := report.WriteRun(t.TempDir(), r, nil)
	require.NoError(t, err)
	verdict, err := os.ReadFile(filepath.Join(dir, "verdict.txt"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(res.Protocol.Failure), "\n") {
		assert.Contains(t, string(verdict), strings.TrimSpace(line))
	}
	// The run file replays it with validation on.
	f, err := run.LoadFile(filepath.Join(dir, "run.yaml"))
	require.NoError(t, err)
	assert.True(t, f.ValidateProtocol)
	assert.Zero(t, f.Broker.ReplicaFetchWaitMaxMs)
}

// A replay command asks for trace validation again when the run had it.
func TestReplayCommandKeepsValidation(t *testing.T) {
	r, err := conformance.RunOne(caseNamed(t, "lost-answers"), 1, conformance.Options{Target: targets.Simulator, ValidateProtocol: true})
	require.NoError(t, err)
	assert.Contains(t, r.Replay, " --validate-protocol")
	assert.Contains(t, r.Replay, "--case lost-answers --seed 1")
}
