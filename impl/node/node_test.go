package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/kafkawire"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

// testCluster is a controller and brokers in this process, on real TCP.
type testCluster struct {
	t       *testing.T
	dir     string
	ctrl    *Controller
	ctrlCfg ControllerConfig
	brokers map[broker.NodeID]*Broker
	addrs   map[broker.NodeID]string
}

func brokerSettings(id broker.NodeID) broker.Config {
	cfg := broker.DefaultConfig(id)
	cfg.MinInsyncReplicas = 2
	cfg.ReplicaLagTimeMaxMs = 3000
	cfg.ReplicaFetchWaitMaxMs = 100
	cfg.RequestTimeoutMs = 1000
	cfg.HeartbeatIntervalMs, cfg.HWCheckpointIntervalMs = 50, 500
	cfg.OffsetsTopicPartitions = 3
	return cfg
}

// testSecret is the tests' clusters' secret.
var testSecret = []byte("watermark-test-cluster-secret")

func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, dir: t.TempDir(), brokers: map[broker.NodeID]*Broker{}, addrs: map[broker.NodeID]string{}}
	tc.ctrlCfg = ControllerConfig{
		Secret:     testSecret,
		Controller: controller.Config{SessionTimeoutMs: 500},
		DataDir:    filepath.Join(tc.dir, "controller"),
		Logf:       t.Logf,
	}
	var err error
	tc.ctrl, err = StartController(tc.ctrlCfg)
	require.NoError(t, err)
	tc.ctrlCfg.Listen = tc.ctrl.Addr()
	for id := broker.NodeID(1); id <= broker.NodeID(n); id++ {
		tc.startBroker(id)
	}
	t.Cleanup(func() {
		for _, b := range tc.brokers {
			_ = b.Close()
		}
		_ = tc.ctrl.Close()
	})
	require.Eventually(t, func() bool {
		m, ok := tc.call(1, 1, broker.MetadataRequest{Correlation: 1}).(broker.MetadataResponse)
		return ok && len(m.LiveBrokers) == n && len(m.Addresses) == n
	}, 10*time.Second, 10*time.Millisecond, "brokers never registered")
	return tc
}

func (tc *testCluster) startBroker(id broker.NodeID) *Broker {
	listen := tc.addrs[id]
	b, err := StartBroker(BrokerConfig{
		Secret:      testSecret,
		Broker:      brokerSettings(id),
		DataDir:     filepath.Join(tc.dir, fmt.Sprint("broker-", id)),
		Listen:      listen,
		Controllers: []string{tc.ctrl.Addr()},
		Logf:        func(f string, a ...any) { tc.t.Logf("broker %d: "+f, append([]any{id}, a...)...) },
	})
	require.NoError(tc.t, err)
	tc.brokers[id] = b
	tc.addrs[id] = b.Addr()
	return b
}

// call sends msg from a new session on broker `at` to node `to` and waits
// for the answer.
func (tc *testCluster) call(at, to broker.NodeID, msg kafka.Message) any {
	return tc.callWithin(at, to, msg, 5*time.Second)
}

// callWithin is call with its own wait for the answer.
func (tc *testCluster) callWithin(at, to broker.NodeID, msg kafka.Message, wait time.Duration) any {
	s := tc.brokers[at].Open()
	defer s.Close()
	s.Send(to, msg)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	env, err := s.Recv(ctx)
	if err != nil {
		return err
	}
	return env.Msg
}

// leader waits until broker `at` knows a leader for tp in the ISR of `isr`
// members at least, and returns it.
func (tc *testCluster) leader(at broker.NodeID, tp kafka.TopicPartition, isr int, not broker.NodeID) kafka.PartitionState {
	tc.t.Helper()
	var got kafka.PartitionState
	require.Eventually(tc.t, func() bool {
		m, ok := tc.call(at, at, broker.MetadataRequest{Correlation: 1}).(broker.MetadataResponse)
		if !ok {
			return false
		}
		for _, p := range m.Partitions {
			if p.TopicPartition == tp && p.Leader > 0 && broker.NodeID(p.Leader) != not && len(p.ISR) >= isr {
				got = p
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond)
	return got
}

func produce(tc *testCluster, leader broker.NodeID, tp kafka.TopicPartition, value string) broker.ProduceResponse {
	tc.t.Helper()
	resp, ok := tc.call(leader, leader, broker.ProduceRequest{
		Correlation: 7, TopicPartition: tp, Acks: partition.AcksAll, TimeoutMs: 3000,
		Batch: record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
			Records: []record.Record{{Value: []byte(value)}}},
	}).(broker.ProduceResponse)
	require.True(tc.t, ok, "no produce answer")
	return resp
}

func readAll(tc *testCluster, leader broker.NodeID, tp kafka.TopicPartition) []string {
	tc.t.Helper()
	resp, ok := tc.call(leader, leader, broker.FetchRequest{Correlation: 8, TopicPartition: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}).(broker.FetchResponse)
	require.True(tc.t, ok)
	require.NoError(tc.t, resp.Err)
	var vals []string
	for _, b := range resp.Batches {
		recs, err := b.DecodeRecords(nil)
		require.NoError(tc.t, err)
		for _, r := range recs {
			vals = append(vals, string(r.Value))
		}
	}
	return vals
}

func TestClusterReplicatesAndFailsOverOverTCP(t *testing.T) {
	tc := startCluster(t, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	resp := tc.call(1, broker.ControllerID, broker.CreateTopic{Correlation: 1, Name: "t", Partitions: 1, ReplicationFactor: 3})
	require.Equal(t, broker.CreateTopicResponse{Correlation: 1}, resp)

	st := tc.leader(1, tp, 3, 0)
	first := broker.NodeID(st.Leader)
	for i := 0; i < 10; i++ {
		r := produce(tc, first, tp, fmt.Sprint("a", i))
		require.NoError(t, r.Err)
		require.Equal(t, int64(i), r.BaseOffset)
	}

	// The leader dies; the controller elects another ISR member, which
	// has every acknowledged record.
	require.NoError(t, tc.brokers[first].Close())
	other := broker.NodeID(1)
	if other == first {
		other = 2
	}
	st2 := tc.leader(other, tp, 1, first)
	require.Greater(t, st2.LeaderEpoch, st.LeaderEpoch)
	second := broker.NodeID(st2.Leader)
	require.Eventually(t, func() bool {
		return produce(tc, second, tp, "b0").Err == nil
	}, 10*time.Second, 50*time.Millisecond)

	// The old leader comes back, catches up and rejoins the ISR.
	tc.startBroker(first)
	st3 := tc.leader(first, tp, 3, 0)
	require.Eventually(t, func() bool {
		return len(readAll(tc, broker.NodeID(st3.Leader), tp)) >= 11
	}, 10*time.Second, 50*time.Millisecond)
	vals := readAll(tc, broker.NodeID(st3.Leader), tp)
	for i := 0; i < 10; i++ {
		require.Equal(t, fmt.Sprint("a", i), vals[i])
	}
}

func TestControllerSurvivesItsOwnRestart(t *testing.T) {
	tc := startCluster(t, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	require.Equal(t, broker.CreateTopicResponse{Correlation: 1},
		tc.call(1, broker.ControllerID, broker.CreateTopic{Correlation: 1, Name: "t", Partitions: 1, ReplicationFactor: 3}))
	st := tc.leader(1, tp, 3, 0)

	require.NoError(t, tc.ctrl.Close())
	var err error
	tc.ctrl, err = StartController(tc.ctrlCfg)
	require.NoError(t, err)

	// The restarted controller knows the topic: a second create is refused.
	// The first try may be lost: it can leave on the connection to the old
	// controller before the broker has read that connection's end, and
	// internal links lose such messages (the senders' retries cope), so
	// the test retries as a client would.
	var resp broker.CreateTopicResponse
	require.Eventually(t, func() bool {
		var ok bool
		resp, ok = tc.callWithin(1, broker.ControllerID, broker.CreateTopic{Correlation: 2, Name: "t", Partitions: 1, ReplicationFactor: 3}, time.Second).(broker.CreateTopicResponse)
		return ok && !errors.Is(resp.Err, kafka.ErrNotController) // until it leads its quorum of one
	}, 20*time.Second, 10*time.Millisecond, "the restarted controller never answered CreateTopic")
	require.ErrorIs(t, resp.Err, kafka.ErrTopicExists)

	// And it still elects, from the epochs it had.
	leader := broker.NodeID(st.Leader)
	require.NoError(t, tc.brokers[leader].Close())
	other := broker.NodeID(1)
	if other == leader {
		other = 2
	}
	st2 := tc.leader(other, tp, 1, leader)
	require.Equal(t, st.LeaderEpoch+1, st2.LeaderEpoch)
}

var _ kafkawire.Backend = (*Broker)(nil)

// Past MaxConnections a new connection is closed at once; one that ends
// makes room again.
func TestMaxConnections(t *testing.T) {
	tc := startCluster(t, 1)
	b := tc.brokers[1]
	b.mu.Lock()
	b.cfg.MaxConnections = len(b.conns) + 1
	b.mu.Unlock()
	first, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.conns) == b.cfg.MaxConnections
	}, 5*time.Second, 5*time.Millisecond)
	closedSoon := func() bool {
		c, err := net.Dial("tcp", b.Addr())
		require.NoError(t, err)
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	require.True(t, closedSoon(), "a connection past the limit was kept")
	require.NoError(t, first.Close())
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.conns) < b.cfg.MaxConnections
	}, 5*time.Second, 5*time.Millisecond)
	require.False(t, closedSoon(), "room was made, and the connection was closed all the same")
}
