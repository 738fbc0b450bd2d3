package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/linearizability"
)

// roundTrip writes spec as a run file, parses it back and returns its spec.
func roundTrip(t *testing.T, spec run.Spec) (run.Spec, string) {
	t.Helper()
	data := (&run.File{Name: "x", Spec: spec, Expect: run.Expect{Holds: true}}).Marshal()
	f, err := run.ParseFile("x.yaml", data)
	require.NoError(t, err, string(data))
	return f.Spec, string(data)
}

// A run file is the Spec in YAML: every case's run, and runs with each
// kind of field set, come back from their file as they were.
func TestRunFileRoundTripsEveryCase(t *testing.T) {
	specs := map[string]run.Spec{
		"default":              run.DefaultSpec(1),
		"kip101-data-loss/hw":  cases.KIP101DataLoss(3, partition.TruncateToHW),
		"kip101-divergence/hw": cases.KIP101Divergence(4, partition.TruncateToHW),
		"leader-only-nemesis": func() run.Spec {
			c := run.DefaultSpec(5)
			c.Broker.ProducerState = partition.ProducerStateLeaderOnly
			return c
		}(),
		"fault-with-partition": func() run.Spec {
			c := run.DefaultSpec(6)
			c.Faults = []run.Fault{{Kind: run.FaultSlow, Role: run.RoleFollower, Partition: &kafka.TopicPartition{Topic: "t", Partition: 1}, DelayMs: 50, When: run.Trigger{AfterAcks: 3}}}
			c.Network.DropRate = 0.1234567
			c.Workload.CommitMode = run.CommitBeforeProcess
			c.Controller.KeepISROnRestart = true
			c.Broker.Config.InitialRebalanceDelayMs = 7
			return c
		}(),
	}
	for _, c := range cases.Cases {
		specs[c.Name] = c.Spec(1)
	}
	for name, spec := range specs {
		got, text := roundTrip(t, spec)
		require.Equal(t, spec, got, "%s:\n%s", name, text)
	}
}

func TestRunFileDefaults(t *testing.T) {
	f, err := run.ParseFile("min.yaml", []byte("seed: 9\nexpect: holds\n"))
	require.NoError(t, err)
	want := run.DefaultSpec(9)
	want.ContinueAfterViolation = true
	assert.Equal(t, want, f.Spec)
	assert.True(t, f.Expect.Holds)
	assert.Equal(t, "min", f.Name)

	f, err = run.ParseFile("t.yaml", []byte("expect: [lost-write, StrongIsr]\ncluster:\n  brokers: 2\n  topics:\n    - {name: a, partitions: 1}\n    - {partitions: 3}\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"lost-write", "StrongIsr"}, f.Expect.Found)
	assert.Equal(t, []run.Topic{{Name: "a", Partitions: 1, ReplicationFactor: 2}, {Name: "t", Partitions: 3, ReplicationFactor: 2}}, f.Topics)
}

func TestRunFileErrorsNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"seed: 1\nexpect: holds\nbroker:\n  truncaton: hw\n", []string{"bad.yaml:4:", "broker.truncaton", "unknown field", "truncation"}},
		{"expect: holds\nbroker:\n  truncation: sometimes\n", []string{"bad.yaml:3:", "broker.truncation", `"sometimes"`, "epoch, hw"}},
		{"expect: holds\nbroker:\n  session_timeout_ms: 900\n", []string{"bad.yaml:3:", "broker.session_timeout_ms", "moved to controller.session_timeout_ms"}},
		{"expect: holds\ncontroller:\n  unclean_recovery: proactive\n", []string{"bad.yaml:3:", "controller.unclean_recovery", `"proactive"`, "none, balanced, aggressive"}},
		{"expect: holds\ncontroller:\n  unclean_recovery: balanced\n  unclean_recovery_timeout_ms: 0\n", []string{"bad.yaml", "unclean_recovery_timeout_ms 0 must be positive with unclean_recovery balanced"}},
		{"expect: holds\nfaults:\n  - kind: crash\n    node: 1\n  - kind: explode\n", []string{"bad.yaml:5:", "faults[1].kind", `"explode"`, "powerloss", "restart-producer"}},
		{"expect: holds\nfailpoints:\n  - name: nowhere\n    term: return\n", []string{"bad.yaml:3:", "failpoints[0].name", "hwCheckpointWrite"}},
		{"expect: [lost-write, oops]\n", []string{"bad.yaml:1:", "expect[1]", `"oops"`, "lost-write", "StrongIsr"}},
		{"expect: maybe\n", []string{"bad.yaml:1:", "expect", "holds"}},
		{"seed: 1\n", []string{"bad.yaml:1:", "expect", "missing"}},
		{"expect: holds\nseed: many\n", []string{"bad.yaml:2:", "seed", "whole number"}},
		{"expect: holds\nworkload:\n  acks: 2\n", []string{"bad.yaml:3:", "workload.acks", "all, 1, 0"}},
		{"expect: holds\nworkload:\n  commit_mode: sometimes\n", []string{"bad.yaml:3:", "workload.commit_mode", "before-process"}},
		{"expect: holds\nworkload:\n  assignor: sticky\n", []string{"bad.yaml:3:", "workload.assignor", `"sticky"`, "want one of range, roundrobin (or empty, the default)"}},
		{"expect: holds\nfaults:\n  - kind: messages\n    node: 1\n    for_ms: 100\n    messages:\n      copy_late_ms: 500\n", []string{"bad.yaml", "copy_late_ms without duplicate", "set duplicate"}},
		{"expect: holds\nexpect: holds\n", []string{"bad.yaml:2:", "given twice"}},
		{"expect: holds\ncluster:\n  brokers: 0\n", []string{"bad.yaml", "brokers = 0"}},
		{"expect: holds\nallowed: [lost-write, StrongIsr, oops]\n", []string{"bad.yaml:2:", "allowed[2]", "LogMatching"}},
		{"expect: holds\nseed: [1\n", []string{"bad.yaml", "line"}},
		{"# watermark run file: the format is failpoin", []string{"bad.yaml", "only comments", "cut short", "line 1, after column 44"}},
		{"expect: holds\nfailpoints:\n  - name: hwCheckpointWrite\n    term: 1*retrn(\"crash\")\n", []string{"bad.yaml:4:", "failpoints[0].term", "not a failpoint term", "1*return"}},
		{"", []string{"bad.yaml", "empty run file"}},
	} {
		_, err := run.ParseFile("bad.yaml", []byte(tc.text))
		require.Error(t, err, tc.text)
		for _, w := range tc.want {
			assert.Contains(t, err.Error(), w, tc.text)
		}
	}
}

// The example files parse, and the KIP-101 one is the scenario written out.
func TestExampleRunFiles(t *testing.T) {
	f, err := run.LoadFile(filepath.Join("testdata", "kip101-data-loss.yaml"))
	require.NoError(t, err)
	want := cases.KIP101DataLoss(1, partition.TruncateToHW)
	want.Workload.Consumers = 1
	want.ContinueAfterViolation = true
	assert.Equal(t, want, f.Spec)
	assert.Equal(t, []string{linearizability.AnomalyLostWrite}, f.Expect.Found)

	f, err = run.LoadFile(filepath.Join("testdata", "follower-crash-holds.yaml"))
	require.NoError(t, err)
	assert.True(t, f.Expect.Holds)
	assert.NotEmpty(t, f.Faults)
}

// --set changes one field of a spec by its run-file path, as a run file
// would, and says what is wrong with a bad path or value.
func TestSetByRunFileKey(t *testing.T) {
	s := run.DefaultSpec(1)
	require.NoError(t, s.Set("broker.truncation", "hw"))
	require.NoError(t, s.Set("broker.min_insync_replicas", "1"))
	require.NoError(t, s.Set("controller.unclean_leader_election", "true"))
	require.NoError(t, s.Set("controller.unclean_recovery", "aggressive"))
	require.NoError(t, s.Set("workload.acks", "1"))
	require.NoError(t, s.Set("duration_ms", "500"))
	assert.Equal(t, partition.TruncateToHW, s.Broker.Truncation)
	assert.Equal(t, 1, s.Broker.MinInsyncReplicas)
	assert.True(t, s.Controller.UncleanLeaderElection)
	assert.Equal(t, controller.RecoveryAggressive, s.Controller.UncleanRecovery)
	assert.Equal(t, partition.AcksLeader, s.Workload.Acks)
	assert.Equal(t, int64(500), s.DurationMs)
	for path, want := range map[string]string{
		"broker.truncaton":          "no such field",
		"broker":                    "is a section",
		"broker.truncation":         "want one of",
		"duration_ms.x":             "has no fields",
		"workload.producers":        "whole number",
		"broker.session_timeout_ms": "moved to controller.session_timeout_ms",
	} {
		err := s.Set(path, "nope")
		require.Error(t, err, path)
		assert.Contains(t, err.Error(), want, path)
	}
}

// The example in failpoints/RUNFILE.md is a valid run file.
func TestRunFileDocExampleParses(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "failpoints", "RUNFILE.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(data), "```yaml\n")
	require.True(t, ok, "RUNFILE.md has a yaml example")
	example, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	f, err := run.ParseFile("RUNFILE.md", []byte(example))
	require.NoError(t, err)
	ex, err := run.LoadFile(filepath.Join("testdata", "kip101-data-loss.yaml"))
	require.NoError(t, err)
	assert.Equal(t, ex.Spec, f.Spec, "the documented example is testdata/kip101-data-loss.yaml")
	assert.Equal(t, ex.Expect, f.Expect)
	assert.ElementsMatch(t, ex.Allowed, f.Allowed)
}
