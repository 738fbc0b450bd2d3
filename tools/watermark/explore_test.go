package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// The safe variant holds within small bounds, and says so only after
// exploring every state.
func TestExploreSafeHoldsWithinSmallBounds(t *testing.T) {
	code, out, errOut := runCLI("explore", "--replicas", "2", "--records", "1", "--crashes", "1")
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "exploring variant safe (safe): replicas 2, records 1, crashes 1")
	assert.Regexp(t, `states explored: \d+\ntransitions: \d+\ndepth: \d+\ntime: .+\nrate: \d+ states/s\n`, out)
	assert.Contains(t, out, "no violation within bounds")
	assert.NotContains(t, out, "VIOLATION")
}

// The unclean variant's default bounds break an invariant; the output names
// it and a replay command that, run, finds the same violation.
func TestExploreUncleanFindsAViolationAndReplaysIt(t *testing.T) {
	code, out, errOut := runCLI("explore", "--variant", "unclean")
	require.Equal(t, exitViolated, code, out+errOut)
	assert.Regexp(t, `VIOLATION: \w+ violated after \d+ steps`, out)
	assert.Contains(t, out, protocol.TrueHWNeverDecreases)
	require.Regexp(t, `(?m)^replay: watermark explore --variant unclean --replicas 3 --records 2 --crashes 2 .*--min-isr 2 .*--unclean`, out)

	replay := replayArgs(t, out)
	code2, out2, errOut2 := runCLI(replay...)
	require.Equal(t, exitViolated, code2, out2+errOut2)
	assert.Equal(t, violationLine(t, out), violationLine(t, out2))
}

// Hitting --max-states is not a pass.
func TestExploreStateBoundIsIncompleteNotAPass(t *testing.T) {
	code, out, errOut := runCLI("explore", "--max-states", "10")
	require.Equal(t, exitViolated, code, out+errOut)
	assert.Contains(t, out, "INCOMPLETE")
	assert.Contains(t, out, "--max-states")
	assert.NotContains(t, out, "no violation within bounds")
}

func TestExploreBadFlagsExitTwoAndSayWhy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--variant", "nope"}, []string{"--variant", `unknown variant "nope"`, "hw-below-min-isr"}},
		{[]string{"--invariant", "Nope"}, []string{"--invariant", `unknown invariant "Nope"`, protocol.AckedWriteKept}},
		{[]string{"--replicas", "0"}, []string{"--replicas 0", "at least 1"}},
		{[]string{"--replicas", "9"}, []string{"--replicas 9", "1..8"}},
		{[]string{"--crashes", "-1"}, []string{"--crashes -1", "at least 0"}},
		{[]string{"--max-states", "0"}, []string{"--max-states 0"}},
		{[]string{"--replicas", "2", "--min-isr", "3"}, []string{"--min-isr 3", "--replicas 2"}},
		{[]string{"--no-such-flag"}, []string{"unknown flag: --no-such-flag", "watermark explore --help"}},
		{[]string{"stray"}, []string{`unexpected argument "stray"`}},
	} {
		code, out, errOut := runCLI(append([]string{"explore"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		for _, w := range tc.want {
			assert.Contains(t, errOut, w, "%v", tc.args)
		}
		assert.Empty(t, out, "%v", tc.args)
	}
}

func TestExploreJSON(t *testing.T) {
	code, out, errOut := runCLI("explore", "--replicas", "2", "--records", "1", "--crashes", "1", "--json")
	require.Equal(t, exitOK, code, out+errOut)
	var res exploreResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, "safe", res.Variant)
	assert.Equal(t, 2, res.Bounds.Replicas)
	assert.True(t, res.Complete)
	assert.Positive(t, res.States)
	assert.Nil(t, res.Violation)

	code, out, errOut = runCLI("explore", "--variant", "unclean", "--json", "--invariant", protocol.AckedWriteKept)
	require.Equal(t, exitViolated, code, out+errOut)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw), out)
	vi, ok := raw["violation"].(map[string]any)
	require.True(t, ok, out)
	assert.Equal(t, protocol.AckedWriteKept, vi["invariant"])
	assert.NotEmpty(t, vi["steps"])
	assert.Equal(t, false, raw["complete"])
}

func TestExploreListsVariants(t *testing.T) {
	code, out, _ := runCLI("explore", "--list")
	require.Equal(t, exitOK, code)
	for _, v := range protocol.Variants {
		assert.Contains(t, out, v.Name)
		assert.Contains(t, out, v.Reference)
	}
	assert.Contains(t, out, "unsafe")
}

// replayArgs parses the replay line of an explore run into CLI arguments.
func replayArgs(t *testing.T, out string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "replay: watermark "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("no replay line in:\n%s", out)
	return nil
}

func violationLine(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if _, ok := strings.CutPrefix(line, "VIOLATION: "); ok {
			return line
		}
	}
	t.Fatalf("no violation line in:\n%s", out)
	return ""
}
