package kitclient

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

func manualConfig(reset string) ConsumerConfig {
	cfg := DefaultConsumerConfig()
	cfg.AutoOffsetReset = reset
	return cfg
}

// TestConsumerConfigValidate: a subscription needs a group, the assignor
// and reset policy are Kafka's names, the heartbeat is below the session.
func TestConsumerConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConsumerConfig().Validate())
	for name, mod := range map[string]func(*ConsumerConfig){
		"topics without group": func(c *ConsumerConfig) { c.Topics = []string{"t"} },
		"assignor":             func(c *ConsumerConfig) { c.Assignor = "sticky" },
		"reset":                func(c *ConsumerConfig) { c.AutoOffsetReset = "smallest" },
		"heartbeat":            func(c *ConsumerConfig) { c.HeartbeatIntervalMs = c.SessionTimeoutMs },
		"fetch bytes":          func(c *ConsumerConfig) { c.MaxPartitionFetchBytes = 0 },
		"request timeout":      func(c *ConsumerConfig) { c.RequestTimeoutMs = 0 },
	} {
		cfg := DefaultConsumerConfig()
		mod(&cfg)
		_, err := NewConsumer(broker.ClientIDBase, cfg, rand.New(rand.NewPCG(1, 2)))
		require.ErrorIs(t, err, ErrInvalidConsumerConfig, name)
	}
}

// TestConsumerManualAssignFetchesEverything: a consumer assigned two
// partitions by hand reads every record produced to them, in offset
// order, with contiguous offsets, before and after it started.
func TestConsumerManualAssignFetchesEverything(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 2, 3)
	tp0, tp1 := kafka.TopicPartition{Topic: "t", Partition: 0}, kafka.TopicPartition{Topic: "t", Partition: 1}
	lc.produce(tp0, "a0", "a1")
	lc.produce(tp1, "b0")

	n := lc.addConsumer(manualConfig(ResetEarliest))
	lc.do(n, func(c *Consumer) { require.NoError(t, c.Assign([]kafka.TopicPartition{tp1, tp0}, lc.now)) })
	require.Equal(t, []kafka.TopicPartition{tp0, tp1}, n.c.Assignment())
	lc.pollUntil(n, tp0, 2, 2000)
	lc.pollUntil(n, tp1, 1, 2000)

	lc.produce(tp0, "a2")
	lc.produce(tp1, "b1", "b2")
	lc.pollUntil(n, tp0, 3, 2000)
	lc.pollUntil(n, tp1, 3, 2000)

	require.Equal(t, []string{"a0", "a1", "a2"}, polledValues(n.records[tp0]))
	require.Equal(t, []int64{0, 1, 2}, polledOffsets(n.records[tp0]))
	require.Equal(t, []string{"b0", "b1", "b2"}, polledValues(n.records[tp1]))
	pos, ok := n.c.Position(tp1)
	require.True(t, ok)
	require.EqualValues(t, 3, pos)
	for _, p := range eventsOf[*Positioned](n) {
		require.Equal(t, WhyReset, p.Why)
		require.Zero(t, p.Offset)
	}
	// The fetches named the leader epoch from metadata (KIP-320).
	for _, env := range n.sent {
		if f, ok := env.Msg.(broker.FetchRequest); ok {
			require.GreaterOrEqual(t, f.CurrentLeaderEpoch, int32(0))
		}
	}
}

// TestConsumerLongPollNoBusyLoop: with nothing to read, each partition has
// one fetch parked at the leader at a time and a new one only when the
// last expires after fetch.max.wait.ms; a record produced meanwhile is
// answered at once, not at the end of the wait.
// Reference: KIP-74 (fetch.max.wait.ms / fetch.min.bytes long poll).
func TestConsumerLongPollNoBusyLoop(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 1, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	cfg := manualConfig(ResetEarliest)
	cfg.FetchMaxWaitMs = 200
	n := lc.addConsumer(cfg)
	lc.do(n, func(c *Consumer) { require.NoError(t, c.Assign([]kafka.TopicPartition{tp}, lc.now)) })
	lc.tickUntil(1000, func() bool { _, ok := n.c.Position(tp); return ok }, "positioned")

	before := sentOf[broker.FetchRequest](n)
	lc.tick(2000)
	fetches := sentOf[broker.FetchRequest](n) - before
	// 2000 ms / 200 ms = 10 long polls; a busy loop would send ~200.
	require.GreaterOrEqual(t, fetches, 9)
	require.LessOrEqual(t, fetches, 11)
	for _, f := range eventsOf[*Fetched](n) {
		require.NoError(t, f.Err)
		require.Empty(t, f.Records)
		require.GreaterOrEqual(t, f.ReturnMs-f.CallMs, cfg.FetchMaxWaitMs)
	}

	lc.tick(50) // mid-wait
	at := lc.now
	lc.produce(tp, "x")
	lc.poll(n)
	require.Equal(t, []string{"x"}, polledValues(n.records[tp]))
	fs := eventsOf[*Fetched](n)
	last := fs[len(fs)-1]
	require.Len(t, last.Records, 1)
	require.Less(t, last.CallMs, at, "the fetch was parked before the produce")
	require.Less(t, last.ReturnMs-at, cfg.FetchMaxWaitMs/2, "answered when the data came, not at the end of the wait")
}

// TestConsumerSeekBackRereads: records are not deleted by consumption;
// after Seek to an earlier offset the same records are read again.
func TestConsumerSeekBackRereads(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 1, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	lc.produce(tp, "r0", "r1", "r2", "r3")
	n := lc.addConsumer(manualConfig(ResetEarliest))
	lc.do(n, func(c *Consumer) { require.NoError(t, c.Assign([]kafka.TopicPartition{tp}, lc.now)) })
	lc.pollUntil(n, tp, 4, 2000)

	lc.do(n, func(c *Consumer) { require.NoError(t, c.Seek(tp, 1, lc.now)) })
	pos, _ := n.c.Position(tp)
	require.EqualValues(t, 1, pos)
	lc.pollUntil(n, tp, 7, 2000)
	require.Equal(t, []string{"r0", "r1", "r2", "r3", "r1", "r2", "r3"}, polledValues(n.records[tp]))
	require.Equal(t, []int64{0, 1, 2, 3, 1, 2, 3}, polledOffsets(n.records[tp]))
	ps := eventsOf[*Positioned](n)
	require.Equal(t, WhySeek, ps[len(ps)-1].Why)

	err := n.c.Seek(kafka.TopicPartition{Topic: "t", Partition: 9}, 0, lc.now)
	require.ErrorIs(t, err, ErrNotAssigned)
}

// TestConsumerAutoOffsetReset: without a committed offset, earliest starts
// at the log start, latest at the high watermark (only later records are
// read), and none reports NoOffset and fetches nothing until Seek.
func TestConsumerAutoOffsetReset(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 1, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	lc.produce(tp, "old0", "old1")

	early := lc.addConsumer(manualConfig(ResetEarliest))
	late := lc.addConsumer(manualConfig(ResetLatest))
	none := lc.addConsumer(manualConfig(ResetNone))
	for _, n := range []*liveConsumer{early, late, none} {
		lc.do(n, func(c *Consumer) { require.NoError(t, c.Assign([]kafka.TopicPartition{tp}, lc.now)) })
	}
	lc.tickUntil(1000, func() bool { _, ok := late.c.Position(tp); return ok }, "latest positioned")
	pos, _ := late.c.Position(tp)
	require.EqualValues(t, 2, pos)
	lc.produce(tp, "new")
	lc.pollUntil(early, tp, 3, 2000)
	lc.pollUntil(late, tp, 1, 2000)
	require.Equal(t, []string{"old0", "old1", "new"}, polledValues(early.records[tp]))
	require.Equal(t, []string{"new"}, polledValues(late.records[tp]))
	require.Equal(t, []int64{2}, polledOffsets(late.records[tp]))

	lc.tick(500)
	lc.poll(none)
	require.Empty(t, none.records[tp])
	_, ok := none.c.Position(tp)
	require.False(t, ok)
	require.Zero(t, sentOf[broker.FetchRequest](none))
	nos := eventsOf[*NoOffset](none)
	require.Len(t, nos, 1)
	require.ErrorIs(t, nos[0].Err, ErrNoOffset)

	lc.do(none, func(c *Consumer) { require.NoError(t, c.Seek(tp, 1, lc.now)) })
	lc.pollUntil(none, tp, 2, 2000)
	require.Equal(t, []string{"old1", "new"}, polledValues(none.records[tp]))

	// A position past the log end is out of range: reset again.
	lc.do(early, func(c *Consumer) { require.NoError(t, c.Seek(tp, 100, lc.now)) })
	lc.tickUntil(2000, func() bool {
		ps := eventsOf[*Positioned](early)
		return ps[len(ps)-1].Why == WhyReset
	}, "reset after out of range")
	outOfRange := 0
	for _, f := range eventsOf[*Fetched](early) {
		if f.Offset == 100 {
			require.ErrorIs(t, f.Err, kafka.ErrOffsetOutOfRange)
			outOfRange++
		}
	}
	require.Equal(t, 1, outOfRange)
	lc.poll(early)
	pos, _ = early.c.Position(tp)
	require.EqualValues(t, 3, pos, "re-read from the earliest offset")
}

// TestConsumerCommitWithoutGroup: a consumer without group.id cannot
// commit; the outcome says so at once.
func TestConsumerCommitWithoutGroup(t *testing.T) {
	c, err := NewConsumer(broker.ClientIDBase, DefaultConsumerConfig(), rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	id := c.Commit(map[kafka.TopicPartition]int64{{Topic: "t"}: 1}, 5)
	out, ev := c.Ready()
	require.Empty(t, out)
	require.Len(t, ev, 1)
	cm := ev[0].(*Committed)
	require.Equal(t, id, cm.ID)
	require.ErrorIs(t, cm.Err, ErrNoGroup)
	require.False(t, cm.Unknown)
	require.Equal(t, Span{5, 5}, cm.Span)
}

// TestConsumerDeterministic: the same inputs give the same messages and
// events.
func TestConsumerDeterministic(t *testing.T) {
	run := func() string {
		lc := newLiveCluster(t, 3)
		lc.createTopic("t", 3, 3)
		cfg := DefaultConsumerConfig()
		cfg.Group, cfg.Topics = "g", []string{"t"}
		a, b := lc.addConsumer(cfg), lc.addConsumer(cfg)
		lc.tick(1500)
		return fmt.Sprintf("%+v %+v %v %v", a.sent, b.sent, describeEvents(a.events), describeEvents(b.events))
	}
	require.Equal(t, run(), run())
}

func describeEvents(evs []ConsumerEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%T%+v", e, e))
	}
	return out
}
