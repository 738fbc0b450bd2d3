package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// asKfake makes this test binary a stock kfake broker in a process of its
// own, which prints its address and serves until stdin closes or it
// crashes: a third-party broker the kit knows nothing about.
const asKfake = "WATERMARK_TEST_BINARY_IS_KFAKE"

func serveKfake() {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(-1))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(c.ListenAddrs()[0])
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startKfake runs kfake in a child process and returns its address.
func startKfake(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), asKfake+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(addr)
}

// A stock kfake dies of the wire stage's unknown API key (a kfake bug).
// The check sends the bad requests after its cases, so every case gets a
// verdict, and then names the request kfake died of, never a wrong
// --bootstrap.
func TestCheckKfakeProcessGivesVerdictsAndNamesTheCrash(t *testing.T) {
	addr := startKfake(t)
	code, out, errOut := runCLI("check", "--target", "kafka", "--bootstrap", addr, "--case", "no-faults", "--case", "lost-answers",
		"--duration", "4s", "--settle", "3s", "--quiet", "--report-dir", t.TempDir())
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, exitOK, code, "both cases hold on kfake")
	assert.Contains(t, out, "no-faults")
	assert.Contains(t, out, "lost-answers")
	assert.Contains(t, errOut, "the bad ones are sent after the cases")
	assert.Contains(t, errOut, "the broker stopped answering after bad: unknown API key 9999")
	assert.NotContains(t, errOut, "is --bootstrap right")
}
