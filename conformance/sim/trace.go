package sim

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"reflect"

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

// msgKey is a short fingerprint of a message for the determinism hash.
func msgKey(m any) []byte {
	var b []byte
	switch m := m.(type) {
	case partition.FetchRequest:
		b = fmt.Appendf(b, "F%d/%d/%d", m.ID, m.FetchOffset, m.CurrentLeaderEpoch)
	case partition.FetchResponse:
		b = fmt.Appendf(b, "f%d/%d/%d/%d", m.ID, len(m.Batches), m.HW, m.LEO)
	case broker.ProduceRequest:
		b = fmt.Appendf(b, "P%d", m.Correlation)
	case broker.ProduceResponse:
		b = fmt.Appendf(b, "p%d/%d", m.Correlation, m.BaseOffset)
	case broker.FetchRequest:
		b = fmt.Appendf(b, "C%d/%d", m.Correlation, m.Offset)
	case broker.FetchResponse:
		b = fmt.Appendf(b, "c%d/%d/%d", m.Correlation, len(m.Batches), m.HW)
	default:
		b = append(b, reflect.TypeOf(m).Name()...)
	}
	return b
}

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

func describeMsg(m any) string {
	switch m := m.(type) {
	case partition.FetchRequest:
		return fmt.Sprintf("ReplicaFetch %s offset %d epoch %d", m.TopicPartition, m.FetchOffset, m.CurrentLeaderEpoch)
	case partition.FetchResponse:
		return fmt.Sprintf("ReplicaFetchResponse %s %d batches hw %d leo %d err %v", m.TopicPartition, len(m.Batches), m.HW, m.LEO, m.Err)
	case partition.EpochEndRequest:
		return fmt.Sprintf("EpochEnd %s epoch %d", m.TopicPartition, m.Epoch)
	case partition.EpochEndResponse:
		return fmt.Sprintf("EpochEndResponse %s epoch %d end %d err %v", m.TopicPartition, m.Epoch, m.EndOffset, m.Err)
	case broker.ProduceRequest:
		return fmt.Sprintf("Produce %s %q acks %d", m.TopicPartition, firstValue(&m.Batch), m.Acks)
	case broker.ProduceResponse:
		return fmt.Sprintf("ProduceResponse %s offset %d err %v", m.TopicPartition, m.BaseOffset, m.Err)
	case broker.FetchRequest:
		return fmt.Sprintf("Fetch %s offset %d", m.TopicPartition, m.Offset)
	case broker.FetchResponse:
		return fmt.Sprintf("FetchResponse %s %d batches hw %d err %v", m.TopicPartition, len(m.Batches), m.HW, m.Err)
	case broker.StateUpdate:
		return fmt.Sprintf("StateUpdate %d partitions full=%v", len(m.States), m.Full)
	case kafka.AlterPartition:
		return fmt.Sprintf("AlterPartition %s isr %v", m.TopicPartition, m.NewISR)
	case kafka.AlterPartitionAnswer:
		return fmt.Sprintf("AlterPartitionAnswer %s %s isr %v", m.TopicPartition, kafka.Name(m.Err), m.State.ISR)
	}
	return fmt.Sprintf("%T", m)
}
