package conformance_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/search"
	"github.com/watermarkhq/watermark/conformance/targets"
)

// The standing random check runs on real processes too (`watermark check
// --target cluster --random N`): schedules drawn for what processes can
// take (crashes, pauses, isolation, clean stops, rolling stops, replaced
// and damaged disks), each on a fresh local cluster, judged strictly. Two
// runs here; `make random` runs more. A run real timing leaves unknown is
// not a failure; a violated one is.
func TestRandomSchedulesOnRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes for about a minute; run without -short")
	}
	target := &targets.ClusterTarget{Binary: clusterBinary, Dir: t.TempDir()}
	rep, err := search.Random(search.RandomOptions{Runs: 2, FirstSeed: 1, Target: target})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Runs)
	for _, r := range rep.Cases[0].Failed {
		assert.NotEqual(t, conformance.Violated, r.Verdict, "random seed %d on real processes: %v (replay: watermark check --target cluster --random 1 --seed %d)", r.Seed, r.Reasons, r.Seed)
	}
}
