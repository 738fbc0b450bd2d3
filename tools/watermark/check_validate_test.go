package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --validate-protocol checks each run's replication steps against
// spec/protocol's model and says how many it checked: a clean verdict
// over zero steps would be no verdict.
func TestCheckValidateProtocolCountsSteps(t *testing.T) {
	code, out, errOut := runCLI("check", "--validate-protocol", "--case", "follower-restart", "--seeds", "2", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, out+errOut)
	assert.Regexp(t, `follower-restart\s+2\s+\d+\s+HOLDS`, out)
	assert.Regexp(t, `trace validation: [1-9]\d* protocol steps checked against spec/protocol's model, \d+ skipped`, out)

	code, out, errOut = runCLI("check", "--validate-protocol", "--case", "follower-restart", "--seeds", "1", "--json", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, errOut)
	var rep jsonReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.NotNil(t, rep.TraceValidation)
	assert.Positive(t, rep.TraceValidation.Checked)
	require.Len(t, rep.Cases, 1)
	require.NotNil(t, rep.Cases[0].TraceValidation)
	assert.Equal(t, *rep.TraceValidation, *rep.Cases[0].TraceValidation)

	// Without the flag, no line and no JSON field.
	code, out, errOut = runCLI("check", "--case", "follower-restart", "--seeds", "1", "--report-dir", t.TempDir())
	require.Equal(t, exitOK, code, errOut)
	assert.NotContains(t, out, "trace validation")
}

// Only the simulator exposes every replication step: on real processes
// --validate-protocol is a usage error, before anything runs.
func TestCheckValidateProtocolNeedsTheSimulator(t *testing.T) {
	for _, args := range [][]string{
		{"--target", "kafka", "--bootstrap", "127.0.0.1:1"},
		{"--target", "cluster"},
	} {
		code, _, errOut := runCLI(append([]string{"check", "--validate-protocol", "--report-dir", t.TempDir()}, args...)...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, errOut, "--validate-protocol needs the simulator (--target sim)", "%v", args)
	}
}
