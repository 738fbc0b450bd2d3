package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/failpoints"
)

func TestSearchUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"search"}, []string{"--variant is required", "hw"}},
		{[]string{"search", "--variant", "nope"}, []string{`unknown variant "nope"`, "hw", "acks1", "unclean", "safe"}},
		{[]string{"search", "--variant", "acks1", "--tries", "0"}, []string{"--tries 0"}},
		{[]string{"search", "--variant", "acks1", "stray"}, []string{`unexpected argument "stray"`}},
		{[]string{"search", "--no-such-flag"}, []string{"unknown flag: --no-such-flag", "--variant"}},
	} {
		code, out, errOut := runCLI(tc.args...)
		assert.Equal(t, exitUsage, code, "%v: %s%s", tc.args, out, errOut)
		for _, w := range tc.want {
			assert.Contains(t, errOut, w, "%v", tc.args)
		}
	}
}

func TestSearchHelp(t *testing.T) {
	code, out, _ := runCLI("search", "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "hw-below-min-isr")
	assert.Contains(t, out, "Exit 1")
}

// A find exits 1, leaves a report whose run.yaml `watermark repro` replays.
func TestSearchFindsAndRepros(t *testing.T) {
	failpoints.Require(t)
	dir := t.TempDir()
	code, out, errOut := runCLI("search", "--variant", "hw", "--tries", "20", "--report-dir", dir, "--quiet")
	require.Equal(t, exitViolated, code, out+errOut)
	assert.Empty(t, errOut)
	assert.Regexp(t, `variant hw: FOUND a violation after \d+ schedules? in \S+ \(seed \d+\)`, out)
	m := regexp.MustCompile(`replay: watermark repro (\S+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	runYAML := m[1]
	assert.FileExists(t, runYAML)
	replay, err := os.ReadFile(filepath.Join(filepath.Dir(runYAML), "replay.txt"))
	require.NoError(t, err)
	assert.Equal(t, "watermark repro "+runYAML+"\n", string(replay))

	code, out, errOut = runCLI("repro", runYAML)
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "REPRODUCED")
}

func TestSearchSafeFindsNothing(t *testing.T) {
	failpoints.Require(t)
	code, out, errOut := runCLI("search", "--variant", "safe", "--tries", "5", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "variant safe: nothing found in 5 schedules (seeds 1..5)")
}

// Faults alone, in any build.
func TestSearchWithoutFailpoints(t *testing.T) {
	code, out, errOut := runCLI("search", "--variant", "acks1", "--no-failpoints", "--tries", "30",
		"--report-dir", t.TempDir(), "--quiet")
	require.Equal(t, exitViolated, code, out+errOut)
	assert.Contains(t, out, "FOUND a violation")
}
