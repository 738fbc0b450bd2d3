package conformance

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/run"
)

// A slow fault on a kafka target slows the harness's proxy in front of
// the broker and, with --slow-cmd, runs the command with the delay (and
// 0 to undo it), in the cluster's own broker ids; the timeline names the
// command.
func TestSlowCmdSlowsTheBrokersPeerLinks(t *testing.T) {
	out := filepath.Join(t.TempDir(), "slow.log")
	px, err := cluster.NewProxy("127.0.0.1:0", "127.0.0.1:1")
	require.NoError(t, err)
	defer px.Close()
	kt := &KafkaTarget{SlowCmd: "echo {id} {ms} >> " + out}
	c := &cmdCluster{t: kt, n: 3, shift: 1, ctx: context.Background(), proxies: map[int]*cluster.Proxy{2: px}}
	require.NoError(t, c.SetLatency(2, 300*time.Millisecond))
	require.NoError(t, c.SetLatency(2, 0))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "1 300\n1 0\n", string(got), "the cluster numbers broker 2 as 1")
	require.Contains(t, c.How(run.FaultSlow, 2), "by the command `echo 1 {ms}")

	kt.SlowCmd = ""
	require.NoError(t, c.SetLatency(2, 300*time.Millisecond), "the proxy alone")
	require.Equal(t, "the harness's proxies", c.How(run.FaultSlow, 2))
}
