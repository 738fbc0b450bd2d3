package controller

import (
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// CreateTopic creates the topic req asks for, with req.Partitions
// partitions, each replicated on req.ReplicationFactor of the live brokers,
// and answers the broker from in Ready.Answers, after the partition states
// it made. The topic's own settings (req.Config) go to every broker with
// the states (TopicConfigs).
//
// Replicas are assigned round-robin over the live brokers sorted by id, as
// Kafka's default assignment does without its random start: partition p's
// replica list starts at the (p mod n)-th broker and takes the next ones in
// order, so preferred leaders, and thus leaders, are spread evenly. Every
// replica is alive, so the ISR is the whole replica set (kept sorted), and
// Replicas[0] leads at leader epoch 0.
func (c *Controller) CreateTopic(from int32, req kafka.CreateTopic, now int64) {
	err := c.createTopic(req.Name, req.Partitions, req.ReplicationFactor, req.Config, now)
	c.answers = append(c.answers, Answer{Broker: from, Msg: kafka.CreateTopicResponse{Correlation: req.Correlation, Err: err}})
}

func (c *Controller) createTopic(name string, partitions int32, replicationFactor int, cfg kafka.TopicConfig, now int64) error {
	if name == "" {
		return kafka.With(kafka.ErrInvalidTopic, "create topic %q", name)
	}
	if _, ok := c.topics[name]; ok {
		return kafka.With(kafka.ErrTopicExists, "create topic %q", name)
	}
	if partitions <= 0 {
		return kafka.With(kafka.ErrInvalidPartitions, "create topic %q with %d partitions", name, partitions)
	}
	live := c.LiveBrokers()
	if replicationFactor <= 0 || replicationFactor > len(live) {
		return kafka.With(kafka.ErrInvalidReplicationFactor, "create topic %q with replication factor %d over %d live brokers",
			name, replicationFactor, len(live))
	}
	if cfg.MaxMessageBytes < 0 {
		return kafka.With(kafka.ErrInvalidConfig, "create topic %q with max.message.bytes %d", name, cfg.MaxMessageBytes)
	}
	if cfg.MinInsyncReplicas < 0 {
		return kafka.With(kafka.ErrInvalidConfig, "create topic %q with min.insync.replicas %d", name, cfg.MinInsyncReplicas)
	}
	c.topics[name] = partitions
	if !cfg.IsZero() {
		c.configs[name] = cfg
	}
	n := len(live)
	for i := range partitions {
		replicas := make([]int32, replicationFactor)
		for j := range replicas {
			replicas[j] = live[(int(i)+j)%n]
		}
		p := &kafka.PartitionState{
			TopicPartition: kafka.TopicPartition{Topic: name, Partition: i},
			Replicas:       replicas,
			Leader:         replicas[0],
			ISR:            slices.Sorted(slices.Values(replicas)),
		}
		c.partitions[p.TopicPartition] = p
		c.emit(Event{Kind: PartitionCreated, Now: now, Broker: -1, State: p.Clone(), OldLeader: kafka.NoLeader})
		c.queue(p)
	}
	c.order = append(c.order, c.topicPartitions(name)...)
	slices.SortFunc(c.order, kafka.TopicPartition.Compare)
	return nil
}

// topicPartitions returns the partitions of topic name, in order.
func (c *Controller) topicPartitions(name string) []kafka.TopicPartition {
	n := c.topics[name]
	out := make([]kafka.TopicPartition, n)
	for i := range n {
		out[i] = kafka.TopicPartition{Topic: name, Partition: i}
	}
	return out
}

// TopicConfigs returns the settings of every topic that has its own, nil
// when none has.
func (c *Controller) TopicConfigs() map[string]kafka.TopicConfig {
	if len(c.configs) == 0 {
		return nil
	}
	return maps.Clone(c.configs)
}

// unclean reports whether tp's topic lets a replica outside the ISR lead
// (its unclean.leader.election.enable, else the controller's). Never with
// UncleanRecovery, which replaces it (recovery.go).
func (c *Controller) unclean(tp kafka.TopicPartition) bool {
	if c.recovering() {
		return false
	}
	if u := c.configs[tp.Topic].UncleanLeaderElection; u != nil {
		return *u
	}
	return c.cfg.UncleanLeaderElection
}
