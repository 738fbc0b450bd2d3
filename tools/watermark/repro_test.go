package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/failpoints"
	"github.com/watermarkhq/watermark/impl/broker"
)

const (
	kip101File = "../../conformance/run/testdata/kip101-data-loss.yaml"
	holdsFile  = "../../conformance/run/testdata/follower-crash-holds.yaml"
)

func TestReproHoldsFile(t *testing.T) {
	code, out, errOut := runCLI("repro", holdsFile)
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "HOLDS")
	assert.Contains(t, out, "every outcome matches its expectation")
}

func TestReproKIP101OnHWReproduces(t *testing.T) {
	failpoints.Require(t)
	code, out, errOut := runCLI("repro", kip101File)
	require.Equal(t, exitOK, code, out+errOut)
	assert.Regexp(t, `^REPRODUCED\s+\S*kip101-data-loss.yaml \(seed 1\)`, out)
	assert.Contains(t, out, "lost-write")
}

func TestReproKIP101OnEpochIsNotReproduced(t *testing.T) {
	failpoints.Require(t)
	code, out, errOut := runCLI("repro", "--set", "broker.truncation=epoch", kip101File)
	require.Equal(t, exitViolated, code, out+errOut)
	assert.Regexp(t, `NOT REPRODUCED|UNEXPECTED ANOMALY`, out)
	assert.Contains(t, out, "broker.truncation=epoch")
	assert.Contains(t, out, "missing: lost-write")
	assert.Contains(t, out, "does not match")
}

// A holds file run on a variant that breaks it is an unexpected anomaly.
func TestReproHoldsFileOnBrokenVariant(t *testing.T) {
	failpoints.Require(t)
	dir := t.TempDir()
	f, err := run.LoadFile(kip101File)
	require.NoError(t, err)
	f.Expect = run.Expect{Holds: true}
	f.Allowed = nil
	path := filepath.Join(dir, "holds.yaml")
	require.NoError(t, os.WriteFile(path, f.Marshal(), 0o644))
	code, out, errOut := runCLI("repro", "--variant", "hw", path)
	require.Equal(t, exitViolated, code, out+errOut)
	assert.Contains(t, out, "UNEXPECTED ANOMALY")
	code, out, errOut = runCLI("repro", "--set", "broker.truncation=epoch", path)
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "HOLDS")
}

func TestReproBadFilesExitTwo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	unknown := write("unknown.yaml", "seed: 1\nexpect: holds\nworkload:\n  producers: 1\n  acks_level: all\n")
	badKind := write("kind.yaml", "expect: holds\nfaults:\n  - kind: meteor\n    node: 1\n")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"repro", unknown}, []string{unknown + ":5:", "workload.acks_level", "unknown field", "acks"}},
		{[]string{"repro", badKind}, []string{badKind + ":3:", "faults[0].kind", `"meteor"`, "crash, powerloss"}},
		{[]string{"repro", filepath.Join(dir, "missing.yaml")}, []string{"missing.yaml", "no such file"}},
		{[]string{"repro"}, []string{"no run file given", "usage: watermark repro"}},
		{[]string{"repro", "--set", "broker.truncation=sometimes", holdsFile}, []string{`unknown truncation "sometimes"`}},
		{[]string{"repro", "--variant", "no-fencing", holdsFile}, []string{"exists only in spec/protocol's model"}},
	} {
		code, out, errOut := runCLI(tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		for _, w := range tc.want {
			assert.Contains(t, out+errOut, w, "%v", tc.args)
		}
	}
}

// A failed `watermark check` run saves run.yaml; `watermark repro` replays
// it and finds the same anomalies.
func TestCheckRunFileReproduces(t *testing.T) {
	failpoints.Require(t)
	dir := t.TempDir()
	code, out, errOut := runCLI("check", "--case", "kip101-data-loss", "--variant", "hw", "--seed", "7", "--report-dir", dir)
	require.Equal(t, exitViolated, code, out+errOut)
	path := filepath.Join(dir, "kip101-data-loss", "seed-7", "run.yaml")
	f, err := run.LoadFile(path)
	require.NoError(t, err)
	assert.Contains(t, f.Expect.Found, "lost-write")
	assert.Equal(t, uint64(7), f.Seed)

	code, out, errOut = runCLI("repro", path)
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "REPRODUCED")
	assert.Contains(t, out, "seed 7)")
	for _, n := range f.Expect.Found {
		assert.Contains(t, out, n)
	}

	code, out, _ = runCLI("repro", "--set", "broker.truncation=epoch", path)
	require.Equal(t, exitViolated, code)
	assert.Contains(t, out, "NOT REPRODUCED")
}

// Without failpoints compiled in, a file that drives them is refused, as
// `watermark check` refuses such cases.
func TestReproRefusesFailpointsWithoutThem(t *testing.T) {
	if broker.FailpointsCompiled() {
		t.Skip("failpoints are compiled in")
	}
	code, _, errOut := runCLI("repro", kip101File)
	require.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "drive failpoints, but this binary was built without them")
	assert.Contains(t, errOut, "make build")
}
