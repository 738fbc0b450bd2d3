package groupclients

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// TestSaramaConsumerGroup runs the group scenario with IBM sarama's
// consumer groups (range assignor, eager rebalancing), configured as two
// Kafka versions whose requests the reference serves: 3.0.0 (JoinGroup v7,
// SyncGroup v5, Heartbeat v4, LeaveGroup v4, OffsetCommit v8, OffsetFetch
// v8, Metadata v11, Fetch v12) and 2.0.0 (JoinGroup v3, before KIP-394,
// SyncGroup v2, Heartbeat v2, LeaveGroup v2 with one member, OffsetCommit
// v4, OffsetFetch v4, FindCoordinator v2).
// Reference: KIP-62, KIP-394.
func TestSaramaConsumerGroup(t *testing.T) {
	for _, v := range []sarama.KafkaVersion{sarama.V3_0_0_0, sarama.V2_0_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			runGroupScenario(t, func(t *testing.T, bootstrap []string, g, topic, name string, explicit bool, l *ledger) member {
				return startSaramaMember(t, v, bootstrap, g, topic, name, explicit, l)
			})
		})
	}
}

type saramaMember struct {
	cg     sarama.ConsumerGroup
	d      *crashableDialer
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// startSaramaMember starts an unmodified sarama consumer group member. The
// explicit member disables auto-commit and commits its marked offsets
// itself whenever it has caught up, and every 200 ms.
func startSaramaMember(t *testing.T, version sarama.KafkaVersion, bootstrap []string, g, topic, name string, explicit bool, l *ledger) member {
	t.Helper()
	d := &crashableDialer{}
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "watermark-" + name
	cfg.Net.Proxy.Enable = true
	cfg.Net.Proxy.Dialer = d
	cfg.Metadata.Retry.Max = 100
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = memberSessionTimeout
	cfg.Consumer.Group.Heartbeat.Interval = memberHeartbeat
	cfg.Consumer.Group.Rebalance.Timeout = memberRebalanceTimeout
	cfg.Consumer.Group.Rebalance.Retry.Max = 100
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.Offsets.AutoCommit.Enable = !explicit
	cfg.Consumer.Offsets.Retry.Max = 100
	cfg.Consumer.MaxWaitTime = 500 * time.Millisecond
	cfg.Consumer.Retry.Backoff = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup(bootstrap, g, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{cg: cg, d: d, cancel: cancel, done: make(chan struct{})}
	h := &saramaHandler{name: name, explicit: explicit, l: l}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				if ctx.Err() == nil {
					t.Logf("%s: consume: %v", name, err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *saramaMember) stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
		_ = m.cg.Close() // leaves the group
	})
}

func (m *saramaMember) crash() {
	m.once.Do(func() {
		m.d.crash()
		m.cancel()
		// Close would send LeaveGroup: it cannot get out, but sarama may
		// retry for a while, so the test does not wait for it.
		go func() {
			<-m.done
			_ = m.cg.Close()
		}()
	})
}

// saramaHandler records what its member consumes and owns.
type saramaHandler struct {
	name     string
	explicit bool
	l        *ledger
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	n := 0
	for _, ps := range s.Claims() {
		n += len(ps)
	}
	h.l.setAssigned(h.name, n)
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error {
	h.l.setAssigned(h.name, 0)
	return nil
}

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.l.add(h.name, msg.Value)
			s.MarkMessage(msg, "")
			if h.explicit && len(claim.Messages()) == 0 {
				s.Commit()
			}
		case <-tick.C:
			if h.explicit {
				s.Commit()
			}
		case <-s.Context().Done():
			return nil
		}
	}
}
