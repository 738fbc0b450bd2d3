package broker

import "fmt"

// retain deletes the oldest segments of h's log that retention lets go
// (log.retention.ms and log.retention.bytes, storage.Log.DeleteRetained):
// only below the replica's HW, so only committed records, and never the
// active segment. The replica reads its new log start offset from the log;
// a fetch below it is OFFSET_OUT_OF_RANGE. Kafka compacts the offsets
// topic rather than delete from it; this reference does not compact, so
// that topic keeps every segment.
func (b *Broker) retain(h *hosted) error {
	if h.tp.Topic == OffsetsTopic {
		return nil
	}
	before := h.log.StartOffset()
	n, err := h.log.DeleteRetained(b.now, h.replica.HW())
	if err != nil {
		return b.storageFailure(h.tp, err)
	}
	if n > 0 {
		b.events = append(b.events, Event{Broker: b.cfg.ID, TP: h.tp, Kind: "retention",
			Detail: fmt.Sprintf("deleted %d segments: the log start offset moved from %d to %d", n, before, h.log.StartOffset())})
	}
	return nil
}
