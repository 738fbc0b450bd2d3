package conformance

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A target file gives the cluster and its commands; what is wrong with
// one is said with the file and the fix. Replay lines name the file.
func TestReadTargetFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	good := write("good.yaml", "bootstrap: [a:9092, b:9092]\nkill_cmd: docker kill kafka{id}\nrestart_cmd: docker start kafka{id}\nslow_cmd: tc {id} {ms}\n")
	kt, err := ReadTargetFile(good)
	require.NoError(t, err)
	require.Equal(t, []string{"a:9092", "b:9092"}, kt.Bootstrap)
	require.Equal(t, "docker kill kafka{id}", kt.KillCmd)
	require.Equal(t, "tc {id} {ms}", kt.SlowCmd)
	require.True(t, kt.Capabilities().Crash)
	kt.DurationMs = 5000
	require.Equal(t, []string{"--target-file=" + good, "--duration=5000ms"}, kt.ReplayArgs())

	for _, tc := range []struct{ body, want string }{
		{"", "empty target file"},
		{"kill_cmd: x\n", "no bootstrap"},
		{"bootstrap: [a:1]\nkil_cmd: x\n", "line 2: field kil_cmd not found"},
		{"bootstrap: [a:1]\nkill_cmd: x\n", "kill_cmd and restart_cmd go together"},
		{"bootstrap: [a:1]\nsettings: {replica_fetch_max: 1}\n", "replica_fetch_max: no such setting"},
		{"bootstrap: [a:1]\nsettings: {auto_leader_rebalance: maybe}\n", "auto_leader_rebalance: \"maybe\": want true or false"},
	} {
		_, err := ReadTargetFile(write("bad.yaml", tc.body))
		require.ErrorContains(t, err, tc.want, "%q", tc.body)
		require.ErrorContains(t, err, "bad.yaml")
	}
}

// The create-topic command gets the topic, its shape and its configs.
func TestCreateTopicCmd(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	kt := &KafkaTarget{CreateTopicCmd: "echo {topic} {partitions} {rf} {configs} {config_flags} > " + out}
	require.NoError(t, kt.createTopicWithCmd(context.Background(), "t1", 3, 2, map[string]string{"min.insync.replicas": "2", "a": "b"}))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "t1 3 2 a=b,min.insync.replicas=2 --config a=b --config min.insync.replicas=2\n", string(got))

	kt.CreateTopicCmd = "exit 3"
	require.ErrorContains(t, kt.createTopicWithCmd(context.Background(), "t1", 1, 1, nil), `"exit 3"`)
}
