package broker

import (
	"sync"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// inbound is what a broker's handler gets besides its message: the broker
// and the message's sender.
type inbound struct {
	b    *Broker
	from NodeID
}

// brokerHandlers is the broker's table of what it does with each kind of
// message it receives: from the controller, from other brokers
// (replication) and from clients. A kind missing here is ignored.
var brokerHandlers = sync.OnceValue(func() *kafka.Handlers[inbound] {
	h := &kafka.Handlers[inbound]{}
	// From the controller.
	kafka.On(h, func(in inbound, m StateUpdate) error { return in.b.handleStateUpdate(in.from, m) })
	kafka.On(h, func(in inbound, m ShutdownAnswer) error {
		if in.b.fromController(in.from, m.ControllerEpoch) {
			in.b.handleShutdownAnswer(m)
		}
		return nil
	})
	kafka.On(h, func(in inbound, m HeartbeatAnswer) error {
		if m.Incarnation == in.b.incarnation {
			in.b.fromController(in.from, m.ControllerEpoch)
		}
		return nil
	})
	kafka.On(h, func(in inbound, m NotController) error { in.b.handleNotController(in.from, m); return nil })
	kafka.On(h, func(in inbound, m kafka.ReplicaLogInfoRequest) error { in.b.answerLogInfo(in.from, m); return nil })
	kafka.On(h, func(in inbound, m kafka.AlterPartitionAnswer) error {
		return in.b.withReplica(m.TopicPartition, func(r *partition.Replica) { r.HandleAlterPartitionAnswer(m, in.b.now) })
	})
	kafka.On(h, func(in inbound, m CreateTopicResponse) error {
		return nil // the answer to createOffsetsTopic: a refusal means it exists
	})
	// Replication.
	kafka.On(h, func(in inbound, m partition.FetchRequest) error { return in.b.handleReplicaFetch(in.from, m) })
	kafka.On(h, func(in inbound, m partition.FetchResponse) error {
		return in.b.withReplica(m.TopicPartition, func(r *partition.Replica) { r.HandleFetchResponse(m, in.b.now) })
	})
	kafka.On(h, func(in inbound, m partition.EpochEndRequest) error { return in.b.handleEpochEnd(in.from, m) })
	kafka.On(h, func(in inbound, m partition.EpochEndResponse) error {
		return in.b.withReplica(m.TopicPartition, func(r *partition.Replica) { r.HandleEpochEndResponse(m, in.b.now) })
	})
	// Clients.
	kafka.On(h, func(in inbound, m ProduceRequest) error { return in.b.handleProduce(in.from, m) })
	kafka.On(h, func(in inbound, m FetchRequest) error { return in.b.handleFetch(in.from, m) })
	kafka.On(h, func(in inbound, m FetchManyRequest) error { return in.b.handleFetchMany(in.from, m) })
	kafka.On(h, func(in inbound, m ListOffsetsRequest) error { in.b.handleListOffsets(in.from, m); return nil })
	kafka.On(h, func(in inbound, m EpochEndRequest) error { return in.b.handleClientEpochEnd(in.from, m) })
	kafka.On(h, func(in inbound, m MetadataRequest) error {
		in.b.send(in.from, in.b.metadataResponse(m.Correlation))
		return nil
	})
	kafka.On(h, func(in inbound, m InitProducerIDRequest) error {
		in.b.send(in.from, in.b.initProducerID(m))
		return nil
	})
	kafka.On(h, func(in inbound, m FindCoordinatorRequest) error { in.b.handleFindCoordinator(in.from, m); return nil })
	kafka.On(h, func(in inbound, m GroupRequest) error { in.b.handleGroupRequest(in.from, m); return nil })
	return h
})

// dispatch hands env's message to its handler (brokerHandlers).
func (b *Broker) dispatch(env Envelope) error {
	_, err := brokerHandlers().Handle(inbound{b: b, from: env.From}, env.Msg)
	return err
}
