package linearizability

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/corpus/*/expected.json from the checkers' current verdicts")

// corpusVerdict is what the checkers said of a saved history.
type corpusVerdict struct {
	Anomalies map[string]int `json:"anomalies"`
	Porcupine Verdict        `json:"porcupine"`
}

// The regression corpus: histories of real runs of the reference (and of
// its buggy variants), each with the verdict the checkers gave when it was
// saved and a person checked it. A change to a checker that changes any of
// them fails here; if the change is right, rerun with -update-corpus and
// review the diff of expected.json.
//
//	kip101-data-loss       truncation=hw, KIP-101 scenario 1: lost-write and friends
//	kip101-divergence      truncation=hw, KIP-101 scenario 2: inconsistent-offsets
//	dedup-across-failover  leader-only producer state: duplicate, dedup-failure
//	acks-1-leader-crash    acks=1 loses acknowledged writes: unseen, nonmonotonic-send
//	unclean-election-on    an out-of-sync replica leads: committed records lost
//	exactly-once           the idempotent producer under faults: clean
func TestRegressionCorpus(t *testing.T) {
	dirs, err := filepath.Glob("testdata/corpus/*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, "history.jsonl"))
			require.NoError(t, err)
			h, err := ReadHistory(f)
			f.Close()
			require.NoError(t, err)
			got := corpusVerdict{Anomalies: map[string]int{}}
			for _, a := range CheckAnomalies(h) {
				got.Anomalies[a.Name]++
			}
			got.Porcupine = CheckLinearizability(h, time.Minute).Verdict
			path := filepath.Join(dir, "expected.json")
			if *updateCorpus {
				data, err := json.MarshalIndent(got, "", "  ")
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
				return
			}
			data, err := os.ReadFile(path)
			require.NoError(t, err, "no expected.json: run with -update-corpus and review it")
			var want corpusVerdict
			require.NoError(t, json.Unmarshal(data, &want))
			require.Equal(t, want, got)
		})
	}
}
