package kitclient

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// outputStore is an application's own database: it keeps the output and
// the consumer's next offset per partition, and changes both in one
// atomic step (a transaction). That is the consumer-side exactly-once of
// spec/SEMANTICS.md: "store the offset atomically with the output".
type outputStore struct {
	output []string
	next   map[kafka.TopicPartition]int64
}

// apply is the transaction: a batch's results and its next offset
// together, or nothing.
func (s *outputStore) apply(tp kafka.TopicPartition, recs []ConsumerRecord) {
	if len(recs) == 0 {
		return
	}
	for _, r := range recs {
		s.output = append(s.output, "processed "+string(r.Value))
	}
	s.next[tp] = recs[len(recs)-1].Offset + 1
}

// TestExactlyOnceByStoringTheOffsetWithTheOutput is the example: a consumer
// that keeps its position in the application's store, not in the group's
// committed offsets, and seeks to it on start. It crashes mid-stream and a
// new process takes over from the store: every record is processed
// exactly once, although the consumer read some twice.
func TestExactlyOnceByStoringTheOffsetWithTheOutput(t *testing.T) {
	lc := newLiveCluster(t, 3)
	lc.createTopic("t", 1, 3)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	lc.produce(tp, "a", "b", "c", "d")

	store := &outputStore{next: map[kafka.TopicPartition]int64{}}
	start := func() *liveConsumer {
		n := lc.addConsumer(manualConfig(ResetEarliest))
		lc.do(n, func(c *Consumer) {
			require.NoError(t, c.Assign([]kafka.TopicPartition{tp}, lc.now))
			if next, ok := store.next[tp]; ok {
				require.NoError(t, c.Seek(tp, next, lc.now))
			}
		})
		return n
	}

	// The first process reads everything, but dies after storing only
	// the first batch of two; what it read after that is lost with it.
	first := start()
	lc.pollUntil(first, tp, 4, 2000)
	store.apply(tp, first.records[tp][:2])

	// More records arrive; a new process starts from the store.
	lc.produce(tp, "e", "f")
	second := start()
	lc.pollUntil(second, tp, 4, 2000)
	store.apply(tp, second.records[tp])

	require.Equal(t, []int64{2, 3, 4, 5}, polledOffsets(second.records[tp]), "the second process starts where the store says")
	require.Equal(t, []string{"processed a", "processed b", "processed c", "processed d", "processed e", "processed f"}, store.output,
		"every record exactly once in the output")
}
