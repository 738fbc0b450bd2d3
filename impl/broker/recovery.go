package broker

import (
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// answerLogInfo answers an unclean recovery's question (KIP-966's
// GetReplicaLogInfo; impl/controller recovery.go) with where this
// process's log of the partition ends. A question meant for another
// process of this broker goes unanswered: the controller asked the one it
// registered, and its recovery drops that one as this one registers. A
// partition not hosted here has an empty log, which is what the answer
// says. The answer goes to the voter that asked.
func (b *Broker) answerLogInfo(from NodeID, m kafka.ReplicaLogInfoRequest) {
	if m.Incarnation != b.incarnation || m.BrokerID != int32(b.cfg.ID) {
		return
	}
	ans := kafka.ReplicaLogInfo{TopicPartition: m.TopicPartition, BrokerID: m.BrokerID, Incarnation: b.incarnation,
		PartitionEpoch: m.PartitionEpoch, LogEnd: kafka.LogEnd{LastEpoch: -1}}
	if h, ok := b.parts[m.TopicPartition]; ok {
		ans.LogEnd = logEnd(h.replica)
	}
	b.send(from, ans) // the controller that asked: its recovery waits for it
}

// logEnd is where r's log ends: the epoch of its last record, as the
// leader-epoch cache says (a leader caches its epoch before it writes in
// it, so the newest entry may hold no record yet), and its LEO.
func logEnd(r *partition.Replica) kafka.LogEnd {
	end := kafka.LogEnd{LastEpoch: -1, Offset: r.LEO()}
	cache := r.EpochCache()
	for _, e := range cache.Entries() {
		if e.StartOffset < end.Offset {
			end.LastEpoch = e.Epoch
		}
	}
	return end
}
