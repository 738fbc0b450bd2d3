package wire

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafkawire/fakebroker"
	"github.com/watermarkhq/watermark/impl/node"
)

// The reference broker passes the whole stage: every API and version it
// lists answers in kmsg's layout, ApiVersions downgrades as KIP-511 says,
// and bad requests are refused with the broker answering after.
func TestReferencePassesTheWireStage(t *testing.T) {
	lc, err := node.StartLocalCluster(node.LocalOptions{
		Brokers: 1, Dir: t.TempDir(),
		Broker: func(id int) broker.Config {
			cfg := broker.Config{Settings: run.DefaultSettings().Broker, ID: broker.NodeID(id)}
			cfg.MinInsyncReplicas, cfg.OffsetsTopicReplicationFactor = 1, 1
			return cfg
		},
		Controller: run.DefaultSettings().ControllerConfig(),
	})
	require.NoError(t, err)
	defer lc.Close()
	res, err := Run(context.Background(), lc.Bootstrap()[0], Options{})
	require.NoError(t, err)
	require.Empty(t, res.Failed(), res.Render())
	pins := res.Pins()
	require.Equal(t, res.Versions[kmsg.Produce.Int16()][1], pins[kmsg.Produce.Int16()], "every Produce version passed")
	require.Len(t, res.Bad, 3)
	require.Contains(t, res.Render(), "Metadata (empty topics)")
}

// TestMain lets the test binary play kfake in a process of its own
// (WATERMARK_KFAKE_CHILD=1): the stage's bad requests may crash a broker,
// and kfake in this process would take the test with it.
func TestMain(m *testing.M) {
	if os.Getenv("WATERMARK_KFAKE_CHILD") == "1" {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(c.ListenAddrs()[0])
		io.Copy(io.Discard, os.Stdin) // until the test closes it
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// kfake answers every well-formed request in kmsg's layout, and dies on
// the first bad one: an unknown API key makes it dereference the nil
// request kmsg.RequestForKey returns (kfake client_conn.go, read), which
// ends the process it runs in. The stage reports it as gone.
func TestKfakeWireTable(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WATERMARK_KFAKE_CHILD=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	res, err := Run(context.Background(), strings.TrimSpace(addr), Options{Timeout: 3 * time.Second})
	require.NoError(t, err)
	t.Logf("%s", res.Render())
	for _, c := range res.Cells {
		require.NotEqual(t, Malformed, c.Outcome, "%s: %s", c.Name(), c.Why)
		require.NotEqual(t, Gone, c.Outcome, "%s: %s", c.Name(), c.Why)
	}
	// The crash takes kfake's process a moment: the unknown key's own
	// cell may still see the next connection answered; the stage then
	// finds the broker gone and puts the death down to it by name.
	require.NotNil(t, res.Died, "kfake survived the bad requests:\n%s", res.Render())
	require.Equal(t, "bad: unknown API key 9999", res.Died.After, res.Render())
	require.Contains(t, res.Render(), "the broker stopped answering after bad: unknown API key 9999")
	require.Len(t, res.Bad, 1, "nothing is sent to a dead broker")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.Error(t, err, "kfake's process exited cleanly")
	case <-time.After(10 * time.Second):
		t.Fatal("kfake's process is still running after the bad requests")
	}
}

// A broker whose Metadata answer is not Metadata's layout is shown as
// malformed, with its bytes, and Metadata is not pinned; its ApiVersions
// passes.
func TestMalformedAnswerIsShown(t *testing.T) {
	addr := fakebroker.Start(t, brokenMetadata)
	res, err := Run(context.Background(), addr, Options{})
	require.NoError(t, err)
	var malformed []string
	for _, f := range res.Failed() {
		if f.Outcome == Malformed {
			malformed = append(malformed, f.Name())
		}
	}
	require.Contains(t, malformed, "Metadata v1 (null topics)", res.Render())
	_, pinned := res.Pins()[kmsg.Metadata.Int16()]
	require.False(t, pinned)
	require.Contains(t, res.Render(), "ff ff ff")
	for _, c := range res.Cells {
		if c.Key == kmsg.ApiVersions.Int16() && c.Version <= 1 {
			require.Equal(t, OK, c.Outcome, c.Name())
		}
	}
}

// brokenMetadata lists ApiVersions 0-1 and Metadata 0-1 and answers
// Metadata with bytes in no layout.
func brokenMetadata(_, _ int, key, version int16) ([]byte, bool) {
	switch key {
	case kmsg.ApiVersions.Int16():
		resp := kmsg.NewPtrApiVersionsResponse()
		if version > 1 {
			resp.ErrorCode = 35
		} else {
			resp.Version = version
		}
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 1}, {ApiKey: 3, MaxVersion: 1}}
		return resp.AppendTo(nil), true
	case kmsg.Metadata.Int16():
		return []byte("\x7f" + strings.Repeat("\xff", 11)), true // a count of 2^31-1 brokers, then nothing
	}
	return nil, false
}

// Pins take the highest version whose every request passed; a key whose
// every version failed is not pinned.
func TestPins(t *testing.T) {
	r := &Result{Cells: []Cell{
		{Key: 0, Version: 8, Outcome: OK}, {Key: 0, Version: 9, Outcome: Malformed}, {Key: 0, Version: 10, Outcome: OK},
		{Key: 3, Version: 1, Variant: "null topics", Outcome: OK}, {Key: 3, Version: 1, Variant: "empty topics", Outcome: Malformed},
		{Key: 3, Version: 0, Outcome: OK},
		{Key: 1, Version: 4, Outcome: Closed},
	}}
	require.Equal(t, map[int16]int16{0: 10, 3: 0}, r.Pins())
	require.Len(t, r.Failed(), 3)
}

func TestParseMaxVersion(t *testing.T) {
	for in, want := range map[string][2]int16{"Produce=9": {0, 9}, "metadata=4": {3, 4}, "1=11": {1, 11}} {
		k, v, err := ParseMaxVersion(in)
		require.NoError(t, err, in)
		require.Equal(t, want, [2]int16{k, v}, in)
	}
	for _, bad := range []string{"Produce", "Produce=x", "Nope=1", "Produce=-1"} {
		_, _, err := ParseMaxVersion(bad)
		require.Error(t, err, bad)
	}
}

// Answers that decode but break what the request asked are malformed:
// a Metadata answer listing a topic to a request for none or for
// another, a Produce answer without the partition written to, an answer
// with bytes past its end. The plain requests they answer right pass.
func TestAnswersKeepTheRequestsShape(t *testing.T) {
	addr := fakebroker.Start(t, func(_, _ int, key, version int16) ([]byte, bool) {
		switch key {
		case kmsg.ApiVersions.Int16():
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = min(version, 1)
			if version > 1 {
				resp.ErrorCode = 35
			}
			resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 1}, {ApiKey: 3, MinVersion: 4, MaxVersion: 4},
				{ApiKey: 0, MinVersion: 3, MaxVersion: 3}, {ApiKey: 2, MinVersion: 1, MaxVersion: 1}}
			return resp.AppendTo(nil), true
		case kmsg.Metadata.Int16():
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = version
			resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "localhost", Port: 9092}}
			tp := kmsg.NewMetadataResponseTopic()
			tp.Topic = kmsg.StringPtr("other")
			resp.Topics = []kmsg.MetadataResponseTopic{tp}
			return resp.AppendTo(nil), true
		case kmsg.Produce.Int16():
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = version
			return resp.AppendTo(nil), true
		case kmsg.ListOffsets.Int16():
			resp := kmsg.NewPtrListOffsetsResponse()
			resp.Version = version
			return append(resp.AppendTo(nil), 0xca, 0xfe), true
		}
		return nil, false
	})
	res, err := Run(context.Background(), addr, Options{})
	require.NoError(t, err)
	why := map[string]string{}
	for _, f := range res.Failed() {
		if f.Outcome == Malformed {
			why[f.Name()] = f.Why
		}
	}
	require.Contains(t, why["Metadata v4 (empty topics)"], "1 topics in the answer to a request for 0", res.Render())
	require.Contains(t, why["Metadata v4 (unknown topic)"], `lists topic "other"`)
	require.NotContains(t, why, "Metadata v4 (null topics)")
	require.Contains(t, why["Produce v3 (unknown topic)"], "the answer has 0 partitions")
	require.NotContains(t, why, "Produce v3")
	require.Contains(t, why["ListOffsets v1"], "2 bytes past the end of the answer: ca fe")
}

// A broker that dies of a well-formed request is named as having died of
// it: the stage stops there, the APIs it had not reached are listed as not
// sent (never as dozens of refused connections), and no bad request is
// sent after it.
func TestBrokerDyingOnARequestIsNamed(t *testing.T) {
	var fb *fakebroker.Broker
	fb = fakebroker.New(t, func(_, _ int, key, version int16) ([]byte, bool) {
		switch key {
		case kmsg.ApiVersions.Int16():
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = min(version, 1)
			if version > 1 {
				resp.Version, resp.ErrorCode = 0, 35
			}
			resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 1},
				{ApiKey: 3, MaxVersion: 0}, {ApiKey: 8, MinVersion: 2, MaxVersion: 2}, {ApiKey: 9, MaxVersion: 1}}
			return resp.AppendTo(nil), true
		case kmsg.Metadata.Int16():
			resp := kmsg.NewPtrMetadataResponse()
			resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 7, Host: "127.0.0.1", Port: 1}}
			return resp.AppendTo(nil), true
		case kmsg.OffsetCommit.Int16():
			fb.Crash()
		}
		return nil, false
	})
	res, err := Run(context.Background(), fb.Addr, Options{Timeout: 2 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, res.Died, res.Render())
	require.Equal(t, "OffsetCommit v2", res.Died.After)
	require.Equal(t, int32(7), res.NodeID, "Metadata named the broker")
	require.Equal(t, []int16{kmsg.OffsetFetch.Int16()}, res.Untested())
	require.Empty(t, res.Bad)
	out := res.Render()
	require.Contains(t, out, "the broker stopped answering after OffsetCommit v2")
	require.Contains(t, out, "OffsetFetch                      not sent")
	require.Equal(t, 1, strings.Count(out, "connection refused"), "once, in the death's reason")
	for _, c := range res.Cells {
		require.NotEqual(t, Gone, c.Outcome, c.Name())
	}

	// The same broker, alive: every cell is sent and nothing died.
	alive := fakebroker.New(t, func(_, _ int, key, version int16) ([]byte, bool) {
		if key == kmsg.ApiVersions.Int16() {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = min(version, 1)
			if version > 1 {
				resp.ErrorCode = 35
			}
			resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 1}, {ApiKey: 8, MinVersion: 2, MaxVersion: 2}}
			return resp.AppendTo(nil), true
		}
		return nil, false // closes the connection: refused, not dead
	})
	res, err = Run(context.Background(), alive.Addr, Options{Timeout: 2 * time.Second})
	require.NoError(t, err)
	require.Nil(t, res.Died, res.Render())
	require.Len(t, res.Bad, 3)
}
