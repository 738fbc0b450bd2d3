package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/linearizability"
)

// roundTrip writes cfg as a run file, parses it back and returns its config.
func roundTrip(t *testing.T, cfg sim.Config) (sim.Config, string) {
	t.Helper()
	r := &RunResult{Case: "x", Seed: cfg.Seed, Verdict: Holds, Sim: &sim.Result{Config: cfg}}
	data := RunFileFor(r, nil).Marshal()
	f, err := ParseRunFile("x.yaml", data)
	require.NoError(t, err, string(data))
	return f.SimConfig(), string(data)
}

func TestRunFileRoundTripsEveryCase(t *testing.T) {
	configs := map[string]sim.Config{
		"default":              sim.DefaultConfig(1),
		"kip101-data-loss/hw":  sim.KIP101DataLoss(3, partition.TruncateToHW),
		"kip101-divergence/hw": sim.KIP101Divergence(4, partition.TruncateToHW),
		"leader-only-nemesis": func() sim.Config {
			c := sim.DefaultConfig(5)
			c.Broker.ProducerState = partition.ProducerStateLeaderOnly
			return c
		}(),
		"fault-with-partition": func() sim.Config {
			c := sim.DefaultConfig(6)
			c.Faults = []sim.Fault{{Kind: sim.FaultSlow, Role: sim.RoleFollower, Partition: &kafka.TopicPartition{Topic: "t", Partition: 1}, DelayMs: 50, When: sim.Trigger{AfterAcks: 3}}}
			c.Network.DropRate = 0.1234567
			return c
		}(),
	}
	for _, c := range Cases {
		configs[c.Name] = c.Config(1)
	}
	for name, cfg := range configs {
		got, text := roundTrip(t, cfg)
		require.Equal(t, cfg, got, "%s:\n%s", name, text)
	}
}

func TestRunFileDefaults(t *testing.T) {
	f, err := ParseRunFile("min.yaml", []byte("seed: 9\nexpect: holds\n"))
	require.NoError(t, err)
	want := sim.DefaultConfig(9)
	want.ContinueAfterViolation = true
	assert.Equal(t, want, f.SimConfig())
	assert.True(t, f.Expect.Holds)
	assert.Equal(t, "min", f.Name)

	f, err = ParseRunFile("t.yaml", []byte("expect: [lost-write, StrongIsr]\ncluster:\n  brokers: 2\n  topics:\n    - {name: a, partitions: 1}\n    - {partitions: 3}\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"lost-write", "StrongIsr"}, f.Expect.Found)
	assert.Equal(t, []sim.Topic{{Name: "a", Partitions: 1, ReplicationFactor: 2}, {Name: "t", Partitions: 3, ReplicationFactor: 2}}, f.SimConfig().Topics)
}

func TestRunFileErrorsNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"seed: 1\nexpect: holds\nbroker:\n  truncaton: hw\n", []string{"bad.yaml:4:", "broker.truncaton", "unknown field", "truncation"}},
		{"expect: holds\nbroker:\n  truncation: sometimes\n", []string{"bad.yaml:3:", "broker.truncation", `"sometimes"`, "hw, epoch"}},
		{"expect: holds\nfaults:\n  - kind: crash\n    node: 1\n  - kind: explode\n", []string{"bad.yaml:5:", "faults[1].kind", `"explode"`, "powerloss", "restart-producer"}},
		{"expect: holds\nfailpoints:\n  - name: nowhere\n    term: return\n", []string{"bad.yaml:3:", "failpoints[0].name", "hwCheckpointWrite"}},
		{"expect: [lost-write, oops]\n", []string{"bad.yaml:1:", "expect[1]", `"oops"`, "lost-write", "StrongIsr"}},
		{"expect: maybe\n", []string{"bad.yaml:1:", "expect", "holds"}},
		{"seed: 1\n", []string{"bad.yaml:1:", "expect", "missing"}},
		{"expect: holds\nseed: many\n", []string{"bad.yaml:2:", "seed", "whole number"}},
		{"expect: holds\nworkload:\n  acks: 2\n", []string{"bad.yaml:3:", "workload.acks", "all, 1, 0"}},
		{"expect: holds\nexpect: holds\n", []string{"bad.yaml:2:", "given twice"}},
		{"expect: holds\ncluster:\n  brokers: 0\n", []string{"bad.yaml", "brokers = 0"}},
		{"expect: holds\nallowed: [lost-write, StrongIsr, oops]\n", []string{"bad.yaml:2:", "allowed[2]", "LogMatching"}},
		{"expect: holds\nseed: [1\n", []string{"bad.yaml", "line"}},
	} {
		_, err := ParseRunFile("bad.yaml", []byte(tc.text))
		require.Error(t, err, tc.text)
		for _, w := range tc.want {
			assert.Contains(t, err.Error(), w, tc.text)
		}
	}
}

// The example files parse, and the KIP-101 one is the scenario written out.
func TestExampleRunFiles(t *testing.T) {
	f, err := LoadRunFile(filepath.Join("testdata", "kip101-data-loss.yaml"))
	require.NoError(t, err)
	want := sim.KIP101DataLoss(1, partition.TruncateToHW)
	want.Workload.Consumers = 1
	want.ContinueAfterViolation = true
	assert.Equal(t, want, f.SimConfig())
	assert.Equal(t, []string{linearizability.AnomalyLostWrite}, f.Expect.Found)

	f, err = LoadRunFile(filepath.Join("testdata", "follower-crash-holds.yaml"))
	require.NoError(t, err)
	assert.True(t, f.Expect.Holds)
	assert.NotEmpty(t, f.SimConfig().Faults)
}

// WriteRun leaves a run.yaml that describes the same run.
func TestWriteRunSavesRunFile(t *testing.T) {
	c := Cases[0]
	res, err := sim.Run(c.config(1, Options{}))
	require.NoError(t, err)
	r := Judge(&c, res, 0)
	dir, err := WriteRun(t.TempDir(), r)
	require.NoError(t, err)
	f, err := LoadRunFile(filepath.Join(dir, "run.yaml"))
	require.NoError(t, err)
	assert.Equal(t, res.Config, f.SimConfig())
	assert.Equal(t, c.Name, f.Name)
	data, err := os.ReadFile(filepath.Join(dir, "run.yaml"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "# watermark run file"))
}

// The example in failpoints/RUNFILE.md is a valid run file.
func TestRunFileDocExampleParses(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "failpoints", "RUNFILE.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(data), "```yaml\n")
	require.True(t, ok, "RUNFILE.md has a yaml example")
	example, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	f, err := ParseRunFile("RUNFILE.md", []byte(example))
	require.NoError(t, err)
	ex, err := LoadRunFile(filepath.Join("testdata", "kip101-data-loss.yaml"))
	require.NoError(t, err)
	assert.Equal(t, ex.SimConfig(), f.SimConfig(), "the documented example is testdata/kip101-data-loss.yaml")
	assert.Equal(t, ex.Expect, f.Expect)
	assert.ElementsMatch(t, ex.Allowed, f.Allowed)
}
