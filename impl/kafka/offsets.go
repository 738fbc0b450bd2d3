package kafka

// OffsetsTopic is the internal topic that stores consumer groups and their
// committed offsets, Kafka's __consumer_offsets (impl/broker.OffsetsTopic
// says how the reference keeps it).
const OffsetsTopic = "__consumer_offsets"

// OffsetsPartition returns the offsets-topic partition that serves group
// among n partitions: Java's String.hashCode of the group id (UTF-16 code
// units, h = 31*h + u, in int32 arithmetic), made non-negative as Kafka's
// Utils.abs does (|h|, and 0 for MinInt32), modulo n; so a group lands
// where a Kafka cluster with n offsets partitions would serve it. n must be
// positive.
func OffsetsPartition(group string, n int32) int32 {
	var h int32
	for _, r := range group {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}
