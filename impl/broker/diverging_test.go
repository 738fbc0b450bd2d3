package broker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// A leader holds a follower's fetch that found nothing new, for up to
// replica.fetch.wait.max.ms; a fetch whose LastFetchedEpoch shows a
// divergence is answered at once, as Kafka's DelayedFetch completes one, so
// that the follower truncates without waiting. Reference: KAFKA-10554.
func TestDivergingReplicaFetchIsNotHeld(t *testing.T) {
	c, leader := newTopic(t, opts{tweak: func(cfg *broker.Config) { cfg.ReplicaFetchWaitMaxMs = 500 }})
	c.produceOK(leader, tp0, "a")
	r := c.replica(leader, tp0)
	follower := int32(1)
	if leader == 1 {
		follower = 2
	}
	fetch := func(offset int64) []partition.FetchResponse {
		out, err := handleDirect(c, leader, partition.FetchRequest{TopicPartition: tp0, ID: 77, ReplicaID: follower, ReplicaIncarnation: 1 << 40,
			To: int32(leader), FetchOffset: offset, CurrentLeaderEpoch: r.LeaderEpoch(), LastFetchedEpoch: r.LeaderEpoch(), MaxBytes: 1 << 20})
		require.NoError(t, err)
		var resps []partition.FetchResponse
		for _, env := range out {
			if m, ok := env.Msg.(partition.FetchResponse); ok {
				resps = append(resps, m)
			}
		}
		return resps
	}
	assert.Empty(t, fetch(r.LEO()), "caught up, nothing new: held")
	resps := fetch(r.LEO() + 5)
	require.Len(t, resps, 1, "past the leader's end of its epoch: answered at once")
	assert.True(t, resps[0].Diverging)
	assert.Equal(t, r.LEO(), resps[0].DivergingEndOffset)
}
