package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance"
)

// asCLI makes this test binary act as the watermark command, so that
// `watermark cluster` can start its nodes with os.Executable() in a test.
const asCLI = "WATERMARK_TEST_BINARY_IS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv(asKfake) == "1" {
		serveKfake()
	}
	os.Exit(m.Run())
}

func clusterFn(ctx context.Context, args []string, out, errOut *safeBuffer) int {
	return runClusterCtx(ctx, args, out, errOut)
}

func TestClusterServesKafkaClientsUntilCancelled(t *testing.T) {
	t.Setenv(asCLI, "1") // the nodes are this binary, started by the command
	dir := t.TempDir()
	out, errOut, stop := background(t, clusterFn, "--brokers", "2", "--dir", dir, "--proxies", "--min-insync-replicas", "1")
	boot := waitLine(t, out, errOut, `(?m)^bootstrap: (\S+)$`)[1]
	addrs := strings.Split(boot, ",")
	require.Len(t, addrs, 2)
	assert.Contains(t, out.String(), "data and logs: "+dir)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Brokers, 2, "both brokers registered")

	require.Equal(t, exitOK, stop(), "stderr:\n%s", errOut)
	assert.Contains(t, out.String(), "stopped in")
	assert.NotContains(t, out.String(), "exited unexpectedly")
}

func TestClusterBadUsageExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--brokers", "0"}, "--brokers 0: want 1..99"},
		{[]string{"--env", "NOEQUALS"}, `--env "NOEQUALS": want KEY=VALUE`},
		{[]string{"--truncation", "sometimes"}, `unknown truncation "sometimes"`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		code, out, errOut := runCLI(append([]string{"cluster"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	code, out, _ := runCLI("cluster", "--help")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "keeps the others running")
	assert.Contains(t, out, "--proxies")
}

// --control serves the fault endpoints the kit's --target kafka commands
// call: a broker killed through it stops answering, and restarted through
// it answers again; a broker that does not exist is an error. The
// target file it writes names the cluster, its commands and settings.
func TestClusterControlEndpoint(t *testing.T) {
	t.Setenv(asCLI, "1")
	tf := filepath.Join(t.TempDir(), "target.yaml")
	out, errOut, stop := background(t, clusterFn, "--brokers", "1", "--dir", t.TempDir(), "--fast", "--min-insync-replicas", "1",
		"--offsets-topic-replication-factor", "1", "--control", "127.0.0.1:0", "--target-file", tf, "--replica-fetch-max-bytes=7")
	control := waitLine(t, out, errOut, `(?m)^control: (\S+) `)[1]
	boot := waitLine(t, out, errOut, `(?m)^bootstrap: (\S+)$`)[1]
	waitLine(t, out, errOut, `(?m)^target file: `)
	kt, err := conformance.ReadTargetFile(tf)
	require.NoError(t, err)
	require.Equal(t, []string{boot}, kt.Bootstrap)
	require.Equal(t, "curl -fsS "+control+"/kill/{id}", kt.KillCmd)
	require.Equal(t, "curl -fsS "+control+"/stop/{id}", kt.StopCmd)
	require.True(t, kt.Capabilities().Stop, "the clean-stop cases can run")
	require.Empty(t, kt.IsolateCmd, "no proxies, no isolation")
	require.Equal(t, "7", kt.Settings["replica_fetch_max_bytes"])
	require.Empty(t, kt.SlowCmd, "no proxies, no slow links")
	require.Equal(t, "1500", kt.Settings["session_timeout_ms"], "--fast")
	get := func(path string) (int, string) {
		resp, err := http.Get(control + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/kill/1")
	require.Equal(t, http.StatusOK, code, body)
	_, err = net.DialTimeout("tcp", boot, time.Second)
	require.Error(t, err, "the broker is down")
	code, body = get("/restart/1")
	require.Equal(t, http.StatusOK, code, body)
	nc, err := net.DialTimeout("tcp", boot, 5*time.Second)
	require.NoError(t, err, "the broker is back")
	nc.Close()
	code, body = get("/stop/1")
	require.Equal(t, http.StatusOK, code, body)
	_, err = net.DialTimeout("tcp", boot, time.Second)
	require.Error(t, err, "the broker stopped")
	code, body = get("/restart/1")
	require.Equal(t, http.StatusOK, code, body)
	code, _ = get("/kill/7")
	require.Equal(t, http.StatusInternalServerError, code)
	require.Equal(t, exitOK, stop(), "stderr:\n%s", errOut)
}
