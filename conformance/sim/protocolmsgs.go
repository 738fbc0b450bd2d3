package sim

import (
	"errors"
	"sync"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// The messages trace validation knows, kind by kind: which partitions a
// delivery concerns (deliveredTo), the replication messages the model has
// a counterpart of (replicationKeys, sentToModel), and what a delivery is
// as a model action (deliveries, in protocolcheck.go's terms). A kind
// none of them knows is no step of the replication protocol.

// concern collects the partitions a delivery concerns.
type concern struct {
	t   *protoTracker
	tps *[]kafka.TopicPartition
}

// deliveredTo names the partitions a delivery of a control-plane answer or
// a produce concerns; replication messages are named by their keys
// (replicationKeys).
var deliveredTo = sync.OnceValue(func() *kafka.Handlers[concern] {
	h := &kafka.Handlers[concern]{}
	kafka.On(h, func(c concern, m kafka.AlterPartitionAnswer) error {
		*c.tps = c.t.only(m.TopicPartition)
		return nil
	})
	kafka.On(h, func(c concern, m broker.ProduceRequest) error {
		*c.tps = c.t.only(m.TopicPartition)
		return nil
	})
	kafka.On(h, func(c concern, m broker.StateUpdate) error {
		for _, st := range m.States {
			*c.tps = append(*c.tps, c.t.only(st.TopicPartition)...)
		}
		return nil
	})
	return h
})

// replicationKeys names a replication message for the inflight map: its
// model kind, its id and its partition (keyOf adds the ends).
var replicationKeys = sync.OnceValue(func() *kafka.Handlers[*protoKey] {
	h := &kafka.Handlers[*protoKey]{}
	kafka.On(h, func(k *protoKey, m partition.FetchRequest) error {
		*k = protoKey{kind: protocol.FetchRequest, id: m.ID, tp: m.TopicPartition}
		return nil
	})
	kafka.On(h, func(k *protoKey, m partition.FetchResponse) error {
		*k = protoKey{kind: protocol.FetchAnswer, id: m.ID, tp: m.TopicPartition}
		return nil
	})
	kafka.On(h, func(k *protoKey, m partition.EpochEndRequest) error {
		*k = protoKey{kind: protocol.EpochRequest, id: m.ID, tp: m.TopicPartition}
		return nil
	})
	kafka.On(h, func(k *protoKey, m partition.EpochEndResponse) error {
		*k = protoKey{kind: protocol.EpochAnswer, id: m.ID, tp: m.TopicPartition}
		return nil
	})
	return h
})

// mapped is one replication message being mapped to the model's: what
// mapSent knows of it, and the key and verdict the mapping gives back.
type mapped struct {
	t        *protoTracker
	env      broker.Envelope
	k        protoKey
	from, to int32
	log      []record.Batch
	inc      int32 // the sender's incarnation, as the model numbers it
	key      protoKey
	ok       bool
}

// keep stores the model's message m (ok: its offsets mapped) until it
// arrives.
func (x *mapped) keep(m protocol.Msg, ok bool) error {
	x.key, x.ok = x.t.keep(x.k, m, ok)
	return nil
}

// sentToModel maps each replication message to the model's message; an
// answer whose request the model never saw, or that carries an error the
// model has no counterpart of, is not mapped.
var sentToModel = sync.OnceValue(func() *kafka.Handlers[*mapped] {
	h := &kafka.Handlers[*mapped]{}
	kafka.On(h, func(x *mapped, m partition.FetchRequest) error {
		msg := protocol.Msg{Kind: protocol.FetchRequest, From: x.from, To: x.to, Inc: x.t.inc(int32(x.env.From), m.ReplicaIncarnation),
			Epoch: epoch(m.CurrentLeaderEpoch), Offset: offsetIndex(x.log, m.FetchOffset), Query: epoch(m.LastFetchedEpoch)}
		return x.keep(msg, msg.Offset >= 0)
	})
	kafka.On(h, func(x *mapped, m partition.EpochEndRequest) error {
		return x.keep(protocol.Msg{Kind: protocol.EpochRequest, From: x.from, To: x.to,
			Inc: x.inc, Epoch: epoch(m.CurrentLeaderEpoch), Query: epoch(m.Epoch)}, true)
	})
	kafka.On(h, func(x *mapped, m partition.FetchResponse) error {
		req, ok := x.t.inflight[protoKey{protocol.FetchRequest, x.to, x.from, m.ID, x.k.tp}]
		if !ok || (m.Err != nil && !errors.Is(m.Err, kafka.ErrOffsetOutOfRange)) {
			return nil
		}
		msg := protocol.Msg{Kind: protocol.FetchAnswer, From: x.from, To: x.to, Inc: req.Inc, Epoch: req.Epoch, Offset: req.Offset,
			End: offsetIndex(x.log, m.LEO), Asked: req.Query}
		switch {
		case m.Err != nil:
			msg.OutOfRange = true
		case m.Diverging:
			msg.Diverging, msg.Query = true, epoch(m.DivergingEpoch)
			msg.End, msg.HW = offsetIndex(x.log, m.DivergingEndOffset), offsetIndex(x.log, m.HW)
		default:
			msg.Entries = x.t.entries(m.Batches)
			msg.HW = offsetIndex(x.log, m.HW)
		}
		return x.keep(msg, msg.End >= 0 && msg.HW >= 0)
	})
	kafka.On(h, func(x *mapped, m partition.EpochEndResponse) error {
		req, ok := x.t.inflight[protoKey{protocol.EpochRequest, x.to, x.from, m.ID, x.k.tp}]
		if !ok || m.Err != nil {
			return nil
		}
		msg := protocol.Msg{Kind: protocol.EpochAnswer, From: x.from, To: x.to, Inc: req.Inc, Epoch: req.Epoch, Asked: req.Query,
			Query: epoch(m.Epoch), End: -1}
		if m.EndOffset >= 0 {
			msg.End = offsetIndex(x.log, m.EndOffset)
		}
		return x.keep(msg, msg.End >= 0 || m.EndOffset < 0)
	})
	return h
})
