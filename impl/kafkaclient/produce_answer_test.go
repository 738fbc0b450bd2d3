package kafkaclient

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// NOT_LEADER_OR_FOLLOWER to a produce may come after the append (a
// parked produce whose leader stepped down), so the client reads it as
// the reference's ErrLeaderChanged, whose write may commit, not as a
// refusal; other codes read as they are.
func TestProduceAnswerNotLeaderMayBeWritten(t *testing.T) {
	m := clientmsg.ProduceRequest{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}}
	answer := func(code int16) error {
		resp := kmsg.NewPtrProduceResponse()
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.ErrorCode = code
		rt.Partitions = []kmsg.ProduceResponseTopicPartition{rp}
		resp.Topics = []kmsg.ProduceResponseTopic{rt}
		out, err := produceAnswer(m, resp)
		require.NoError(t, err)
		return out.(clientmsg.ProduceResponse).Err
	}
	err := answer(kerr.NotLeaderForPartition.Code)
	require.True(t, errors.Is(err, kafka.ErrLeaderChanged), "%v", err)
	require.Equal(t, kerr.NotLeaderForPartition.Code, kafka.CodeOf(err))
	require.True(t, errors.Is(answer(kerr.NotEnoughReplicas.Code), kafka.ErrNotEnoughReplicas))
	require.False(t, errors.Is(answer(kerr.NotEnoughReplicas.Code), kafka.ErrLeaderChanged))
}
