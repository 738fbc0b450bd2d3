package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pairsOf is every (case, seed) a JSON report ran, with its verdict when
// it did not hold, and the per-case counts.
func pairsOf(t *testing.T, out string) (cases map[string]jsonCase, failed []string) {
	t.Helper()
	var rep jsonReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	cases = map[string]jsonCase{}
	for _, c := range rep.Cases {
		for _, r := range c.Failed {
			failed = append(failed, c.Name+" "+string(rune('0'+r.Seed))+" "+r.Verdict)
		}
		c.Failed, c.Reached = nil, nil
		cases[c.Name] = c
	}
	sort.Strings(failed)
	return cases, failed
}

// A check run as N shards runs, together, exactly the (case, seed) pairs of
// the whole check, each once, with the same verdicts: merge's table, JSON
// and exit status are the whole check's, and its summary page links every
// failed run's folder in the shard that ran it.
func TestShardsTogetherAreTheWholeCheck(t *testing.T) {
	args := []string{"check", "--case", "acks-all-leader-crash", "--case", "follower-restart", "--case", "no-faults",
		"--seeds", "4", "--variant", "hw", "--quiet", "--json"}
	dir := t.TempDir()
	code, whole, errOut := runCLI(append(args, "--report-dir", filepath.Join(dir, "whole"))...)
	require.Equal(t, exitViolated, code, errOut)
	wantCases, wantFailed := pairsOf(t, whole)
	require.NotEmpty(t, wantFailed, "the variant must fail some runs for the comparison to mean anything")

	var shardDirs []string
	seeds := 0
	for i := 1; i <= 3; i++ {
		d := filepath.Join(dir, "shard", string(rune('0'+i)))
		shardDirs = append(shardDirs, d)
		_, out, errOut := runCLI(append(args, "--shard", string(rune('0'+i))+"/3", "--report-dir", d)...)
		assert.Contains(t, errOut, "shard "+string(rune('0'+i))+"/3's result is")
		var rep jsonReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		seeds += rep.Runs
		assert.Equal(t, 4, rep.Runs, "12 pairs over 3 shards: 4 each")
	}
	require.Equal(t, 12, seeds)

	code, merged, errOut := runCLI(append([]string{"merge", "--json", "--report-dir", filepath.Join(dir, "merged")}, shardDirs...)...)
	require.Equal(t, exitViolated, code, errOut)
	gotCases, gotFailed := pairsOf(t, merged)
	assert.Equal(t, wantFailed, gotFailed)
	for name, want := range wantCases {
		got := gotCases[name]
		assert.Equal(t, want.Seeds, got.Seeds, name)
		assert.Equal(t, want.Ops, got.Ops, name)
		assert.Equal(t, want.Verdict, got.Verdict, name)
		assert.Equal(t, want.Found, got.Found, name)
		assert.Equal(t, want.Acknowledged, got.Acknowledged, name)
	}
	page, err := os.ReadFile(filepath.Join(dir, "merged", "index.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "../shard/", "failed runs link into the shards' folders")

	// Not every shard: refused, naming the missing one.
	code, _, errOut = runCLI(append([]string{"merge", "--report-dir", filepath.Join(dir, "m2")}, shardDirs[:2]...)...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "shard 3/3 missing")
	// A shard given twice, and a bad --shard.
	code, _, errOut = runCLI("merge", shardDirs[0], shardDirs[0], shardDirs[1])
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "given twice")
	code, _, errOut = runCLI("check", "--shard", "4/3")
	assert.Equal(t, exitUsage, code)
	assert.True(t, strings.Contains(errOut, "want I/N with 1 <= I <= N"), errOut)
}
