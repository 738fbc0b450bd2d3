package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// safeBuffer is a bytes.Buffer a command may write while the test reads.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// background runs a command function until the test cancels it; wait
// returns its exit code.
func background(t *testing.T, fn func(context.Context, []string, *safeBuffer, *safeBuffer) int, args ...string) (out, errOut *safeBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &safeBuffer{}, &safeBuffer{}
	code := make(chan int, 1)
	go func() { code <- fn(ctx, args, out, errOut) }()
	var once sync.Once
	var result int
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case result = <-code:
			case <-time.After(30 * time.Second):
				t.Fatal("the command did not stop within 30s of its context ending")
			}
		})
		return result
	}
	t.Cleanup(func() { stop() })
	return out, errOut, stop
}

// serveFn runs serve until ctx ends, which is one stop signal: a broker
// stops cleanly.
func serveFn(ctx context.Context, args []string, out, errOut *safeBuffer) int {
	stops := make(chan struct{}, 1)
	go func() {
		<-ctx.Done()
		stops <- struct{}{}
	}()
	return serve(stops, args, out, errOut)
}

// waitLine waits for a line matching re on out and returns its submatches.
func waitLine(t *testing.T, out, errOut *safeBuffer, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	var m []string
	require.Eventually(t, func() bool {
		m = rx.FindStringSubmatch(out.String())
		return m != nil
	}, 30*time.Second, 10*time.Millisecond, "no line matching %s; stdout:\n%s\nstderr:\n%s", re, out, errOut)
	return m
}

func TestServeRunsAControllerAndABrokerUntilCancelled(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("a-secret-for-this-test"), 0o600))
	cOut, cErr, stopController := background(t, serveFn, "--role", "controller", "--listen", "127.0.0.1:0",
		"--data-dir", filepath.Join(dir, "controller"), "--cluster-secret-file", secret, "--verbose")
	ctrl := waitLine(t, cOut, cErr, `^controller listening on (\S+)\n`)[1]

	bOut, bErr, stopBroker := background(t, serveFn, "--id", "1", "--listen", "127.0.0.1:0",
		"--data-dir", filepath.Join(dir, "broker-1"), "--controller", ctrl, "--cluster-secret-file", secret, "--verbose")
	waitLine(t, bOut, bErr, `^broker 1 listening on 127\.0\.0\.1:\d+\n$`)
	require.Eventually(t, func() bool { return strings.Contains(bErr.String(), "broker 1: ") }, 10*time.Second, 10*time.Millisecond,
		"--verbose logs carry the node's prefix")

	assert.Equal(t, exitOK, stopBroker())
	assert.Contains(t, bErr.String(), "stopped cleanly", "SIGTERM is a controlled shutdown, then a flush and the clean-shutdown marker")
	assert.FileExists(t, filepath.Join(dir, "broker-1", "clean-shutdown"))
	assert.Equal(t, exitOK, stopController())
}

func TestServeBadUsageExitsTwoAndSaysHowToFixIt(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--id", "1", "--controller", "127.0.0.1:9093"}, "--data-dir is required"},
		{[]string{"--data-dir", dir, "--controller", "127.0.0.1:9093"}, "--id 0: want a broker id in 1..999"},
		{[]string{"--data-dir", dir, "--id", "1"}, "--controller is required for a broker"},
		{[]string{"--data-dir", dir, "--id", "1", "--controller", "x:1", "--route", "2"}, `--route "2": want ID=HOST:PORT`},
		{[]string{"--data-dir", dir, "--id", "1", "--controller", "x:1", "--route", "2=nowhere"}, `--route "2=nowhere"`},
		{[]string{"--data-dir", dir, "--role", "leader"}, `--role "leader": want broker or controller`},
		{[]string{"--data-dir", dir, "--role", "controller", "--id", "1"}, "--id is a broker flag"},
		{[]string{"--data-dir", dir, "--truncation", "sometimes"}, `unknown truncation "sometimes"`},
		{[]string{"--data-dir", dir, "--id", "1", "--controller", "x:1"}, "--cluster-secret-file is required"},
		{[]string{"--data-dir", dir, "--id", "1", "--controller", "x:1", "--max-connections", "0"}, "--max-connections 0: want at least 1"},
		{[]string{"--data-dir", dir, "--id", "1", "--controller", "x:1", "--connections-max-idle", "0s"}, "--connections-max-idle 0s: want a positive duration"},
		{[]string{"--data-dir", dir, "--role", "controller", "--max-connections", "9"}, "--max-connections is a broker flag"},
		{[]string{"--data-dir", dir, "--role", "controller"}, "--cluster-secret-file is required"},
		{[]string{"--data-dir", dir, "--role", "controller", "--cluster-secret-file", filepath.Join(dir, "none")}, "no such file"},
		{[]string{"--data-dir", dir, "--producer-state", "nope"}, `unknown producer state "nope"`},
		{[]string{"--data-dir", dir, "--session-timeout-ms", "0"}, "session_timeout_ms 0 must be positive"},
		{[]string{"--data-dir", dir, "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"--data-dir", dir, "extra"}, `unexpected argument "extra"`},
	} {
		code, out, errOut := runCLI(append([]string{"serve"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
		assert.Contains(t, errOut, "watermark serve --help", "%v", tc.args)
	}
}

func TestServeHelpStatesTheDefaults(t *testing.T) {
	code, out, _ := runCLI("serve", "--help")
	require.Equal(t, exitOK, code)
	for _, want := range []string{"--role", "--route", "--failpoint-http", "heartbeat 2 s", "session timeout 9 s", "--fast", "heartbeat 200 ms", "exits 3", "--min-insync-replicas int"} {
		assert.Contains(t, out, want)
	}
}

func TestSettingsFlagsReachTheNodes(t *testing.T) {
	s := run.DefaultSettings()
	s.Broker.MinInsyncReplicas = 1
	s.Broker.Truncation = partition.TruncateToHW
	s.Broker.ProducerState = partition.ProducerStateLeaderOnly
	s.Broker.FlushEveryAppend = true
	s.Broker.OffsetsTopicPartitions = 7
	s.Broker.Config.InitialRebalanceDelayMs = 9
	s.Controller.UncleanLeaderElection = true
	// What the cluster passes to serve parses back to the same settings:
	// every setting has its flag.
	fs := newTestFlagSet()
	sf := addSettingsFlags(fs)
	require.NoError(t, fs.Parse(append(append(run.Args(&s.Broker), run.Args(&s.Controller)...), run.Args(&s.Quorum)...)))
	got, err := sf.settings()
	require.NoError(t, err)
	require.Equal(t, s, got)
	bc := brokerConfig(got, 2)
	require.Equal(t, broker.NodeID(2), bc.ID)
	require.Equal(t, 1, bc.MinInsyncReplicas)
	// A bool flag alone means true, as flags do.
	fs = newTestFlagSet()
	sf = addSettingsFlags(fs)
	require.NoError(t, fs.Parse([]string{"--advance-hw-below-min-isr", "--truncation", "epoch-kip101"}))
	require.True(t, sf.s.Broker.AdvanceHWBelowMinISR)
	require.Equal(t, partition.TruncateToEpochKIP101, sf.s.Broker.Truncation)

	// Kafka's timeouts by default; --fast the harness's, with the flags
	// given on top.
	fs = newTestFlagSet()
	sf = addSettingsFlags(fs)
	require.NoError(t, fs.Parse(nil))
	got, err = sf.settings()
	require.NoError(t, err)
	require.Equal(t, run.KafkaSettings(), got)
	require.EqualValues(t, 9000, got.Controller.SessionTimeoutMs)
	fs = newTestFlagSet()
	sf = addSettingsFlags(fs)
	require.NoError(t, fs.Parse([]string{"--fast", "--replica-lag-time-max-ms", "4000"}))
	got, err = sf.settings()
	require.NoError(t, err)
	want := run.DefaultSettings()
	want.Broker.ReplicaLagTimeMaxMs = 4000
	require.Equal(t, want, got)
}

func TestServeExitCodeSaysWhyTheNodeStopped(t *testing.T) {
	var buf safeBuffer
	code := stopped("broker 2", &broker.FailpointError{Name: broker.FPHWAdvance, Action: broker.ActionCrash, Target: 2}, &buf)
	require.Equal(t, exitFailpoint, code)
	require.Contains(t, buf.String(), broker.FailpointPath(broker.FPHWAdvance))
	require.Equal(t, exitViolated, stopped("broker 2", errors.New("disk full"), &buf))
}

func newTestFlagSet() *pflag.FlagSet { return pflag.NewFlagSet("test", pflag.ContinueOnError) }
