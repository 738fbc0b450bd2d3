package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/linearizability"
)

// faulty is the strong-consistency recipe under random faults: crashes,
// power losses (one machine at a time, only while every ISR is full),
// pauses, isolation and lost messages.
func faulty(seed uint64) run.Spec {
	cfg := run.DefaultSpec(seed)
	cfg.Network.DropRate = 0.01
	cfg.Nemesis = run.Nemesis{
		Kinds:               []run.FaultKind{run.FaultCrash, run.FaultPowerLoss, run.FaultPause, run.FaultIsolate},
		IntervalMs:          1500,
		FaultMs:             1500,
		MaxFaulty:           1,
		PowerLossOnlyInSync: true,
	}
	return cfg
}

func acked(h []linearizability.Op) int {
	n := 0
	for _, op := range h {
		if op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeOK {
			n++
		}
	}
	return n
}

func replay(cfg run.Spec) string {
	return fmt.Sprintf("replay: seed=%d truncation=%s brokers=%d", cfg.Seed, cfg.Broker.Truncation, cfg.Brokers)
}

// Same seed, same config: the same run, event for event.
func TestSameSeedSameRun(t *testing.T) {
	hashes := map[uint64]uint64{}
	for seed := uint64(1); seed <= 5; seed++ {
		a, err := Run(faulty(seed))
		require.NoError(t, err)
		b, err := Run(faulty(seed))
		require.NoError(t, err)
		require.Equal(t, a.TraceHash, b.TraceHash, "seed %d: two runs differ", seed)
		require.Equal(t, a.Stats, b.Stats, "seed %d", seed)
		require.Equal(t, a.History, b.History, "seed %d", seed)
		require.Greater(t, a.Stats.Faults, 0, "seed %d injected no fault", seed)
		hashes[a.TraceHash] = seed
	}
	// The hash must see the seed: different seeds, different runs.
	require.Len(t, hashes, 5)
}

// With RF 3, min ISR 2, acks=all, truncation=epoch and no unclean
// election, no fault schedule breaks a protocol invariant.
// Reference: spec/SEMANTICS.md, "Strong consistency recipe".
func TestStrongSettingsHoldUnderRandomFaults(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() {
		seeds = 8
	}
	total := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		cfg := faulty(seed)
		res, err := Run(cfg)
		require.NoError(t, err)
		if firstViolation(res) != nil {
			t.Fatalf("%v\n%s\nlast steps:\n%s", firstViolation(res), replay(cfg), join(firstViolation(res).Trace))
		}
		require.Greater(t, res.Stats.Faults, 0, "seed %d injected no fault", seed)
		require.True(t, res.Stats.FinalReadDone, "seed %d: the final read did not finish; %s", seed, replay(cfg))
		total += acked(res.History)
	}
	assert.Greater(t, total, 50*int(seeds), "the cluster must make progress between faults")
}

// Quick crash-restarts, where a restarted broker keeps its ISR place (as
// before KIP-903), find truncation=hw's flaw on every seed: a restarted
// ISR member truncates below the leader's HW. The same schedules pass with
// truncation=epoch. Reference: KIP-101.
func TestRandomCrashesTellTruncationVariantsApart(t *testing.T) {
	crashy := func(seed uint64, tr partition.Truncation) run.Spec {
		cfg := faulty(seed)
		cfg.Broker.Truncation = tr
		cfg.Broker.HWCheckpointIntervalMs = 0
		cfg.Controller.KeepISROnRestart = true
		cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultCrash}, IntervalMs: 400, FaultMs: 300, MaxFaulty: 2}
		return cfg
	}
	for seed := uint64(1); seed <= 10; seed++ {
		hw, err := Run(crashy(seed, partition.TruncateToHW))
		require.NoError(t, err)
		require.NotNil(t, firstViolation(hw), "seed %d: truncation=hw survived quick crashes", seed)
		epoch, err := Run(crashy(seed, partition.TruncateToEpoch))
		require.NoError(t, err)
		if firstViolation(epoch) != nil {
			t.Fatalf("%v\n%s", firstViolation(epoch), replay(epoch.Spec))
		}
	}
}

func join(lines []string) string {
	s := ""
	for _, l := range lines {
		s += l + "\n"
	}
	return s
}

func TestConfigValidation(t *testing.T) {
	cfg := run.DefaultSpec(1)
	cfg.Brokers = 0
	cfg.Topics[0].ReplicationFactor = 5
	cfg.Failpoints = []run.Failpoint{{Name: "noSuchPoint", Term: `return("crash")`}}
	cfg.Faults = []run.Fault{{Kind: "meteor", Node: 1}}
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{"brokers = 0", "replication factor 5", "unknown failpoint \"noSuchPoint\"", "unknown kind \"meteor\""} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = Run(cfg)
	require.Error(t, err)
}

// firstViolation is the first invariant failure of r, nil if none.
func firstViolation(r *run.Result) *run.Violation {
	if len(r.Violations) == 0 {
		return nil
	}
	return r.Violations[0]
}
