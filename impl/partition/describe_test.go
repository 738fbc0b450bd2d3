package partition

import (
	"fmt"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// Describe renders a replica canonically on one line: role, epoch, LEO,
// HW, ISR, log and epoch cache. A log renders as base:values@epoch per
// batch, e.g. "0:a@1 1:b,c@2" is a batch {a} from epoch 1 at offset 0 and a
// batch {b, c} from epoch 2 at offsets 1-2.
func Describe(r *Replica) string {
	role := r.Role().String()
	if r.Role() == RoleFollower {
		role = fmt.Sprintf("follower(%d)", r.Leader())
	}
	return fmt.Sprintf("%d: %s epoch=%d leo=%d hw=%d isr=%v log=%s epochs=%s",
		r.cfg.BrokerID, role, r.LeaderEpoch(), r.LEO(), r.HW(), r.ISR(), formatLog(r.Log()), r.epochs.String())
}

func formatLog(log []record.Batch) string {
	parts := make([]string, len(log))
	for i, b := range log {
		parts[i] = formatBatch(b)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func formatBatch(b record.Batch) string {
	vals := make([]string, len(b.Records))
	for i, r := range b.Records {
		vals[i] = string(r.Value)
	}
	return fmt.Sprintf("%d:%s@%d", b.BaseOffset, strings.Join(vals, ","), b.LeaderEpoch)
}

// kindOf names a message as the scenario files filter it.
func kindOf(m any) string {
	switch m.(type) {
	case FetchRequest:
		return "fetch"
	case FetchResponse:
		return "fetch-resp"
	case EpochEndRequest:
		return "epoch-end"
	case EpochEndResponse:
		return "epoch-end-resp"
	case kafka.AlterPartition:
		return "alter-isr"
	case kafka.AlterPartitionAnswer:
		return "alter-isr-resp"
	case kafka.PartitionState:
		return "state"
	}
	return fmt.Sprintf("%T", m)
}

func formatEnvelope(e envelope) string {
	return fmt.Sprintf("%d->%d %s", e.from, e.to, formatMessage(e.msg))
}

func formatMessage(m any) string {
	k := kindOf(m)
	switch m := m.(type) {
	case FetchRequest:
		line := fmt.Sprintf("%s id=%d offset=%d epoch=%d", k, uint32(m.ID), m.FetchOffset, m.CurrentLeaderEpoch)
		if m.LastFetchedEpoch >= 0 {
			line += fmt.Sprintf(" last=%d", m.LastFetchedEpoch)
		}
		return line
	case FetchResponse:
		if m.Err != nil {
			return fmt.Sprintf("%s id=%d err=%v leo=%d", k, uint32(m.ID), m.Err, m.LEO)
		}
		if m.Diverging {
			return fmt.Sprintf("%s id=%d diverging epoch=%d end=%d hw=%d", k, uint32(m.ID), m.DivergingEpoch, m.DivergingEndOffset, m.HW)
		}
		return fmt.Sprintf("%s id=%d hw=%d leo=%d batches=%s", k, uint32(m.ID), m.HW, m.LEO, formatLog(m.Batches))
	case EpochEndRequest:
		return fmt.Sprintf("%s id=%d epoch=%d current=%d", k, uint32(m.ID), m.Epoch, m.CurrentLeaderEpoch)
	case EpochEndResponse:
		if m.Err != nil {
			return fmt.Sprintf("%s id=%d err=%v", k, uint32(m.ID), m.Err)
		}
		return fmt.Sprintf("%s id=%d epoch=%d end=%d", k, uint32(m.ID), m.Epoch, m.EndOffset)
	case kafka.AlterPartition:
		return fmt.Sprintf("%s epoch=%d pe=%d isr=%v", k, m.LeaderEpoch, m.PartitionEpoch, m.NewISR)
	case kafka.AlterPartitionAnswer:
		if m.Err != nil {
			return fmt.Sprintf("%s err=%v (pe=%d isr=%v)", k, m.Err, m.State.PartitionEpoch, m.State.ISR)
		}
		return fmt.Sprintf("%s pe=%d isr=%v", k, m.State.PartitionEpoch, m.State.ISR)
	case kafka.PartitionState:
		return fmt.Sprintf("%s leader=%d epoch=%d pe=%d isr=%v", k, m.Leader, m.LeaderEpoch, m.PartitionEpoch, m.ISR)
	}
	return k
}
