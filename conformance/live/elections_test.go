package live

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// An election seen between two metadata polls is unclean only when the
// new leader was outside the last ISR seen and leads an ISR of itself
// alone. A preferred leader that rejoined the ISR and took over between
// polls was outside the last ISR seen too, and is clean.
func TestUncleanElectionsSeenFromOutside(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t"}
	meta := func(leader, epoch int32, isr ...int32) clientmsg.MetadataResponse {
		return clientmsg.MetadataResponse{Partitions: []kafka.PartitionState{{TopicPartition: tp, Leader: leader, LeaderEpoch: epoch, ISR: isr}}}
	}
	l := &live{leaders: map[kafka.TopicPartition]kafka.PartitionState{}, start: time.Now()}
	l.Host = l
	l.Spec.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}

	l.learnLeaders(meta(1, 0, 1, 2, 3))
	l.learnLeaders(meta(2, 1, 2, 3))    // 1 died: 2, in the ISR, leads
	l.learnLeaders(meta(1, 2, 1, 2, 3)) // 1 rejoined and took over between polls
	l.learnLeaders(meta(2, 3, 2))       // 1 and 3 died: 2, in the ISR, alone
	require.Equal(t, 3, l.Stats.Elections)
	require.Zero(t, l.Stats.UncleanElections)

	l.learnLeaders(meta(3, 4, 3)) // 3 was outside the ISR and leads alone
	require.Equal(t, 1, l.Stats.UncleanElections)
	var unclean []bool
	for _, n := range l.Notes {
		if n.Kind == run.NoteElection {
			unclean = append(unclean, n.Unclean)
		}
	}
	require.Equal(t, []bool{false, false, false, true}, unclean)
}
