package failpoints_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/failpoints"
	"github.com/watermarkhq/watermark/impl/broker"
)

// exits collects the node processes that ended on their own.
type exits struct {
	mu  sync.Mutex
	all []cluster.Exit
}

func (e *exits) add(x cluster.Exit) { e.mu.Lock(); e.all = append(e.all, x); e.mu.Unlock() }
func (e *exits) of(id int) []cluster.Exit {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []cluster.Exit
	for _, x := range e.all {
		if x.ID == id {
			out = append(out, x)
		}
	}
	return out
}

// TestFailpointsCrashRealProcesses switches failpoints on in real broker
// processes, both ways the issue asks for: through pingcap/failpoint's HTTP
// endpoint while the broker runs, and through GO_FAILPOINTS at its start.
// Each crashes the broker at its exact point (exit code 3, the failpoint
// named in its log), and the cluster goes on: the idempotent producer's
// records all arrive exactly once.
func TestFailpointsCrashRealProcesses(t *testing.T) {
	bin := failpoints.RequireBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ex exits
	c, err := cluster.Start(ctx, cluster.Options{
		Binary: bin, Brokers: 3, Dir: t.TempDir(), Settings: run.DefaultSettings(),
		FailpointHTTP: true, OnExit: ex.add, Logf: t.Logf,
	})
	require.NoError(t, err)
	defer func() { _ = c.Stop() }()

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic("fp"),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "fp", 1, 3
	create.Topics = append(create.Topics, topic)
	resp, err := create.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].ErrorCode)

	produce := func(from, to int) {
		for i := from; i < to; i++ {
			r := &kgo.Record{Value: []byte(fmt.Sprint("v", i)), Partition: 0}
			require.NoError(t, cl.ProduceSync(ctx, r).FirstErr(), "record %d", i)
		}
	}
	produce(0, 5)

	// 1. HTTP endpoint: the leader crashes right after its next append.
	leader := leaderOf(ctx, t, cl)
	fp := broker.FailpointPath(broker.FPLeaderAfterAppend)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+c.FailpointAddr(leader)+"/"+fp, strings.NewReader(`1*return("crash")`))
	require.NoError(t, err)
	hr, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = hr.Body.Close()
	require.Less(t, hr.StatusCode, 300, "failpoint HTTP endpoint refused: %s", hr.Status)
	produce(5, 10)
	require.Eventually(t, func() bool { return len(ex.of(leader)) > 0 }, 30*time.Second, 50*time.Millisecond)
	crash := ex.of(leader)[0]
	require.Equal(t, 3, crash.Code, "a failpoint crash exits 3: %s", crash.LogTail)
	require.Contains(t, crash.LogTail, broker.FPLeaderAfterAppend)
	require.NoError(t, c.Restart(ctx, leader))

	// 2. GO_FAILPOINTS: a follower restarted with it crashes at its first
	// replicated append.
	follower := 1
	for follower == leaderOf(ctx, t, cl) {
		follower++
	}
	before := len(ex.of(follower))
	require.NoError(t, c.Env(follower, []string{"GO_FAILPOINTS=" + broker.FailpointPath(broker.FPFollowerAfterAppend) + `=1*return("crash")`}))
	require.NoError(t, c.Restart(ctx, follower))
	produce(10, 15)
	require.Eventually(t, func() bool { return len(ex.of(follower)) > before }, 30*time.Second, 50*time.Millisecond)
	crash = ex.of(follower)[len(ex.of(follower))-1]
	require.Equal(t, 3, crash.Code, "a failpoint crash exits 3: %s", crash.LogTail)
	require.Contains(t, crash.LogTail, broker.FPFollowerAfterAppend)
	require.NoError(t, c.Env(follower, nil))
	require.NoError(t, c.Restart(ctx, follower))
	produce(15, 20)

	// Every record exactly once, in order.
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fp": {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cons.Close()
	var got []string
	for len(got) < 20 {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		require.Equal(t, fmt.Sprint("v", i), v)
	}
}

func leaderOf(ctx context.Context, t *testing.T, cl *kgo.Client) int {
	t.Helper()
	leader := -1
	require.Eventually(t, func() bool {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("fp")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return false
		}
		leader = int(resp.Topics[0].Partitions[0].Leader)
		return leader > 0
	}, 30*time.Second, 50*time.Millisecond)
	return leader
}
