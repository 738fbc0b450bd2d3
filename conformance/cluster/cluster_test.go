package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/fpname"
)

// binary is the watermark executable the clusters run: $WATERMARK_BIN, or
// one built for this test run.
var binary string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	bin, cleanup, err := TestBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	binary = bin
	return m.Run()
}

const topic = "t"

// startCluster starts a 3-broker cluster that stops with the test; a
// failed test's logs are shown.
func startCluster(t *testing.T, proxies bool) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{
		Binary:   binary,
		Brokers:  3,
		Dir:      t.TempDir(),
		Settings: run.DefaultSettings(),
		Proxies:  proxies,
		Logf:     t.Logf,
		OnExit:   func(e Exit) { t.Logf("%s\n%s", e, e.LogTail) },
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.Stop())
		if t.Failed() {
			for id := 1; id <= 3; id++ {
				t.Logf("end of %s:\n%s", c.LogPath(id), c.LogTail(id))
			}
		}
	})
	return c
}

func newClient(t *testing.T, c *Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RetryTimeout(45 * time.Second),
		// A request to a paused or cut-off broker fails after 5s instead
		// of kgo's 10s+10s, so that a failover test spends its time on
		// the failover.
		kgo.ProduceRequestTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, cl *kgo.Client) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 3
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), "create topic %s", topic)
}

// produce writes values [from, to) to partition 0 and requires every write
// to be acknowledged; the client retries through leader changes.
func produce(t *testing.T, cl *kgo.Client, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr(), "produce v%d..v%d", from, to-1)
}

// consumeAll reads partition 0 from its start until n records came, and
// requires them to be exactly v0..v(n-1), in order.
func consumeAll(t *testing.T, c *Cluster, n int) {
	t.Helper()
	cl := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fetches := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records", len(got), n)
		fetches.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("v%d", i)
	}
	require.Equal(t, want, got, "every acknowledged record, once, in order")
}

// partition0 asks the cluster for partition 0's leader and ISR.
func partition0(cl *kgo.Client) (leader int32, isr []int32, ok bool) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, nil, false
	}
	p := resp.Topics[0].Partitions[0]
	return p.Leader, p.ISR, p.Leader > 0
}

// partition0LeaderFrom asks broker id itself (not any broker, which could
// be a paused one) for partition 0's leader and leader epoch.
func partition0LeaderFrom(cl *kgo.Client, id int) (leader, epoch int32, ok bool) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(id))
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, -1, false
	}
	p := resp.Topics[0].Partitions[0]
	return p.Leader, p.LeaderEpoch, p.ErrorCode == 0 && p.Leader > 0
}

// leader is the broker that leads partition 0.
func leader(t *testing.T, cl *kgo.Client) int {
	t.Helper()
	var id int32
	require.Eventually(t, func() bool {
		var ok bool
		id, _, ok = partition0(cl)
		return ok
	}, 30*time.Second, 50*time.Millisecond, "partition 0 has no leader")
	return int(id)
}

// waitISR waits until partition 0's ISR holds exactly want (in any order).
func waitISR(t *testing.T, cl *kgo.Client, want ...int32) {
	t.Helper()
	var isr []int32
	require.Eventually(t, func() bool {
		_, got, ok := partition0(cl)
		isr = got
		return ok && len(got) == len(want) && func() bool {
			for _, w := range want {
				if !slices.Contains(got, w) {
					return false
				}
			}
			return true
		}()
	}, 30*time.Second, 50*time.Millisecond, "ISR of partition 0 is %v, want %v", &isr, want)
}

// A broker killed with SIGKILL loses no acknowledged record: the producer
// fails over to a new leader, the restarted broker comes back on the same
// address, and a consumer reads every record once.
func TestKillLeaderProduceRestartConsume(t *testing.T) {
	c := startCluster(t, false)
	cl := newClient(t, c)
	createTopic(t, cl)
	produce(t, cl, 0, 100)

	old := leader(t, cl)
	addr := c.Addr(old)
	require.NoError(t, c.Kill(old))
	require.False(t, c.Running(old))
	produce(t, cl, 100, 200)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.Restart(ctx, old))
	require.True(t, c.Running(old))
	require.Equal(t, addr, c.Addr(old))
	require.NoError(t, c.WaitReady(ctx))
	consumeAll(t, c, 200)
}

// With min ISR 2 of 3, isolating one follower (from its peers, the
// controller and clients) does not stop acks=all produces: it leaves the
// ISR and the other two go on. Healing brings it back into the ISR; cutting
// only the link between the leader and one follower drops just that one.
func TestNetworkFaultsShrinkTheISRAndHealingRestoresIt(t *testing.T) {
	c := startCluster(t, true)
	cl := newClient(t, c)
	createTopic(t, cl)
	produce(t, cl, 0, 20)

	lead := leader(t, cl)
	f1, f2 := lead%3+1, (lead+1)%3+1
	require.NoError(t, c.Isolate(f1))
	produce(t, cl, 20, 60)
	waitISR(t, cl, int32(lead), int32(f2))

	require.NoError(t, c.Heal())
	waitISR(t, cl, 1, 2, 3)
	produce(t, cl, 60, 80)

	require.NoError(t, c.Cut(lead, f2))
	waitISR(t, cl, int32(lead), int32(f1))
	produce(t, cl, 80, 100)
	require.NoError(t, c.Heal())
	waitISR(t, cl, 1, 2, 3)
	consumeAll(t, c, 100)
}

// A leader paused with SIGSTOP is replaced once its session times out; when
// it resumes it must not accept or serve anything as the old leader.
func TestPausedLeaderIsReplacedAndRejoins(t *testing.T) {
	c := startCluster(t, false)
	cl := newClient(t, c)
	createTopic(t, cl)
	produce(t, cl, 0, 20)

	old := leader(t, cl)
	var oldEpoch int32
	require.Eventually(t, func() bool {
		l, e, ok := partition0LeaderFrom(cl, old)
		oldEpoch = e
		return ok && l == int32(old)
	}, 30*time.Second, 50*time.Millisecond, "broker %d does not report itself leading partition 0", old)
	require.NoError(t, c.Pause(old))
	produce(t, cl, 20, 60)

	// Replaced while still paused: both other brokers name a leader that
	// is not the paused one, in a newer leader epoch.
	for id := 1; id <= 3; id++ {
		if id == old {
			continue
		}
		var last struct{ Leader, Epoch int32 }
		require.Eventually(t, func() bool {
			var ok bool
			last.Leader, last.Epoch, ok = partition0LeaderFrom(cl, id)
			return ok && last.Leader != int32(old) && last.Epoch > oldEpoch
		}, 60*time.Second, 100*time.Millisecond,
			"broker %d's last view of partition 0 is %+v: the paused leader %d (epoch %d) was not replaced", id, &last, old, oldEpoch)
	}
	require.NoError(t, c.Resume(old))
	produce(t, cl, 60, 80)
	consumeAll(t, c, 80)
}

// The controller comes back from SIGKILL with its state, and the cluster
// goes on.
func TestControllerRestart(t *testing.T) {
	c := startCluster(t, false)
	cl := newClient(t, c)
	createTopic(t, cl)
	produce(t, cl, 0, 20)

	require.NoError(t, c.KillController())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.RestartController(ctx))
	require.NoError(t, c.WaitReady(ctx))
	produce(t, cl, 20, 40)
	consumeAll(t, c, 40)
}

// A node that dies on its own is reported with its exit and its log; a
// failpoint switched on at run time over HTTP crashes exactly the broker
// it was set on (exit 3), and the cluster fails over and takes it back.
func TestFailpointCrashIsReportedAndTheBrokerComesBack(t *testing.T) {
	if !fpname.Compiled() {
		if os.Getenv("WATERMARK_REQUIRE_FAILPOINTS") != "" {
			t.Fatal("failpoints are not compiled in this build")
		}
		t.Skip("failpoints are not compiled into this test (run it with `make test`, which builds the nodes with them too)")
	}
	exits := make(chan Exit, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{
		Binary: binary, Brokers: 3, Dir: t.TempDir(), Settings: run.DefaultSettings(),
		FailpointHTTP: true, Logf: t.Logf,
		OnExit: func(e Exit) { exits <- e },
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Stop()) }()
	cl := newClient(t, c)
	createTopic(t, cl)
	produce(t, cl, 0, 20)

	old := leader(t, cl)
	enableFailpoint(t, c.FailpointAddr(old), fpname.LeaderAfterAppend, `1*return("crash")`)
	produce(t, cl, 20, 40)
	select {
	case e := <-exits:
		require.Equal(t, old, e.ID)
		require.Equal(t, 3, e.Code, "a failpoint crash exits 3: %s", e)
		require.Contains(t, e.LogTail, fpname.Path(fpname.LeaderAfterAppend))
	case <-ctx.Done():
		t.Fatal("the leader did not crash at its failpoint")
	}
	require.NoError(t, c.Restart(ctx, old))
	require.NoError(t, c.WaitReady(ctx))
	consumeAll(t, c, 40)
}

func enableFailpoint(t *testing.T, addr, name, term string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://"+addr+"/"+fpname.Path(name), strings.NewReader(term))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// A broker killed behind the cluster's back is reported, with its log.
func TestUnexpectedExitIsReported(t *testing.T) {
	exits := make(chan Exit, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{
		Binary: binary, Brokers: 2, Dir: t.TempDir(), Settings: run.DefaultSettings(), Logf: t.Logf,
		OnExit: func(e Exit) { exits <- e },
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Stop()) }()

	p := c.brokers[2]
	p.mu.Lock()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.mu.Unlock()
	select {
	case e := <-exits:
		require.Equal(t, 2, e.ID)
		require.Equal(t, "broker 2", e.Node)
		require.Equal(t, -1, e.Code)
		require.Contains(t, e.State, "killed")
		require.Contains(t, e.LogTail, "broker 2 listening on")
	case <-ctx.Done():
		t.Fatal("no exit reported")
	}
	require.False(t, c.Running(2))
	require.True(t, c.Running(1))
	require.NoError(t, c.Kill(2), "killing a dead broker is not an error")
	require.ErrorIs(t, c.Pause(2), ErrNotRunning)
	require.NoError(t, c.Stop())
	require.NoError(t, c.Stop(), "Stop twice")
	require.False(t, c.Running(1))
}

func TestFaultsNeedProxiesAndKnownBrokers(t *testing.T) {
	c := &Cluster{opts: Options{Brokers: 3}, brokers: map[int]*process{1: {}, 2: {}, 3: {}}}
	require.ErrorIs(t, c.Cut(1, 2), ErrNoProxies)
	require.ErrorIs(t, c.Isolate(1), ErrNoProxies)
	require.ErrorIs(t, c.Heal(), ErrNoProxies)
	require.ErrorIs(t, c.SetLatency(1, time.Second), ErrNoProxies)
	c.opts.Proxies = true
	require.ErrorContains(t, c.Isolate(4), "no broker 4: brokers are 1..3")
	require.ErrorContains(t, c.Kill(0), "no broker 0")
}

func TestStartRejectsBadOptions(t *testing.T) {
	ctx := context.Background()
	_, err := Start(ctx, Options{Brokers: 3, Settings: run.DefaultSettings()})
	require.ErrorContains(t, err, "no Binary")
	_, err = Start(ctx, Options{Binary: binary, Brokers: 0, Settings: run.DefaultSettings()})
	require.ErrorContains(t, err, "0 brokers")
	_, err = Start(ctx, Options{Binary: binary, Brokers: 1})
	require.ErrorContains(t, err, "session_timeout_ms")
}

// A node that cannot start reports why, with the end of its log.
func TestStartFailureShowsTheLog(t *testing.T) {
	dir := t.TempDir()
	// A file where the controller's data directory should be.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "controller"), []byte("not a directory"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Start(ctx, Options{Binary: binary, Brokers: 1, Dir: dir, Settings: run.DefaultSettings()})
	require.ErrorContains(t, err, "controller exited before it was listening")
	require.ErrorContains(t, err, "data directory")
}
