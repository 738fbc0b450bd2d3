package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// imageBase is an image of topic t (2 partitions, t-0 known), brokers 1
// to 3 at incarnation 2, and t-0 led by 1 at leader epoch 3, partition
// epoch 5, ISR [1 2], ELR [3].
func imageBase(t *testing.T) *Image {
	t.Helper()
	m := NewImage()
	require.NoError(t, m.Apply(Record{Topic: &TopicRecord{Name: "t", Partitions: 2}}))
	for id := int32(1); id <= 3; id++ {
		require.NoError(t, m.Apply(Record{Broker: &BrokerRecord{ID: id, Incarnation: 2, Alive: true}}))
	}
	require.NoError(t, m.Apply(partitionRec(func(*PartitionRecord) {})))
	return m
}

// partitionRec returns imageBase's record of t-0, changed by change.
func partitionRec(change func(*PartitionRecord)) Record {
	r := PartitionRecord{
		State: kafka.PartitionState{TopicPartition: tp("t", 0), Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, PartitionEpoch: 5},
		ELR:   []int32{3},
	}
	change(&r)
	return Record{Partition: &r}
}

func topicRec(name string, n int32, cfg kafka.TopicConfig) Record {
	return Record{Topic: &TopicRecord{Name: name, Partitions: n, Config: cfg}}
}

func brokerRec(id int32, inc int64) Record {
	return Record{Broker: &BrokerRecord{ID: id, Incarnation: inc}}
}

// Each of Image's rules fires on a record that breaks it, applying
// nothing, and is quiet on the nearest record that does not.
// Reference: spec/SEMANTICS.md, Replication (Controller, Metadata
// records); KIP-631's metadata records.
func TestImageApplyRules(t *testing.T) {
	for _, c := range []struct {
		rule, why    string
		fires, quiet Record
	}{
		{"1: no field set", "exactly one", Record{}, topicRec("u", 1, kafka.TopicConfig{})},
		{"1: two fields set", "exactly one", Record{Topic: &TopicRecord{Name: "u", Partitions: 1}, Broker: &BrokerRecord{ID: 4}}, brokerRec(4, 1)},
		{"2: a topic without a name", "needs a name", topicRec("", 1, kafka.TopicConfig{}), topicRec("u", 1, kafka.TopicConfig{})},
		{"2: a topic without partitions", "needs a name and a partition", topicRec("u", 0, kafka.TopicConfig{}), topicRec("u", 1, kafka.TopicConfig{})},
		{"2: negative settings", "negative settings", topicRec("u", 1, kafka.TopicConfig{MaxMessageBytes: -1}), topicRec("u", 1, kafka.TopicConfig{MaxMessageBytes: 1})},
		{"2: negative min isr", "negative settings", topicRec("u", 1, kafka.TopicConfig{MinInsyncReplicas: -1}), topicRec("u", 1, kafka.TopicConfig{MinInsyncReplicas: 2})},
		{"2: a topic's partition count changes", "has 2 partitions, not 3", topicRec("t", 3, kafka.TopicConfig{}), topicRec("t", 2, kafka.TopicConfig{MinInsyncReplicas: 2})},
		{"3: a negative broker id", "invalid broker id", brokerRec(-1, 1), brokerRec(4, 1)},
		{"3: a broker's incarnation goes back", "at incarnation 2, above 1", brokerRec(1, 1), brokerRec(1, 2)},
		{"3: a restart goes forward", "at incarnation 2, above 1", brokerRec(1, 1), brokerRec(1, 3)},
		{"4: a partition of no topic", "no such topic", partitionRec(func(r *PartitionRecord) { r.State.Topic = "u" }), partitionRec(func(r *PartitionRecord) { r.State.Partition = 1 })},
		{"4: a partition beyond its topic's", "out of its range", partitionRec(func(r *PartitionRecord) { r.State.Partition = 2 }), partitionRec(func(r *PartitionRecord) { r.State.Partition = 1 })},
		{"4: a negative partition", "out of its range", partitionRec(func(r *PartitionRecord) { r.State.Partition = -1 }), partitionRec(func(r *PartitionRecord) { r.State.Partition = 1 })},
		{"4: no replicas", "replicas empty", partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.Replicas = 1, nil }), partitionRec(func(r *PartitionRecord) { r.State.Partition = 1 })},
		{"4: a replica twice", "replicas empty or repeated", partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.Replicas = 1, []int32{1, 2, 1} }), partitionRec(func(r *PartitionRecord) { r.State.Partition = 1 })},
		{"4: a replica of no known broker", "no known broker", partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.Replicas = 1, []int32{1, 2, 9} }), partitionRec(func(r *PartitionRecord) { r.State.Partition = 1 })},
		{"4: an empty isr", "isr empty", partitionRec(func(r *PartitionRecord) { r.State.ISR, r.State.Leader = nil, kafka.NoLeader }), partitionRec(func(r *PartitionRecord) {})},
		{"4: an unsorted isr", "isr empty, unsorted", partitionRec(func(r *PartitionRecord) { r.State.ISR = []int32{2, 1} }), partitionRec(func(r *PartitionRecord) {})},
		{"4: an isr member twice", "isr empty, unsorted, repeated", partitionRec(func(r *PartitionRecord) { r.State.ISR = []int32{1, 1} }), partitionRec(func(r *PartitionRecord) {})},
		{"4: an isr member not a replica", "not within the replicas", partitionRec(func(r *PartitionRecord) {
			r.State.Partition, r.State.Replicas, r.ELR = 1, []int32{1, 3}, nil
		}), partitionRec(func(r *PartitionRecord) {
			r.State.Partition, r.State.Replicas, r.State.ISR = 1, []int32{1, 3}, []int32{1}
		})},
		{"4: a leader out of the isr", "leader not in the isr", partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.Leader = 1, 3 }), partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.Leader = 1, kafka.NoLeader })},
		{"4: an elr member in the isr", "elr", partitionRec(func(r *PartitionRecord) { r.State.Partition, r.ELR = 1, []int32{2, 3} }), partitionRec(func(r *PartitionRecord) { r.State.Partition, r.ELR = 1, nil })},
		{"4: an unsorted elr", "elr unsorted", partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.ISR, r.ELR = 1, []int32{1}, []int32{3, 2} }), partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.ISR, r.ELR = 1, []int32{1}, []int32{2, 3} })},
		{"4: an elr member not a replica", "elr", partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.Replicas = 1, []int32{1, 2} }), partitionRec(func(r *PartitionRecord) { r.State.Partition, r.State.Replicas, r.ELR = 1, []int32{1, 2}, nil })},
		{"5: the replicas change", "replicas never change", partitionRec(func(r *PartitionRecord) { r.State.Replicas = []int32{2, 1, 3} }), partitionRec(func(r *PartitionRecord) {})},
		{"5: the leader epoch goes back", "epochs back", partitionRec(func(r *PartitionRecord) { r.State.LeaderEpoch = 2 }), partitionRec(func(r *PartitionRecord) { r.State.LeaderEpoch, r.State.PartitionEpoch = 4, 6 })},
		{"5: the partition epoch goes back", "epochs back", partitionRec(func(r *PartitionRecord) { r.State.PartitionEpoch = 4 }), partitionRec(func(r *PartitionRecord) { r.State.PartitionEpoch = 6 })},
		{"5: a new leader at the same leader epoch", "at the same leader epoch", partitionRec(func(r *PartitionRecord) { r.State.Leader, r.State.PartitionEpoch = 2, 6 }),
			partitionRec(func(r *PartitionRecord) { r.State.Leader, r.State.LeaderEpoch, r.State.PartitionEpoch = 2, 5, 8 })},
		{"5: a new isr at the same partition epoch", "at the same partition epoch", partitionRec(func(r *PartitionRecord) { r.State.ISR = []int32{1} }), partitionRec(func(r *PartitionRecord) { r.State.ISR, r.State.PartitionEpoch = []int32{1}, 6 })},
		{"5: a new leader at the same partition epoch", "at the same partition epoch", partitionRec(func(r *PartitionRecord) { r.State.Leader, r.State.LeaderEpoch = 2, 4 }),
			partitionRec(func(r *PartitionRecord) { r.State.Leader, r.State.LeaderEpoch, r.State.PartitionEpoch = 2, 4, 6 })},
		{"5: the leader epoch grows, the partition epoch not", "at the same partition epoch", partitionRec(func(r *PartitionRecord) { r.State.LeaderEpoch = 4 }),
			partitionRec(func(r *PartitionRecord) { r.ELR = nil })},
	} {
		t.Run(c.rule, func(t *testing.T) {
			m := imageBase(t)
			before := m.Snapshot()
			err := m.Apply(c.fires)
			require.ErrorIs(t, err, ErrRecordRefused, "fires: %s", c.fires)
			require.ErrorContains(t, err, c.why)
			require.Equal(t, before, m.Snapshot(), "a refused record applies nothing")
			require.NoError(t, m.Apply(c.quiet), "quiet: %s", c.quiet)
		})
	}
}

// A record the image holds already applies again, changing nothing.
func TestImageApplyIsIdempotent(t *testing.T) {
	m := imageBase(t)
	before := m.Snapshot()
	require.NoError(t, m.Apply(partitionRec(func(*PartitionRecord) {})))
	require.NoError(t, m.Apply(topicRec("t", 2, kafka.TopicConfig{})))
	require.NoError(t, m.Apply(Record{Broker: &BrokerRecord{ID: 1, Incarnation: 2, Alive: true}}))
	require.Equal(t, before, m.Snapshot())
}

// ImageOf refuses the snapshots Restore refuses for their shape, and
// those whose records Apply refuses; it takes a controller's own.
func TestImageOfRefusesWhatRestoreRefuses(t *testing.T) {
	h := newHarness(t, Config{EligibleMinISR: 3}, 1, 2, 3)
	require.NoError(t, createTopic(h.c, "t", 2, 3, kafka.TopicConfig{MaxMessageBytes: 100}, h.now))
	drain(h.c)
	h.kill(3)
	drain(h.c)
	good := h.c.Snapshot()
	m, err := ImageOf(good)
	require.NoError(t, err)
	require.Equal(t, good, m.Snapshot())

	for name, corrupt := range map[string]func(*Snapshot){
		"a broker twice":               func(s *Snapshot) { s.Brokers = append(s.Brokers, s.Brokers[0]) },
		"a negative broker id":         func(s *Snapshot) { s.Brokers[0].ID = -1 },
		"a partition twice":            func(s *Snapshot) { s.Partitions = append(s.Partitions, s.Partitions[0]) },
		"a partition of no topic":      func(s *Snapshot) { s.Partitions[0].Topic = "u" },
		"a topic short of a partition": func(s *Snapshot) { s.Topics["t"] = 3 },
		"a config of no topic":         func(s *Snapshot) { s.TopicConfigs["u"] = kafka.TopicConfig{MaxMessageBytes: 1} },
		"an empty config":              func(s *Snapshot) { s.TopicConfigs["t"] = kafka.TopicConfig{} },
		"a negative config":            func(s *Snapshot) { s.TopicConfigs["t"] = kafka.TopicConfig{MaxMessageBytes: -1} },
		"elr of no partition":          func(s *Snapshot) { s.ELR[0].TopicPartition = tp("t", 5) },
		"elr twice":                    func(s *Snapshot) { s.ELR = append(s.ELR, s.ELR[0]) },
		"an isr out of the replicas":   func(s *Snapshot) { s.Partitions[0].ISR = []int32{7} },
		"a replica never registered":   func(s *Snapshot) { s.Partitions[0].Replicas = []int32{1, 2, 9} },
	} {
		t.Run(name, func(t *testing.T) {
			s := h.c.Snapshot()
			corrupt(&s)
			_, err := ImageOf(s)
			require.Error(t, err)
			_, err = Restore(h.c.cfg, s, h.now)
			require.Error(t, err, "Restore refuses it too")
		})
	}
}

// The image answers what the controller answers, and what it hands out
// is its caller's.
func TestImageReadsAsTheController(t *testing.T) {
	h := newHarness(t, Config{EligibleMinISR: 3}, 1, 2, 3)
	require.NoError(t, h.c.Register(2, 1, h.now, Registration{Address: "b2:9092"}))
	no := false
	require.NoError(t, createTopic(h.c, "b", 1, 3, kafka.TopicConfig{MinInsyncReplicas: 2, UncleanLeaderElection: &no}, h.now))
	require.NoError(t, createTopic(h.c, "a", 2, 2, kafka.TopicConfig{}, h.now))
	drain(h.c)
	h.kill(3)
	m := shadow(h.c)
	drain(h.c)

	for _, tp := range []kafka.TopicPartition{tp("a", 0), tp("a", 1), tp("b", 0), tp("c", 0)} {
		want, wok := h.c.Partition(tp)
		got, ok := m.Partition(tp)
		assert.Equal(t, wok, ok, "%s", tp)
		assert.Equal(t, want, got, "%s", tp)
		assert.Equal(t, h.c.ELR(tp), m.ELR(tp), "%s", tp)
	}
	assert.Equal(t, h.c.Metadata(), m.Metadata())
	assert.Equal(t, h.c.LiveBrokers(), m.LiveBrokers())
	assert.Equal(t, []int32{1, 2}, m.LiveBrokers())
	for id := int32(0); id <= 4; id++ {
		wi, wok := h.c.Incarnation(id)
		gi, ok := m.Incarnation(id)
		assert.Equal(t, wok, ok)
		assert.Equal(t, wi, gi)
	}
	assert.Equal(t, h.c.Addresses(), m.Addresses())
	assert.Equal(t, h.c.TopicConfigs(), m.TopicConfigs())
	assert.Equal(t, h.c.Topics(), m.Topics())

	md := m.Metadata()
	md[0].ISR[0] = 9
	s := m.Snapshot()
	s.Partitions[0].Replicas[0] = 9
	s.Brokers[0].Alive = false
	s.Topics["a"] = 9
	s.ELR[0].Replicas[0] = 9
	assert.Equal(t, h.c.Snapshot(), m.Snapshot(), "nothing handed out is the image's")

	empty := NewImage()
	assert.Nil(t, empty.Addresses())
	assert.Nil(t, empty.TopicConfigs())
	assert.Nil(t, empty.LiveBrokers())
	assert.Empty(t, empty.Topics())
	assert.Empty(t, empty.Metadata())
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	assert.Equal(t, c.Snapshot(), empty.Snapshot())
}
