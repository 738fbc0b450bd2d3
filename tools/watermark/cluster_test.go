package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// asCLI makes this test binary act as the watermark command, so that
// `watermark cluster` can start its nodes with os.Executable() in a test.
const asCLI = "WATERMARK_TEST_BINARY_IS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
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
