package broker

import (
	"fmt"

	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

// OffsetsTopic is the internal topic that stores consumer groups and their
// committed offsets, Kafka's __consumer_offsets. Each of its partitions is
// replicated like any other; the broker that leads partition p hosts the
// group coordinator of every group that group.PartitionFor maps to p, and a
// commit is durable exactly when its record is committed in that partition.
// Coordinator failover is therefore leader failover: the new leader loads
// the partition's records and serves the same groups, with the same
// generations and offsets.
const OffsetsTopic = kafka.OffsetsTopic

// The group plane's messages (FindCoordinatorRequest, GroupRequest, ...)
// are impl/clientmsg's, under this package's names (clientplane.go).

// groupWaiter is who a coordinator's answer goes to.
type groupWaiter struct {
	from NodeID
	corr uint64
}

// offsetsPartition is the offsets-topic partition that serves g.
func (b *Broker) offsetsPartition(g string) kafka.TopicPartition {
	return kafka.TopicPartition{Topic: OffsetsTopic, Partition: group.PartitionFor(g, b.cfg.OffsetsTopicPartitions)}
}

func (b *Broker) handleFindCoordinator(from NodeID, m FindCoordinatorRequest) {
	resp := FindCoordinatorResponse{Correlation: m.Correlation, Coordinator: -1}
	tp := b.offsetsPartition(m.Group)
	st, ok := b.metadata[tp]
	// An empty group id has a coordinator too, as in Kafka: the group
	// requests that follow are refused there with INVALID_GROUP_ID, which
	// tells a client to stop, where "not available" makes it retry forever.
	switch {
	case !ok:
		b.createOffsetsTopic()
		resp.Err = fmt.Errorf("%w: creating %s", kafka.ErrCoordinatorNotAvailable, OffsetsTopic)
	case st.Leader < 0:
		resp.Err = fmt.Errorf("%w: %s has no leader", kafka.ErrCoordinatorNotAvailable, tp)
	default:
		resp.Coordinator = st.Leader
	}
	b.send(from, resp)
}

// createOffsetsTopic asks the controller for the offsets topic, at most
// once a second; a second creation is refused as a duplicate, harmlessly.
func (b *Broker) createOffsetsTopic() {
	if b.offsetsAsked > 0 && b.now-b.offsetsAsked < 1000 {
		return
	}
	b.offsetsAsked = b.now
	b.send(ControllerID, CreateTopic{Name: OffsetsTopic, Partitions: b.cfg.OffsetsTopicPartitions, ReplicationFactor: b.cfg.OffsetsTopicReplicationFactor})
}

func (b *Broker) handleGroupRequest(from NodeID, m GroupRequest) {
	if m.Req == nil {
		return // not a group request: nothing to answer it with
	}
	tp := b.offsetsPartition(m.Req.GroupName())
	c, ok := b.coords[tp]
	if !ok {
		b.send(from, m.Refuse(kafka.ErrNotCoordinator))
		return
	}
	b.nextGroupReq++
	id := b.nextGroupReq
	b.groupWaiters[id] = groupWaiter{from: from, corr: m.Correlation}
	c.Handle(id, m.Req, b.now)
}

// syncCoordinators makes the hosted coordinators follow leadership of the
// offsets partitions: a partition this broker now leads gets a coordinator
// loaded from its log; one it no longer leads has its coordinator
// unloaded, which answers whatever waited NOT_COORDINATOR.
func (b *Broker) syncCoordinators() error {
	if !b.rolesChanged {
		return nil // only a StateUpdate moves leadership
	}
	b.rolesChanged = false
	for _, tp := range b.order {
		if tp.Topic != OffsetsTopic {
			continue
		}
		h := b.parts[tp]
		leading := h.replica.Role() == partition.RoleLeader
		c, hosted := b.coords[tp]
		switch {
		case leading && (!hosted || b.coordEpoch[tp] != h.replica.LeaderEpoch()):
			if !hosted {
				var err error
				if c, err = group.New(b.cfg.Settings.BrokerGroups.Config); err != nil {
					return &FailpointError{Name: "group", Action: ActionCrash, Cause: err}
				}
				b.coords[tp] = c
			}
			recs, err := offsetRecords(h.replica.Log())
			if err == nil {
				err = c.Load(h.replica.LeaderEpoch(), recs, b.now)
			}
			if err != nil {
				// A record that does not decode: the coordinator cannot
				// serve these groups. Kafka's coordinator fails the load
				// too; clients see NOT_COORDINATOR meanwhile.
				c.Unload()
				delete(b.coords, tp)
				if err := b.flushCoordinator(tp, c); err != nil {
					return err
				}
				continue
			}
			b.coordEpoch[tp] = h.replica.LeaderEpoch()
			if err := b.flushCoordinator(tp, c); err != nil {
				return err
			}
		case !leading && hosted:
			c.Unload()
			delete(b.coords, tp)
			delete(b.coordEpoch, tp)
			if err := b.flushCoordinator(tp, c); err != nil {
				return err
			}
		}
	}
	return nil
}

func offsetRecords(log []record.Batch) ([]group.Record, error) {
	var out []group.Record
	for i := range log {
		// The coordinator writes its batches uncompressed; a batch
		// that is not is one it did not write.
		recs, err := log[i].DecodeRecords(nil)
		if err != nil {
			return nil, fmt.Errorf("offsets batch at %d: %w", log[i].BaseOffset, err)
		}
		for _, r := range recs {
			out = append(out, group.Record{Key: r.Key, Value: r.Value})
		}
	}
	return out, nil
}

func (b *Broker) flushCoordinator(tp kafka.TopicPartition, c *group.Coordinator) error {
	rd := c.Ready()
	defer c.Advance()
	for _, e := range rd.Events {
		kind := "group"
		if e.Kind == group.AppendFailed {
			kind = EventOffsetsAppendFailed
		}
		b.events = append(b.events, Event{Broker: b.cfg.ID, TP: tp, Kind: kind, Detail: e.String()})
	}
	for _, a := range rd.Answers {
		w, ok := b.groupWaiters[a.ID]
		if !ok {
			continue
		}
		delete(b.groupWaiters, a.ID)
		b.send(w.from, GroupResponse{Correlation: w.corr, Resp: a.Msg})
	}
	for _, a := range rd.Appends {
		if err := b.appendGroupRecords(tp, c, a); err != nil {
			return err
		}
	}
	return nil
}

// EventOffsetsAppendFailed is the kind of the broker event that says a
// group coordinator's write to its offsets partition failed.
const EventOffsetsAppendFailed = "offsets-append-failed"

// appendGroupRecords writes one coordinator append as one acks=all batch
// of the offsets partition; its completion is the coordinator's AppendDone.
func (b *Broker) appendGroupRecords(tp kafka.TopicPartition, c *group.Coordinator, a group.Append) error {
	h, ok := b.parts[tp]
	if !ok {
		c.AppendDone(a.ID, kafka.ErrNotLeader, b.now)
		return nil
	}
	recs := make([]record.Record, len(a.Records))
	for i, r := range a.Records {
		recs[i] = record.Record{Key: r.Key, Value: r.Value, Timestamp: b.now}
	}
	batch := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence, Records: recs}
	ref := await(b, func(p partition.ProduceAnswer) error {
		// The coordinator of tp now, which is not c if tp's leadership
		// moved while the append waited.
		if c, ok := b.coords[tp]; ok {
			c.AppendDone(a.ID, p.Err, b.now)
		}
		return nil
	})
	h.replica.Produce(ref, partition.ProduceRequest{Acks: partition.AcksAll, Batch: batch, Deadline: b.now + b.cfg.OffsetsCommitTimeoutMs}, b.now)
	return b.apply(h)
}

// tickGroups advances the coordinators' clocks, in partition order.
func (b *Broker) tickGroups() {
	for _, tp := range b.order {
		if c, ok := b.coords[tp]; ok {
			c.Tick(b.now)
		}
	}
}
