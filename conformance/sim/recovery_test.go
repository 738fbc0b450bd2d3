package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/run"
)

// An unclean recovery's choice is held against the live replicas it could
// have heard from: calm in the wait before the decision. A replica
// slowed, paused, isolated or with dropped messages then, or whose fault
// ended then, may answer late; on a lossy network any may.
// Reference: spec/SEMANTICS.md, "the recovery's choice of the longest live
// log is still a promise".
func TestRecoveryJudgedAgainstReplicasThatCouldAnswer(t *testing.T) {
	cfg := run.DefaultSpec(1)
	s, err := newSim(cfg)
	require.NoError(t, err)
	s.Now = 10_000
	require.True(t, s.calm(1, 8_000), "no fault: it could have answered")

	s.nodes[1].slowMs = 500
	require.False(t, s.calm(1, 8_000), "slowed during the wait")
	s.nodes[1].slowMs = 0
	s.Notef(run.NoteHeal, 1, "broker 1 is fast again")
	require.False(t, s.calm(1, 8_000), "its slowness ended during the wait")
	require.True(t, s.calm(2, 8_000), "another broker's fault says nothing of this one")
	require.True(t, s.calm(1, s.Now+1), "a fault that ended before the wait")

	s.nodes[2].faulted = 1
	require.False(t, s.calm(2, 8_000), "a fault in force")
	s.nodes[2].faulted = 0
	s.Spec.Network.DropRate = 0.1
	require.False(t, s.calm(2, 8_000), "the network may have dropped its answer")
}
