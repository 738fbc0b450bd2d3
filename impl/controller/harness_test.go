package controller

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

const timeout = 1000

// harness drives a controller with a logical clock and remembers each
// broker's incarnation, so tests read as a sequence of cluster events.
type harness struct {
	t    *testing.T
	c    *Controller
	now  int64
	inc  map[int32]int64
	prev map[kafka.TopicPartition]kafka.PartitionState // for epoch checks
}

func newHarness(t *testing.T, cfg Config, brokers ...int32) *harness {
	t.Helper()
	if cfg.SessionTimeoutMs == 0 {
		cfg.SessionTimeoutMs = timeout
	}
	c, err := New(cfg)
	require.NoError(t, err)
	h := &harness{t: t, c: c, inc: map[int32]int64{}, prev: map[kafka.TopicPartition]kafka.PartitionState{}}
	for _, id := range brokers {
		h.inc[id] = 1
		require.NoError(t, c.RegisterBroker(id, 1, h.now))
	}
	drain(c)
	h.check()
	return h
}

// check asserts the controller's invariants, and that epochs moved exactly
// as kafka.PartitionState's invariants 4 and 5 say since the last check.
func (h *harness) check() {
	h.t.Helper()
	require.NoError(h.t, h.c.CheckInvariants())
	for _, s := range h.c.Metadata() {
		old, ok := h.prev[s.TopicPartition]
		if ok {
			if s.Leader != old.Leader {
				require.Greater(h.t, s.LeaderEpoch, old.LeaderEpoch, "%s: leader changed, epoch did not grow", s.TopicPartition)
			} else {
				require.GreaterOrEqual(h.t, s.LeaderEpoch, old.LeaderEpoch, "%s", s.TopicPartition)
			}
			require.GreaterOrEqual(h.t, s.PartitionEpoch, old.PartitionEpoch, "%s", s.TopicPartition)
			if s.Leader != old.Leader || !slices.Equal(s.ISR, old.ISR) {
				require.Greater(h.t, s.PartitionEpoch, old.PartitionEpoch, "%s: leader or isr changed, partition epoch did not grow", s.TopicPartition)
			}
		}
		h.prev[s.TopicPartition] = s
	}
}

// createTopic creates a topic and drains the resulting Ready.
func (h *harness) createTopic(name string, partitions int32, rf int) {
	h.t.Helper()
	require.NoError(h.t, createTopic(h.c, name, partitions, rf, kafka.TopicConfig{}, h.now))
	drain(h.c)
	h.check()
}

// kill lets the session of each victim expire: time moves past the timeout,
// every other live broker heartbeats, and one Tick declares the victims dead.
func (h *harness) kill(victims ...int32) {
	h.t.Helper()
	h.now += timeout + 1
	h.heartbeatAllBut(victims...)
	h.c.Tick(h.now)
	for _, v := range victims {
		require.False(h.t, h.c.IsAlive(v), "broker %d", v)
	}
	h.check()
}

func (h *harness) heartbeatAllBut(skip ...int32) {
	h.t.Helper()
outer:
	for _, id := range h.c.LiveBrokers() {
		for _, s := range skip {
			if s == id {
				continue outer
			}
		}
		require.NoError(h.t, h.c.Heartbeat(id, h.inc[id], h.now))
	}
}

// revive has a dead broker of the same incarnation heartbeat again.
func (h *harness) revive(id int32) {
	h.t.Helper()
	require.NoError(h.t, h.c.Heartbeat(id, h.inc[id], h.now))
	h.check()
}

// restart has broker id register with a new incarnation. A controller
// refuses that while the old process's session is live
// (DUPLICATE_BROKER_REGISTRATION), so a broker still alive first lets its
// session expire (kill), as a crashed process's does. KeepISROnRestart
// controllers take the registration at once.
func (h *harness) restart(id int32) {
	h.t.Helper()
	h.register(id, Registration{})
}

// register is restart with what the new process says of itself.
func (h *harness) register(id int32, reg Registration) {
	h.t.Helper()
	if h.c.IsAlive(id) && !h.c.cfg.KeepISROnRestart {
		h.kill(id)
	}
	h.inc[id]++
	require.NoError(h.t, h.c.Register(id, h.inc[id], h.now, reg))
	h.check()
}

// tick heartbeats every live broker and ticks, so only rebalancing can act.
func (h *harness) tick() {
	h.t.Helper()
	h.now++
	h.heartbeatAllBut()
	h.c.Tick(h.now)
	h.check()
}

// alter sends an AlterPartition from the current leader, on current epochs.
func (h *harness) alter(tp kafka.TopicPartition, isr ...int32) kafka.AlterPartitionAnswer {
	h.t.Helper()
	s := h.state(tp)
	res := answerTo(h.c, h.request(s, isr...), h.now)
	h.check()
	return res
}

func (h *harness) request(s kafka.PartitionState, isr ...int32) kafka.AlterPartition {
	return kafka.AlterPartition{
		TopicPartition:    s.TopicPartition,
		LeaderID:          s.Leader,
		LeaderIncarnation: h.inc[s.Leader],
		LeaderEpoch:       s.LeaderEpoch,
		PartitionEpoch:    s.PartitionEpoch,
		NewISR:            isr,
	}
}

func (h *harness) state(tp kafka.TopicPartition) kafka.PartitionState {
	h.t.Helper()
	s, ok := h.c.Partition(tp)
	require.True(h.t, ok, "%s", tp)
	return s
}

// kinds returns the kinds of the events in rd, for compact assertions.
func kinds(rd Ready) []EventKind {
	var out []EventKind
	for _, e := range rd.Events {
		out = append(out, e.Kind)
	}
	return out
}

func tp(topic string, p int32) kafka.TopicPartition {
	return kafka.TopicPartition{Topic: topic, Partition: p}
}
