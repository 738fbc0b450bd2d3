package live

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// An old leader's success answer long after another broker was seen
// leading in a newer epoch is a zombie's; one in flight as the election
// happened, an error answer, or one from a broker that was not leading
// when the request went out, is not.
func TestZombieAnswerSeenFromOutside(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t"}
	old := kafka.PartitionState{TopicPartition: tp, Leader: 1, LeaderEpoch: 3}
	l := &live{leaders: map[kafka.TopicPartition]kafka.PartitionState{tp: {TopicPartition: tp, Leader: 2, LeaderEpoch: 4}},
		electedAt: map[kafka.TopicPartition]int64{tp: 1000}}
	ok := clientmsg.Envelope{From: 1, Msg: clientmsg.ProduceResponse{TopicPartition: tp}}
	l.Now = 1500
	l.noteZombie(answer{env: ok, known: old})
	require.Zero(t, l.Situations[run.SitZombieAnswer], "in flight as the election happened")
	l.Now = 5000
	l.noteZombie(answer{env: clientmsg.Envelope{From: 1, Msg: clientmsg.ProduceResponse{TopicPartition: tp, Err: kafka.ErrNotLeader}}, known: old})
	l.noteZombie(answer{env: clientmsg.Envelope{From: 3, Msg: clientmsg.FetchResponse{TopicPartition: tp}}, known: old})
	require.Zero(t, l.Situations[run.SitZombieAnswer])
	l.noteZombie(answer{env: ok, known: old})
	require.Equal(t, 1, l.Situations[run.SitZombieAnswer])
}
