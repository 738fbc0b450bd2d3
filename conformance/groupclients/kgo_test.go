package groupclients

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKgoConsumerGroup runs the group scenario with franz-go's kgo
// consumer groups (cooperative-sticky, the default balancer).
// Reference: KIP-429 (cooperative rebalancing), KIP-62.
func TestKgoConsumerGroup(t *testing.T) {
	runGroupScenario(t, startKgoMember)
}

type kgoMember struct {
	cl     *kgo.Client
	d      *crashableDialer
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// startKgoMember starts an unmodified kgo group consumer. The explicit
// member disables auto-commit and commits what it polled after every poll,
// blocking rebalances between poll and commit as kgo's docs advise.
func startKgoMember(t *testing.T, bootstrap []string, g, topic, name string, explicit bool, l *ledger) member {
	t.Helper()
	d := &crashableDialer{}
	var mu sync.Mutex
	owned := map[int32]bool{}
	track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range m[topic] {
				if add {
					owned[p] = true
				} else {
					delete(owned, p)
				}
			}
			l.setAssigned(name, len(owned))
		}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(bootstrap...),
		kgo.ClientID("watermark-" + name),
		kgo.ConsumerGroup(g),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(memberSessionTimeout),
		kgo.HeartbeatInterval(memberHeartbeat),
		kgo.RebalanceTimeout(memberRebalanceTimeout),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.Dialer(d.DialContext),
		kgo.OnPartitionsAssigned(track(true)),
		kgo.OnPartitionsRevoked(track(false)),
		kgo.OnPartitionsLost(track(false)),
	}
	if explicit {
		opts = append(opts, kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	m := &kgoMember{cl: cl, d: d, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := cl.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) { l.add(name, r.Value) })
			if explicit {
				if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
					t.Logf("%s: commit: %v", name, err)
				}
				cl.AllowRebalance()
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *kgoMember) stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
		m.cl.AllowRebalance()
		m.cl.Close() // leaves the group
	})
}

func (m *kgoMember) crash() {
	m.once.Do(func() {
		m.d.crash()
		m.cancel()
		<-m.done
		m.cl.AllowRebalance()
		// Close would send LeaveGroup: it cannot get out, but it may
		// retry for a while, so the test does not wait for it.
		go m.cl.Close()
	})
}
