package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// ErrRecordRefused is a metadata record Image.Apply refuses: one that
// would take the metadata back or break it.
var ErrRecordRefused = errors.New("metadata record refused")

// Image is the metadata a follower builds from the controller's records
// alone (Apply), as KRaft's brokers and standby controllers build their
// MetadataImage: what Snapshot holds, with no liveness clock and no
// decisions. Applying the records of every Ready of a controller, in
// order, to the image of its state before the first (NewImage for a new
// controller, ImageOf its snapshot for a restored one) yields its state:
// image.Snapshot() equals the controller's Snapshot().
//
// Apply refuses a record that would take the metadata back or break it,
// and applies nothing of it. The rules, each a check on the record
// against the image as it stands:
//  1. The record sets exactly one thing (Record.Validate).
//  2. A topic has a name and at least one partition, and settings of
//     its own that are not negative; an existing topic keeps its
//     partition count (its settings may change).
//  3. A broker has an id that is not negative, and an incarnation not
//     below the one recorded: a broker's incarnation never goes back.
//  4. A partition belongs to a known topic and is within its partition
//     count; it is well formed (kafka.PartitionState invariants 1-3:
//     replicas non-empty and distinct, every one a known broker; an ISR
//     non-empty, sorted, distinct, within the replicas; a leader in the
//     ISR or none); its eligible leader replicas are sorted, distinct,
//     replicas and not in the ISR.
//  5. An existing partition keeps its replicas (invariant 1), and its
//     epochs never go back: neither the leader epoch nor the partition
//     epoch is below the image's; a new leader comes with a greater
//     leader epoch (invariant 4), and a new leader or ISR, or a greater
//     leader epoch, with a greater partition epoch (invariant 5). Epochs
//     may grow by more than one: a record carries the newest value of a
//     partition that changed several times between two Readys. The
//     eligible leader replicas may change at the same epochs (a broker's
//     restart takes it out of them).
//
// Records come in the order Ready lists them (topics, brokers, then
// partitions), so a new topic and a newly registered broker are known by
// the time a partition record names them. An Image is not safe for
// concurrent use.
type Image struct {
	topics     map[string]TopicRecord
	brokers    map[int32]BrokerRecord
	partitions map[kafka.TopicPartition]PartitionRecord
}

// NewImage returns the image of a controller with no brokers and no
// topics: New's.
func NewImage() *Image {
	return &Image{
		topics:     map[string]TopicRecord{},
		brokers:    map[int32]BrokerRecord{},
		partitions: map[kafka.TopicPartition]PartitionRecord{},
	}
}

// ImageOf returns the image of a snapshot, refusing one that Restore
// would refuse for its shape (a broker or partition listed twice, a
// partition or setting of no topic, a topic without the state of each
// of its partitions) or that Apply would refuse record by record. It
// does not check the controller's invariants that depend on its
// settings (which replica may lead); Restore does.
func ImageOf(s Snapshot) (*Image, error) {
	m := NewImage()
	for _, name := range slices.Sorted(maps.Keys(s.Topics)) {
		t := TopicRecord{Name: name, Partitions: s.Topics[name], Config: s.TopicConfigs[name]}
		if err := m.Apply(Record{Topic: &t}); err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
	}
	for t, cfg := range s.TopicConfigs {
		if _, ok := s.Topics[t]; !ok || cfg.IsZero() {
			return nil, fmt.Errorf("image: config of topic %s: no such topic, or an empty config", t)
		}
	}
	for _, b := range s.Brokers {
		if _, dup := m.brokers[b.ID]; dup {
			return nil, fmt.Errorf("image: broker %d listed twice", b.ID)
		}
		if err := m.Apply(Record{Broker: &b}); err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
	}
	elr := map[kafka.TopicPartition][]int32{}
	for _, e := range s.ELR {
		if _, dup := elr[e.TopicPartition]; dup {
			return nil, fmt.Errorf("image: eligible replicas of %s listed twice", e.TopicPartition)
		}
		elr[e.TopicPartition] = e.Replicas
	}
	for _, p := range s.Partitions {
		if _, dup := m.partitions[p.TopicPartition]; dup {
			return nil, fmt.Errorf("image: partition %s listed twice", p.TopicPartition)
		}
		if err := m.Apply(Record{Partition: &PartitionRecord{State: p, ELR: elr[p.TopicPartition]}}); err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		delete(elr, p.TopicPartition)
	}
	for tp := range elr {
		return nil, fmt.Errorf("image: eligible replicas of %s, no such partition", tp)
	}
	for _, t := range m.topics {
		for i := range t.Partitions {
			if _, ok := m.partitions[kafka.TopicPartition{Topic: t.Name, Partition: i}]; !ok {
				return nil, fmt.Errorf("image: topic %s has %d partitions but partition %d has no state", t.Name, t.Partitions, i)
			}
		}
	}
	return m, nil
}

// Apply applies one record, or refuses it (ErrRecordRefused, naming the
// rule) and applies nothing: see Image for the rules.
func (m *Image) Apply(r Record) error {
	if err := m.check(r); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRecordRefused, r, err)
	}
	m.put(r)
	return nil
}

// check applies Image's rules to r.
func (m *Image) check(r Record) error {
	if err := r.Validate(); err != nil {
		return err // rule 1
	}
	switch {
	case r.Topic != nil:
		return m.checkTopic(*r.Topic)
	case r.Broker != nil:
		return m.checkBroker(*r.Broker)
	default:
		return m.checkPartition(*r.Partition)
	}
}

// checkTopic applies rule 2.
func (m *Image) checkTopic(t TopicRecord) error {
	switch old, ok := m.topics[t.Name]; {
	case t.Name == "" || t.Partitions <= 0:
		return fmt.Errorf("a topic needs a name and a partition")
	case t.Config.MaxMessageBytes < 0 || t.Config.MinInsyncReplicas < 0:
		return fmt.Errorf("negative settings")
	case ok && old.Partitions != t.Partitions:
		return fmt.Errorf("topic %s has %d partitions, not %d", t.Name, old.Partitions, t.Partitions)
	}
	return nil
}

// checkBroker applies rule 3.
func (m *Image) checkBroker(b BrokerRecord) error {
	if b.ID < 0 {
		return fmt.Errorf("invalid broker id")
	}
	if old, ok := m.brokers[b.ID]; ok && b.Incarnation < old.Incarnation {
		return fmt.Errorf("broker %d is at incarnation %d, above %d", b.ID, old.Incarnation, b.Incarnation)
	}
	return nil
}

// checkPartition applies rules 4 and 5.
func (m *Image) checkPartition(r PartitionRecord) error {
	s := r.State
	if t, ok := m.topics[s.Topic]; !ok || s.Partition < 0 || s.Partition >= t.Partitions {
		return fmt.Errorf("no such topic, or a partition out of its range")
	}
	if len(s.Replicas) == 0 || hasDuplicates(s.Replicas) {
		return fmt.Errorf("replicas empty or repeated")
	}
	for _, id := range s.Replicas {
		if _, ok := m.brokers[id]; !ok {
			return fmt.Errorf("replica %d is no known broker", id)
		}
	}
	if len(s.ISR) == 0 || !slices.IsSorted(s.ISR) || hasDuplicates(s.ISR) || !within(s.ISR, s.Replicas) {
		return fmt.Errorf("isr empty, unsorted, repeated or not within the replicas")
	}
	if s.Leader != kafka.NoLeader && !slices.Contains(s.ISR, s.Leader) {
		return fmt.Errorf("leader not in the isr")
	}
	if !slices.IsSorted(r.ELR) || hasDuplicates(r.ELR) || !within(r.ELR, s.Replicas) || slices.ContainsFunc(r.ELR, func(id int32) bool { return slices.Contains(s.ISR, id) }) {
		return fmt.Errorf("elr unsorted, repeated, not within the replicas or in the isr")
	}
	old, ok := m.partitions[s.TopicPartition]
	if !ok {
		return nil
	}
	o := old.State
	switch {
	case !slices.Equal(s.Replicas, o.Replicas):
		return fmt.Errorf("replicas %v, not %v: replicas never change", s.Replicas, o.Replicas)
	case s.LeaderEpoch < o.LeaderEpoch || s.PartitionEpoch < o.PartitionEpoch:
		return fmt.Errorf("epochs back from leader epoch %d, partition epoch %d", o.LeaderEpoch, o.PartitionEpoch)
	case s.Leader != o.Leader && s.LeaderEpoch == o.LeaderEpoch:
		return fmt.Errorf("leader %d to %d at the same leader epoch", o.Leader, s.Leader)
	case (s.Leader != o.Leader || !slices.Equal(s.ISR, o.ISR) || s.LeaderEpoch > o.LeaderEpoch) && s.PartitionEpoch == o.PartitionEpoch:
		return fmt.Errorf("leader, isr or leader epoch changed at the same partition epoch %d", o.PartitionEpoch)
	}
	return nil
}

// within reports whether every id of s is in set.
func within(s, set []int32) bool {
	for _, id := range s {
		if !slices.Contains(set, id) {
			return false
		}
	}
	return true
}

// put applies r, checked or not, keeping copies: nothing the image holds
// is shared with the record.
func (m *Image) put(r Record) {
	switch {
	case r.Topic != nil:
		m.topics[r.Topic.Name] = *r.Topic
	case r.Broker != nil:
		b := *r.Broker
		b.LostData = cloneOrNil(b.LostData)
		b.Suspect = cloneOrNil(b.Suspect)
		m.brokers[b.ID] = b
	case r.Partition != nil:
		p := PartitionRecord{State: r.Partition.State.Clone(), ELR: cloneOrNil(r.Partition.ELR)}
		m.partitions[p.State.TopicPartition] = p
	}
}

// cloneOrNil copies s, nil when it is empty, as the controller's own
// records have it.
func cloneOrNil[E any](s []E) []E {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// Snapshot returns the image's state, sorted, sharing nothing with it:
// equal to the Snapshot of the controller whose records built it.
func (m *Image) Snapshot() Snapshot {
	s := Snapshot{Topics: make(map[string]int32, len(m.topics)), TopicConfigs: m.TopicConfigs()}
	for name, t := range m.topics {
		s.Topics[name] = t.Partitions
	}
	for _, id := range slices.Sorted(maps.Keys(m.brokers)) {
		b := m.brokers[id]
		b.LostData, b.Suspect = slices.Clone(b.LostData), slices.Clone(b.Suspect)
		s.Brokers = append(s.Brokers, b)
	}
	for _, tp := range m.order() {
		p := m.partitions[tp]
		s.Partitions = append(s.Partitions, p.State.Clone())
		if len(p.ELR) > 0 {
			s.ELR = append(s.ELR, ELRRecord{TopicPartition: tp, Replicas: slices.Clone(p.ELR)})
		}
	}
	return s
}

// order returns the image's partitions, sorted.
func (m *Image) order() []kafka.TopicPartition {
	return slices.SortedFunc(maps.Keys(m.partitions), kafka.TopicPartition.Compare)
}

// Partition returns a copy of one partition's state.
func (m *Image) Partition(tp kafka.TopicPartition) (kafka.PartitionState, bool) {
	p, ok := m.partitions[tp]
	return p.State.Clone(), ok
}

// ELR returns tp's eligible leader replicas, sorted (nil: none).
func (m *Image) ELR(tp kafka.TopicPartition) []int32 { return slices.Clone(m.partitions[tp].ELR) }

// Metadata returns a copy of every partition's state, sorted by topic,
// then partition.
func (m *Image) Metadata() []kafka.PartitionState {
	out := make([]kafka.PartitionState, 0, len(m.partitions))
	for _, tp := range m.order() {
		out = append(out, m.partitions[tp].State.Clone())
	}
	return out
}

// LiveBrokers returns the ids of the brokers recorded alive, sorted.
func (m *Image) LiveBrokers() []int32 {
	var out []int32
	for _, id := range slices.Sorted(maps.Keys(m.brokers)) {
		if m.brokers[id].Alive {
			out = append(out, id)
		}
	}
	return out
}

// Incarnation returns the recorded incarnation of broker id.
func (m *Image) Incarnation(id int32) (int64, bool) {
	b, ok := m.brokers[id]
	return b.Incarnation, ok
}

// Addresses returns each broker's address as it registered, nil when
// none is known.
func (m *Image) Addresses() map[int32]string {
	var out map[int32]string
	for id, b := range m.brokers {
		if b.Address != "" {
			if out == nil {
				out = map[int32]string{}
			}
			out[id] = b.Address
		}
	}
	return out
}

// TopicConfigs returns the settings of every topic that has its own, nil
// when none has.
func (m *Image) TopicConfigs() map[string]kafka.TopicConfig {
	var out map[string]kafka.TopicConfig
	for name, t := range m.topics {
		if !t.Config.IsZero() {
			if out == nil {
				out = map[string]kafka.TopicConfig{}
			}
			out[name] = t.Config
		}
	}
	return out
}

// Topics returns the names of all topics, sorted.
func (m *Image) Topics() []string { return slices.Sorted(maps.Keys(m.topics)) }
