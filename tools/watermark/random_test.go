package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// check --random runs random schedules instead of the cases and prints
// what they reached; with a case or a target it is a usage error.
func TestCheckRandom(t *testing.T) {
	code, out, errOut := runCLI("check", "--random", "4", "--quiet", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, out+errOut)
	assert.Regexp(t, `random\s+4\s+\d+\s+HOLDS`, out)
	assert.Regexp(t, `coverage: \d+ of \d+ protocol situations reached`, out)

	code, out, errOut = runCLI("check", "--random", "2", "--json", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, errOut)
	var rep jsonReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Cases, 1)
	assert.Equal(t, "random", rep.Cases[0].Name)
	assert.NotEmpty(t, rep.Coverage)

	for _, args := range [][]string{
		{"--random", "2", "--case", "no-faults"},
		{"--random", "2", "--target", "kafka"},
		{"--random", "-1"},
	} {
		code, _, errOut = runCLI(append([]string{"check"}, args...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
}

// A check's coverage names what no run reached: a narrow check says so.
func TestCheckPrintsSituationsNeverReached(t *testing.T) {
	code, out, errOut := runCLI("check", "--case", "no-faults", "--seeds", "1", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "never reached: election-with-stale-replica-alive")
}

// --fail-fast stops at the first run that does not hold, exits 1 and says
// so; without a failure it runs everything.
func TestCheckFailFast(t *testing.T) {
	code, out, errOut := runCLI("check", "--fail-fast", "--quiet", "--case", "min-isr-refuses", "--case", "no-faults",
		"--seeds", "4", "--workers", "1", "--set", "broker.min_insync_replicas=1", "--report-dir", t.TempDir())
	require.Equal(t, exitViolated, code, out+errOut)
	assert.Regexp(t, `stopped at the first run that did not hold \(--fail-fast\), after [12] of 8 runs`, errOut)

	code, out, errOut = runCLI("check", "--fail-fast", "--quiet", "--case", "no-faults", "--seeds", "2", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "2 runs in")
}
