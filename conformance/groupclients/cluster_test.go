package groupclients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/node"
)

// Settings of every reference cluster here: conformance/clients' (a
// failover completes within a few seconds) plus group settings that let
// members use short sessions, so that a crashed member expires quickly.
const (
	brokers           = 3
	replicationFactor = 3
	minInsyncReplicas = 2
	topicPartitions   = 6

	memberSessionTimeout   = 3 * time.Second
	memberHeartbeat        = 300 * time.Millisecond
	memberRebalanceTimeout = 10 * time.Second
)

// startCluster starts a fresh reference cluster of three brokers and a
// controller in this process and stops it when the test ends.
func startCluster(tb testing.TB) *node.LocalCluster {
	tb.Helper()
	lc, err := node.StartLocalCluster(node.LocalOptions{
		Brokers: brokers,
		Dir:     tb.TempDir(),
		Broker: func(id int) broker.Config {
			cfg := broker.Config{Settings: run.DefaultSettings().Broker, ID: broker.NodeID(id)}
			cfg.MinInsyncReplicas = minInsyncReplicas
			cfg.OffsetsTopicReplicationFactor = replicationFactor
			cfg.Config = group.Config{MinSessionTimeoutMs: 1000, MaxSessionTimeoutMs: 60_000}
			return cfg
		},
		Controller: controller.Config{SessionTimeoutMs: 1500},
		Logf:       tb.Logf,
	})
	require.NoError(tb, err)
	tb.Cleanup(lc.Close)
	return lc
}

// createTopic creates topic with topicPartitions partitions and waits until
// every partition has a leader and a full ISR.
func createTopic(tb testing.TB, cl *kgo.Client, topic string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, topicPartitions, replicationFactor
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10_000
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(tb, err)
	require.Len(tb, resp.Topics, 1)
	require.Zero(tb, resp.Topics[0].ErrorCode, "create %s: %v", topic, resp.Topics[0].ErrorMessage)
	require.Eventually(tb, func() bool {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		m, err := mreq.RequestWith(ctx, cl)
		if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != topicPartitions {
			return false
		}
		for _, p := range m.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != replicationFactor {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "topic %s never got leaders and full ISRs", topic)
}

// produce writes the records from..to-1 (value = its number) round-robin
// over the partitions with an idempotent acks=all producer, each
// acknowledged.
func produce(tb testing.TB, bootstrap []string, topic string, from, to int) {
	tb.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(100),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	)
	require.NoError(tb, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % topicPartitions), Value: []byte(strconv.Itoa(i))})
	}
	require.NoError(tb, cl.ProduceSync(ctx, recs...).FirstErr())
}

// coordinatorOf asks any broker which broker coordinates g, until one is
// named.
func coordinatorOf(tb testing.TB, cl *kgo.Client, g string) int {
	tb.Helper()
	var coord int32 = -1
	require.Eventually(tb, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = g, []string{g}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false
		}
		code, id := resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) == 1 {
			code, id = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		coord = id
		return code == 0 && id > 0
	}, 30*time.Second, 50*time.Millisecond, "no coordinator for %s", g)
	return int(coord)
}

// committed reads g's committed offsets of topic, by partition, from the
// broker that coordinates g now. It finds the coordinator each time rather
// than through kgo's sharded OffsetFetch, which keeps a cached coordinator
// it can no longer dial after that broker crashed (kgo forgets a
// coordinator on dial errors only in its non-sharded requests).
func committed(ctx context.Context, cl *kgo.Client, g, topic string) (map[int32]int64, error) {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = g, []string{g}
	fr, err := fc.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	code, coord := fr.ErrorCode, fr.NodeID
	if len(fr.Coordinators) == 1 {
		code, coord = fr.Coordinators[0].ErrorCode, fr.Coordinators[0].NodeID
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return nil, fmt.Errorf("find coordinator of %s: %w", g, err)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = g
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = g
	req.Groups = append(req.Groups, rg)
	raw, err := cl.Broker(int(coord)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.OffsetFetchResponse)
	out := map[int32]int64{}
	add := func(t string, p int32, offset int64, code int16) error {
		if err := kerr.ErrorForCode(code); err != nil {
			return fmt.Errorf("offset fetch %s/%d: %w", t, p, err)
		}
		if t == topic && offset >= 0 {
			out[p] = offset
		}
		return nil
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := add(t.Topic, p.Partition, p.Offset, p.ErrorCode); err != nil {
				return nil, err
			}
		}
	}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, err
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := add(t.Topic, p.Partition, p.Offset, p.ErrorCode); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// requireCommittedThrough waits until g has committed, in every partition,
// the offset after the first n records (n/topicPartitions each) and
// returns the offsets.
func requireCommittedThrough(t *testing.T, cl *kgo.Client, g, topic string, n int) map[int32]int64 {
	t.Helper()
	var got map[int32]int64
	var lastErr error
	ok := assertEventually(60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, lastErr = committed(ctx, cl, g, topic)
		if lastErr != nil || len(got) != topicPartitions {
			return false
		}
		for _, o := range got {
			if o != int64(n/topicPartitions) {
				return false
			}
		}
		return true
	})
	require.True(t, ok, "group %s never committed through %d records: %v (last error %v)", g, n, got, lastErr)
	return got
}

// assertEventually polls cond every 50 ms until it holds or d passes.
func assertEventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// ledger records what the members of a group consumed.
type ledger struct {
	mu       sync.Mutex
	seen     map[int]int    // record value -> times consumed
	by       map[string]int // member -> records consumed
	lowest   map[string]int // member -> lowest value consumed
	assigned map[string]int // member -> partitions it owns now
}

func newLedger() *ledger {
	return &ledger{seen: map[int]int{}, by: map[string]int{}, lowest: map[string]int{}, assigned: map[string]int{}}
}

// setAssigned records how many partitions member owns now.
func (l *ledger) setAssigned(member string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.assigned[member] = n
}

// assignedTo is how many partitions member owns now.
func (l *ledger) assignedTo(member string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.assigned[member]
}

func (l *ledger) add(member string, value []byte) {
	v, err := strconv.Atoi(string(value))
	if err != nil {
		v = -1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[v]++
	if n, ok := l.lowest[member]; !ok || v < n {
		l.lowest[member] = v
	}
	l.by[member]++
}

// consumedBy is how many records member consumed.
func (l *ledger) consumedBy(member string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[member]
}

// lowestBy is the lowest record value member consumed, -1 for none.
func (l *ledger) lowestBy(member string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.lowest[member]; ok {
		return v
	}
	return -1
}

// missing lists the values in from..to-1 nobody consumed (at most 10).
func (l *ledger) missing(from, to int) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for v := from; v < to && len(out) < 10; v++ {
		if l.seen[v] == 0 {
			out = append(out, v)
		}
	}
	return out
}

// requireAllConsumed waits until every record in from..to-1 was consumed at
// least once by some member.
func requireAllConsumed(t *testing.T, l *ledger, from, to int) {
	t.Helper()
	ok := assertEventually(60*time.Second, func() bool { return len(l.missing(from, to)) == 0 })
	require.True(t, ok, "records never consumed (first 10): %v", l.missing(from, to))
}

// crashableDialer dials TCP until crash: then it closes every connection
// it made and refuses new ones, which is how a client process crash looks
// to the brokers (no LeaveGroup, connections reset).
type crashableDialer struct {
	mu      sync.Mutex
	conns   []net.Conn
	crashed bool
}

var errCrashed = errors.New("client crashed")

func (d *crashableDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	crashed := d.crashed
	d.mu.Unlock()
	if crashed {
		return nil, errCrashed
	}
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		conn.Close()
		return nil, errCrashed
	}
	d.conns = append(d.conns, conn)
	return conn, nil
}

// Dial is golang.org/x/net/proxy.Dialer's method, for sarama.
func (d *crashableDialer) Dial(network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.DialContext(ctx, network, addr)
}

func (d *crashableDialer) crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}
