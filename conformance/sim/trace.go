package sim

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"reflect"
	"sync"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// trace keeps a running hash of every step (to prove determinism) and the
// last steps in full (to show a person what led to a violation). Steps are
// rendered to text only when a report needs them.
type trace struct {
	h    hash.Hash64
	buf  []byte
	ring []traceEntry
	next int
	full bool
}

type traceEntry struct {
	at   int64
	ev   event
	text string // a note instead of an event when set
}

func (t *trace) init(tail int) {
	t.h = fnv.New64a()
	if tail > 0 {
		t.ring = make([]traceEntry, tail)
	}
}

func (t *trace) push(e traceEntry) {
	if len(t.ring) == 0 {
		return
	}
	t.ring[t.next] = e
	t.next++
	if t.next == len(t.ring) {
		t.next = 0
		t.full = true
	}
}

// step hashes the event's identity: time, kind, endpoints, message type and
// the message's correlation fields.
func (t *trace) step(at int64, e event) {
	b := t.buf[:0]
	b = binary.LittleEndian.AppendUint64(b, uint64(at))
	b = append(b, byte(e.kind))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.node))
	if e.kind == evDeliver {
		b = binary.LittleEndian.AppendUint32(b, uint32(e.env.From))
		b = binary.LittleEndian.AppendUint32(b, uint32(e.env.To))
		b = append(b, msgKey(e.env.Msg)...)
	}
	t.buf = b
	t.h.Write(b)
	if e.kind != evTick && e.kind != evClientTick {
		// Timers are hashed but not shown: what they cause shows as notes.
		t.push(traceEntry{at: at, ev: e})
	}
}

func (t *trace) note(at int64, text string) {
	t.h.Write([]byte(text))
	t.push(traceEntry{at: at, text: text})
}

func (t *trace) sum() uint64 { return t.h.Sum64() }

// tail renders the kept steps, oldest first.
func (t *trace) tail() []string {
	var out []string
	emit := func(e traceEntry) {
		if e.text != "" {
			out = append(out, fmt.Sprintf("%7d ms  %s", e.at, e.text))
			return
		}
		out = append(out, fmt.Sprintf("%7d ms  %s", e.at, describe(e.ev)))
	}
	if t.full {
		for _, e := range t.ring[t.next:] {
			emit(e)
		}
	}
	for _, e := range t.ring[:t.next] {
		emit(e)
	}
	return out
}

// msgKey is a short fingerprint of a message for the determinism hash:
// the fields that tell one replication or client message from another
// (msgKeys), and the Go type's name for the rest.
func msgKey(m kafka.Message) []byte {
	var b []byte
	if ok, _ := msgKeys().Handle(&b, m); !ok {
		b = append(b, reflect.TypeOf(m).Name()...)
	}
	return b
}

// msgKeys appends a message's fingerprint. What it prints is part of
// every run's trace hash: changing it changes every hash.
var msgKeys = sync.OnceValue(func() *kafka.Handlers[*[]byte] {
	h := &kafka.Handlers[*[]byte]{}
	kafka.On(h, func(b *[]byte, m partition.FetchRequest) error {
		*b = fmt.Appendf(*b, "F%d/%d/%d", m.ID, m.FetchOffset, m.CurrentLeaderEpoch)
		return nil
	})
	kafka.On(h, func(b *[]byte, m partition.FetchResponse) error {
		*b = fmt.Appendf(*b, "f%d/%d/%d/%d", m.ID, len(m.Batches), m.HW, m.LEO)
		return nil
	})
	kafka.On(h, func(b *[]byte, m broker.ProduceRequest) error { *b = fmt.Appendf(*b, "P%d", m.Correlation); return nil })
	kafka.On(h, func(b *[]byte, m broker.ProduceResponse) error {
		*b = fmt.Appendf(*b, "p%d/%d", m.Correlation, m.BaseOffset)
		return nil
	})
	kafka.On(h, func(b *[]byte, m broker.FetchRequest) error {
		*b = fmt.Appendf(*b, "C%d/%d", m.Correlation, m.Offset)
		return nil
	})
	kafka.On(h, func(b *[]byte, m broker.FetchResponse) error {
		*b = fmt.Appendf(*b, "c%d/%d/%d", m.Correlation, len(m.Batches), m.HW)
		return nil
	})
	return h
})

func describe(e event) string {
	switch e.kind {
	case evDeliver:
		return fmt.Sprintf("deliver %s -> %s: %s", nodeName(e.env.From), nodeName(e.env.To), describeMsg(e.env.Msg))
	case evTick, evRestart, evResume, evUnisolate, evClientTick:
		return fmt.Sprintf("%s %s", evNames[e.kind], nodeName(e.node))
	case evFault:
		return fmt.Sprintf("fault %s broker %d", e.fault.Kind, e.fault.Node)
	}
	return evNames[e.kind]
}

func nodeName(id broker.NodeID) string {
	switch {
	case id == broker.ControllerID:
		return "controller"
	case id >= broker.ClientIDBase:
		return fmt.Sprintf("client %d", id-broker.ClientIDBase)
	}
	return fmt.Sprintf("broker %d", id)
}

// describeMsg renders a message for a person reading a trace: the fields
// of the messages the replication protocol turns on (descriptions), the Go
// type for the rest.
func describeMsg(m kafka.Message) string {
	var b []byte
	if ok, _ := descriptions().Handle(&b, m); !ok {
		return fmt.Sprintf("%T", m)
	}
	return string(b)
}

var descriptions = sync.OnceValue(func() *kafka.Handlers[*[]byte] {
	h := &kafka.Handlers[*[]byte]{}
	say := func(b *[]byte, format string, args ...any) error { *b = fmt.Appendf(*b, format, args...); return nil }
	kafka.On(h, func(b *[]byte, m partition.FetchRequest) error {
		return say(b, "ReplicaFetch %s offset %d epoch %d", m.TopicPartition, m.FetchOffset, m.CurrentLeaderEpoch)
	})
	kafka.On(h, func(b *[]byte, m partition.FetchResponse) error {
		return say(b, "ReplicaFetchResponse %s %d batches hw %d leo %d err %v", m.TopicPartition, len(m.Batches), m.HW, m.LEO, m.Err)
	})
	kafka.On(h, func(b *[]byte, m partition.EpochEndRequest) error {
		return say(b, "EpochEnd %s epoch %d", m.TopicPartition, m.Epoch)
	})
	kafka.On(h, func(b *[]byte, m partition.EpochEndResponse) error {
		return say(b, "EpochEndResponse %s epoch %d end %d err %v", m.TopicPartition, m.Epoch, m.EndOffset, m.Err)
	})
	kafka.On(h, func(b *[]byte, m broker.ProduceRequest) error {
		return say(b, "Produce %s %q acks %d", m.TopicPartition, firstValue(&m.Batch), m.Acks)
	})
	kafka.On(h, func(b *[]byte, m broker.ProduceResponse) error {
		return say(b, "ProduceResponse %s offset %d err %v", m.TopicPartition, m.BaseOffset, m.Err)
	})
	kafka.On(h, func(b *[]byte, m broker.FetchRequest) error {
		return say(b, "Fetch %s offset %d", m.TopicPartition, m.Offset)
	})
	kafka.On(h, func(b *[]byte, m broker.FetchResponse) error {
		return say(b, "FetchResponse %s %d batches hw %d err %v", m.TopicPartition, len(m.Batches), m.HW, m.Err)
	})
	kafka.On(h, func(b *[]byte, m broker.StateUpdate) error {
		return say(b, "StateUpdate %d partitions full=%v", len(m.States), m.Full)
	})
	kafka.On(h, func(b *[]byte, m kafka.AlterPartition) error {
		return say(b, "AlterPartition %s isr %v", m.TopicPartition, m.NewISR)
	})
	kafka.On(h, func(b *[]byte, m kafka.AlterPartitionAnswer) error {
		return say(b, "AlterPartitionAnswer %s %s isr %v", m.TopicPartition, kafka.Name(m.Err), m.State.ISR)
	})
	return h
})
