package controller

import (
	"fmt"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// Snapshot is the controller's durable state: what a controller process
// must find again after its own restart. Liveness is not in it (heartbeat
// times are the old process's clock); incarnations are, so that a broker's
// next restart is still told apart from its current life, and partition
// states are, with their epochs, so that no epoch is ever handed out twice.
type Snapshot struct {
	Brokers []BrokerRecord
	Topics  map[string]int32
	// TopicConfigs: the topics with settings of their own, and those.
	TopicConfigs map[string]kafka.TopicConfig `json:",omitempty"`
	Partitions   []kafka.PartitionState
	// ELR: the partitions with eligible leader replicas, and those.
	ELR []ELRRecord `json:",omitempty"`
}

// ELRRecord is one partition's eligible leader replicas in a Snapshot.
type ELRRecord struct {
	TopicPartition kafka.TopicPartition
	Replicas       []int32
}

// BrokerRecord is one registered broker in a Snapshot.
type BrokerRecord struct {
	ID          int32
	Incarnation int64
	Alive       bool
	// LostData: the partitions this incarnation lost committed records of
	// and may not lead yet (RegisterBroker).
	LostData []kafka.TopicPartition `json:",omitempty"`
	// Suspect: the partitions this incarnation may have lost unsynced
	// records of (an unclean restart, RegisterBroker).
	Suspect []kafka.TopicPartition `json:",omitempty"`
	// ShuttingDown: this incarnation asked for a controlled shutdown.
	ShuttingDown bool `json:",omitempty"`
	// Address: the broker's advertised address as it last registered one.
	Address string `json:",omitempty"`
}

// Snapshot returns the controller's durable state, sorted, sharing nothing
// with the controller.
func (c *Controller) Snapshot() Snapshot {
	s := Snapshot{Topics: make(map[string]int32, len(c.topics))}
	for _, id := range c.brokerIDs() {
		s.Brokers = append(s.Brokers, brokerRecord(c.brokers[id]))
	}
	for t, n := range c.topics {
		s.Topics[t] = n
	}
	s.TopicConfigs = c.TopicConfigs()
	for _, tp := range c.order {
		s.Partitions = append(s.Partitions, c.partitions[tp].Clone())
		if elr := c.elr[tp]; len(elr) > 0 {
			s.ELR = append(s.ELR, ELRRecord{TopicPartition: tp, Replicas: slices.Clone(elr)})
		}
	}
	return s
}

// Restore rebuilds a controller from a Snapshot at time now. Every broker
// that was alive gets a whole session timeout from now to be heard from;
// the state is checked against the controller's invariants first, so a
// corrupt or hand-edited snapshot is refused rather than served.
func Restore(cfg Config, s Snapshot, now int64) (*Controller, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	for _, b := range s.Brokers {
		if _, dup := c.brokers[b.ID]; dup || b.ID < 0 {
			return nil, fmt.Errorf("restore: broker %d listed twice or invalid", b.ID)
		}
		c.brokers[b.ID] = &broker{id: b.ID, incarnation: b.Incarnation, lastHeartbeat: now, alive: b.Alive, lost: lostSet(b.LostData), suspect: lostSet(b.Suspect), shuttingDown: b.ShuttingDown, address: b.Address}
	}
	for t, n := range s.Topics {
		c.topics[t] = n
	}
	for t, cfg := range s.TopicConfigs {
		if _, ok := c.topics[t]; !ok || cfg.IsZero() || cfg.MaxMessageBytes < 0 {
			return nil, fmt.Errorf("restore: config of topic %s: no such topic, or an empty or invalid config", t)
		}
		c.configs[t] = cfg
	}
	for _, p := range s.Partitions {
		if _, dup := c.partitions[p.TopicPartition]; dup {
			return nil, fmt.Errorf("restore: partition %s listed twice", p.TopicPartition)
		}
		if n, ok := c.topics[p.Topic]; !ok || p.Partition < 0 || p.Partition >= n {
			return nil, fmt.Errorf("restore: partition %s is not in a known topic", p.TopicPartition)
		}
		ps := p.Clone()
		c.partitions[p.TopicPartition] = &ps
		c.order = append(c.order, p.TopicPartition)
	}
	slices.SortFunc(c.order, kafka.TopicPartition.Compare)
	for _, e := range s.ELR {
		if _, ok := c.partitions[e.TopicPartition]; !ok || c.elr[e.TopicPartition] != nil {
			return nil, fmt.Errorf("restore: eligible replicas of %s: no such partition, or listed twice", e.TopicPartition)
		}
		c.setELR(e.TopicPartition, slices.Clone(e.Replicas))
	}
	for t, n := range c.topics {
		for i := int32(0); i < n; i++ {
			if _, ok := c.partitions[kafka.TopicPartition{Topic: t, Partition: i}]; !ok {
				return nil, fmt.Errorf("restore: topic %s has %d partitions but partition %d has no state", t, n, i)
			}
		}
	}
	// Recoveries in flight were not kept: ask again, as KIP-966's
	// controller does after a failover.
	c.maybeRecover(now)
	if err := c.CheckInvariants(); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	// What was restored was recorded before: the next Ready records only
	// what changes from here.
	c.takeRecords()
	return c, nil
}
