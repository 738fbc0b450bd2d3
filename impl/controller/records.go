package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// Metadata records.
//
// Every durable change the controller makes leaves Ready as a Record: the
// new whole value of the one thing that changed (a topic, a broker, a
// partition with its eligible leader replicas). A follower that applies
// the records of every Ready in order (Image.Apply) holds the same durable
// state as the controller (Snapshot), without running its decisions.
//
// The records are not written where the state changes: Ready compares the
// durable state with what the records so far said (recorded, an Image
// built from them) and records what differs. No change can go unrecorded
// for want of a mark at the place it was made; a thing that changed twice
// between two Readys is recorded once, with its newest value, and a thing
// that changed and changed back is not recorded at all.

// Record is one metadata record: the new whole value of one thing the
// metadata holds (KRaft's RegisterBrokerRecord, BrokerRegistrationChangeRecord
// and FenceBrokerRecord; TopicRecord with its ConfigRecords; PartitionRecord
// and PartitionChangeRecord; each here a full-value upsert). Exactly one
// field is set.
type Record struct {
	Broker    *BrokerRecord    `json:",omitempty"`
	Topic     *TopicRecord     `json:",omitempty"`
	Partition *PartitionRecord `json:",omitempty"`
}

// TopicRecord is one topic: its name, its partition count, and its own
// settings (zero: none).
type TopicRecord struct {
	Name       string
	Partitions int32
	Config     kafka.TopicConfig `json:",omitempty"`
}

// PartitionRecord is one partition: its state, with its epochs, and its
// eligible leader replicas (KIP-966), sorted (nil: none).
type PartitionRecord struct {
	State kafka.PartitionState
	ELR   []int32 `json:",omitempty"`
}

// errRecord is a record with not exactly one field set.
var errRecord = errors.New("a metadata record sets exactly one of Broker, Topic and Partition")

// Validate reports an error unless exactly one field of r is set.
func (r Record) Validate() error {
	n := 0
	if r.Broker != nil {
		n++
	}
	if r.Topic != nil {
		n++
	}
	if r.Partition != nil {
		n++
	}
	if n != 1 {
		return fmt.Errorf("%w; this one sets %d", errRecord, n)
	}
	return nil
}

// String renders r on one line, for traces and scenario tests.
func (r Record) String() string {
	if r.Validate() != nil {
		return "invalid"
	}
	switch {
	case r.Topic != nil:
		t := r.Topic
		out := fmt.Sprintf("topic %s partitions=%d", t.Name, t.Partitions)
		if !t.Config.IsZero() {
			out += " config=" + configString(t.Config)
		}
		return out
	case r.Broker != nil:
		b := r.Broker
		state := "dead"
		if b.Alive {
			state = "alive"
		}
		out := fmt.Sprintf("broker %d %s incarnation=%d", b.ID, state, b.Incarnation)
		if b.ShuttingDown {
			out += " shutting-down"
		}
		if len(b.LostData) > 0 {
			out += " lost=" + tps(b.LostData)
		}
		if len(b.Suspect) > 0 {
			out += " suspect=" + tps(b.Suspect)
		}
		if b.Address != "" {
			out += " address=" + b.Address
		}
		return out
	default:
		out := "partition " + r.Partition.State.String()
		if len(r.Partition.ELR) > 0 {
			out += " elr=" + ids(r.Partition.ELR)
		}
		return out
	}
}

// configString renders the settings c sets, by Kafka's names.
func configString(c kafka.TopicConfig) string {
	var parts []string
	if c.MaxMessageBytes != 0 {
		parts = append(parts, fmt.Sprintf("max.message.bytes=%d", c.MaxMessageBytes))
	}
	if c.MinInsyncReplicas != 0 {
		parts = append(parts, fmt.Sprintf("min.insync.replicas=%d", c.MinInsyncReplicas))
	}
	if c.UncleanLeaderElection != nil {
		parts = append(parts, fmt.Sprintf("unclean.leader.election.enable=%t", *c.UncleanLeaderElection))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// tps renders partitions as "[t-0 t-1]".
func tps(s []kafka.TopicPartition) string {
	parts := make([]string, len(s))
	for i, tp := range s {
		parts[i] = tp.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// brokerRecord returns b's durable state, sorted, sharing nothing with b.
func brokerRecord(b *broker) BrokerRecord {
	return BrokerRecord{
		ID: b.id, Incarnation: b.incarnation, Alive: b.alive,
		LostData: sortedSet(b.lost), Suspect: sortedSet(b.suspect),
		ShuttingDown: b.shuttingDown, Address: b.address,
	}
}

// sortedSet returns the members of a set of partitions, sorted (nil: none).
func sortedSet(set map[kafka.TopicPartition]bool) []kafka.TopicPartition {
	if len(set) == 0 {
		return nil
	}
	return slices.SortedFunc(maps.Keys(set), kafka.TopicPartition.Compare)
}

// recordedAs reports whether b's durable state is r, without allocating:
// Ready and HasReady ask it of every broker.
func recordedAs(b *broker, r BrokerRecord) bool {
	return b.incarnation == r.Incarnation && b.alive == r.Alive && b.shuttingDown == r.ShuttingDown &&
		b.address == r.Address && sameSet(b.lost, r.LostData) && sameSet(b.suspect, r.Suspect)
}

// sameSet reports whether set holds exactly the members of s, which holds
// each once.
func sameSet(set map[kafka.TopicPartition]bool, s []kafka.TopicPartition) bool {
	if len(set) != len(s) {
		return false
	}
	for _, tp := range s {
		if !set[tp] {
			return false
		}
	}
	return true
}

// samePartition reports whether p, with eligible leader replicas elr, is
// r, without allocating.
func samePartition(p *kafka.PartitionState, elr []int32, r PartitionRecord) bool {
	s := r.State
	return p.TopicPartition == s.TopicPartition && p.Leader == s.Leader && p.LeaderEpoch == s.LeaderEpoch &&
		p.PartitionEpoch == s.PartitionEpoch && slices.Equal(p.Replicas, s.Replicas) &&
		slices.Equal(p.ISR, s.ISR) && slices.Equal(elr, r.ELR)
}

// sameConfig reports whether a and b set the same settings.
func sameConfig(a, b kafka.TopicConfig) bool {
	if a.MaxMessageBytes != b.MaxMessageBytes || a.MinInsyncReplicas != b.MinInsyncReplicas {
		return false
	}
	ua, ub := a.UncleanLeaderElection, b.UncleanLeaderElection
	return (ua == nil) == (ub == nil) && (ua == nil || *ua == *ub)
}

// topicRecorded reports whether topic name's durable state is as recorded.
func (c *Controller) topicRecorded(name string) bool {
	t, ok := c.recorded.topics[name]
	return ok && t.Partitions == c.topics[name] && sameConfig(t.Config, c.configs[name])
}

// partitionRecorded reports whether tp's durable state is as recorded.
func (c *Controller) partitionRecorded(tp kafka.TopicPartition) bool {
	r, ok := c.recorded.partitions[tp]
	return ok && samePartition(c.partitions[tp], c.elr[tp], r)
}

// hasRecords reports whether the durable state differs from what was
// recorded, without allocating.
func (c *Controller) hasRecords() bool {
	for name := range c.topics {
		if !c.topicRecorded(name) {
			return true
		}
	}
	for id, b := range c.brokers {
		if r, ok := c.recorded.brokers[id]; !ok || !recordedAs(b, r) {
			return true
		}
	}
	for _, tp := range c.order {
		if !c.partitionRecorded(tp) {
			return true
		}
	}
	return false
}

// takeRecords returns a record of everything durable that differs from
// what was recorded, in the order Ready documents, and notes it as
// recorded. The controller never deletes a topic, a broker or a
// partition, so nothing recorded can be missing from its state.
func (c *Controller) takeRecords() []Record {
	var out []Record
	for _, name := range c.Topics() {
		if !c.topicRecorded(name) {
			out = append(out, Record{Topic: &TopicRecord{Name: name, Partitions: c.topics[name], Config: c.configs[name]}})
		}
	}
	for _, id := range c.brokerIDs() {
		b := c.brokers[id]
		if r, ok := c.recorded.brokers[id]; !ok || !recordedAs(b, r) {
			rec := brokerRecord(b)
			out = append(out, Record{Broker: &rec})
		}
	}
	for _, tp := range c.order {
		if !c.partitionRecorded(tp) {
			out = append(out, Record{Partition: &PartitionRecord{State: c.partitions[tp].Clone(), ELR: slices.Clone(c.elr[tp])}})
		}
	}
	for _, r := range out {
		c.recorded.put(r)
	}
	return out
}
