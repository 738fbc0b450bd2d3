package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/failpoints"
)

func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := dispatch(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestBadUsageExitsTwoAndSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"check", "--case", "nope"}, []string{`unknown case "nope"`, "acks-all-leader-crash", "kip101-data-loss"}},
		{[]string{"check", "--variant", "sometimes"}, []string{`unknown variant "sometimes"`, "hw, epoch-kip101"}},
		{[]string{"check", "--seeds", "0"}, []string{"--seeds 0"}},
		{[]string{"check", "--no-such-flag"}, []string{"unknown flag: --no-such-flag", "watermark check --help"}},
		{[]string{"check", "stray"}, []string{`unexpected argument "stray"`}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "check"}},
		{nil, []string{"usage: watermark"}},
	} {
		code, out, errOut := runCLI(tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		for _, w := range tc.want {
			assert.Contains(t, out+errOut, w, "%v", tc.args)
		}
	}
}

func TestCheckHoldsAndPrintsTheTable(t *testing.T) {
	code, out, errOut := runCLI("check", "--case", "follower-restart", "--seeds", "2", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "CASE")
	assert.Contains(t, out, "ALLOWED")
	assert.Regexp(t, `follower-restart\s+2\s+\d+\s+HOLDS`, out)
	assert.Contains(t, out, "every case holds")
}

func TestCheckJSON(t *testing.T) {
	code, out, errOut := runCLI("check", "--case", "unclean-election", "--seeds", "1", "--json", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, errOut)
	var rep jsonReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "holds", rep.Verdict)
	require.Len(t, rep.Cases, 2)
	assert.Equal(t, "unclean-election/on", rep.Cases[1].Name)
	assert.NotEmpty(t, rep.Cases[1].Allowed, "loss under unclean election is reported as allowed")
	assert.Empty(t, errOut, "--json keeps stderr free of progress")
}

// A violated run exits 1, leaves a report folder, and prints a replay
// command that reproduces the same verdict.
func TestViolatedRunLeavesAReportAndReplays(t *testing.T) {
	failpoints.Require(t)
	dir := t.TempDir()
	code, out, errOut := runCLI("check", "--case", "kip101-data-loss", "--variant", "hw", "--seed", "7", "--report-dir", dir)
	require.Equal(t, exitViolated, code, out+errOut)
	assert.Contains(t, out, "VIOLATED")
	assert.Contains(t, out, "lost-write")
	const replay = "watermark check --case kip101-data-loss --seed 7 --variant hw"
	require.Contains(t, out, "replay: "+replay)
	run := filepath.Join(dir, "kip101-data-loss", "seed-7")
	for _, f := range []string{"history.jsonl", "config.json", "replay.txt", "verdict.txt", "anomalies.json", "history.html", "porcupine.html"} {
		st, err := os.Stat(filepath.Join(run, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
	html, err := os.ReadFile(filepath.Join(run, "porcupine.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), "failpoint hwCheckpointWrite fired", "faults and failpoints are marked in porcupine's picture")
	page, err := os.ReadFile(filepath.Join(run, "history.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "crash broker 2 (failpoint hwCheckpointWrite)", "and in the offsets picture")

	first, err := os.ReadFile(filepath.Join(run, "verdict.txt"))
	require.NoError(t, err)
	dir2 := t.TempDir()
	code, _, _ = runCLI(append(strings.Fields(replay)[1:], "--report-dir", dir2)...)
	require.Equal(t, exitViolated, code)
	second, err := os.ReadFile(filepath.Join(dir2, "kip101-data-loss", "seed-7", "verdict.txt"))
	require.NoError(t, err)
	assert.Equal(t, string(first), string(second), "the replay must reproduce the run exactly")
}

func TestCasesListsEveryCase(t *testing.T) {
	code, out, _ := runCLI("cases")
	require.Equal(t, exitOK, code)
	for _, n := range []string{"acks-all-leader-crash", "follower-restart", "power-loss-minority", "leader-isolated",
		"acks-1-leader-crash", "isr-shrink-expand", "min-isr-refuses", "unclean-election/on", "unclean-election/off",
		"kip101-data-loss", "kip101-divergence"} {
		assert.Contains(t, out, n)
	}
}
