package broker_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// groupCall sends one group request to broker `to` and returns the answer.
func groupCall[T any](c *cluster, to broker.NodeID, req group.Request) T {
	c.t.Helper()
	corr := c.nextCorr()
	c.send(to, broker.GroupRequest{Correlation: corr, Req: req})
	resp := takeOne[broker.GroupResponse](c)
	require.Equal(c.t, corr, resp.Correlation)
	out, ok := resp.Resp.(T)
	require.True(c.t, ok, "answer is %T, want %T", resp.Resp, *new(T))
	return out
}

// coordinator asks broker `at` for g's coordinator until there is one.
func (c *cluster) coordinator(at broker.NodeID, g string) broker.NodeID {
	c.t.Helper()
	var id broker.NodeID
	c.tickUntil(10_000, func() bool {
		c.send(at, broker.FindCoordinatorRequest{Correlation: c.nextCorr(), Group: g})
		resp := takeOne[broker.FindCoordinatorResponse](c)
		if resp.Err != nil {
			require.ErrorIs(c.t, resp.Err, kafka.ErrCoordinatorNotAvailable)
			return false
		}
		id = broker.NodeID(resp.Coordinator)
		return true
	}, "no coordinator for "+g)
	return id
}

func TestGroupCoordinatorCommitsSurviveItsFailover(t *testing.T) {
	c := newCluster(t, opts{minISR: 2})
	const g = "readers"
	coord := c.coordinator(1, g)

	// KIP-394: a new member first gets its id, then joins with it.
	join := group.JoinRequest{Group: g, ClientID: "app", SessionTimeoutMs: 10_000, ProtocolType: "consumer",
		Protocols: []group.Protocol{{Name: "range", Metadata: []byte("sub")}}}
	jr := groupCall[group.JoinResponse](c, coord, join)
	require.Equal(t, kafka.ErrMemberIDRequired, jr.Err)
	join.MemberID = jr.MemberID
	c.tick(10)
	jr = groupCall[group.JoinResponse](c, coord, join)
	require.Equal(t, nil, jr.Err)
	require.Equal(t, int32(1), jr.Generation)
	require.Equal(t, jr.MemberID, jr.LeaderID)
	member := jr.MemberID

	// The leader's assignment is stored in the offsets topic before the
	// sync is answered.
	sr := groupCall[group.SyncResponse](c, coord, group.SyncRequest{Group: g, MemberID: member, Generation: 1,
		Assignments: map[string][]byte{member: []byte("all of t")}})
	require.Equal(t, nil, sr.Err)
	require.Equal(t, []byte("all of t"), sr.Assignment)

	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	cr := groupCall[group.CommitResponse](c, coord, group.CommitRequest{Group: g, MemberID: member, Generation: 1,
		Offsets: []group.OffsetToCommit{{TopicPartition: tp, Offset: 42}}})
	require.Equal(t, []group.PartitionError{{TopicPartition: tp, Err: nil}}, cr.Partitions)
	fr := groupCall[group.FetchOffsetsResponse](c, coord, group.FetchOffsetsRequest{Group: g})
	require.Equal(t, nil, fr.Err)
	require.Len(t, fr.Partitions, 1)
	require.Equal(t, int64(42), fr.Partitions[0].Offset)

	// Another broker is not the coordinator.
	other := broker.NodeID(1)
	if other == coord {
		other = 2
	}
	nr := groupCall[group.HeartbeatResponse](c, other, group.HeartbeatRequest{Group: g, MemberID: member, Generation: 1})
	require.Equal(t, kafka.ErrNotCoordinator, nr.Err)

	// The coordinator's broker restarts: the offsets partition gets a new
	// leader, which loads the group and its offsets from the replicated log.
	c.crash(coord)
	c.start(coord)
	c.tick(500)
	next := c.coordinator(other, g)
	require.NotEqual(t, coord, next, "the restarted broker cannot lead before it is back in the ISR")
	fr = groupCall[group.FetchOffsetsResponse](c, next, group.FetchOffsetsRequest{Group: g})
	require.Equal(t, nil, fr.Err)
	require.Equal(t, int64(42), fr.Partitions[0].Offset, "the committed offset survived the coordinator")

	// The generation survived too: the member goes on, a stale one is fenced.
	hb := groupCall[group.HeartbeatResponse](c, next, group.HeartbeatRequest{Group: g, MemberID: member, Generation: 1})
	require.Equal(t, nil, hb.Err)
	stale := groupCall[group.CommitResponse](c, next, group.CommitRequest{Group: g, MemberID: member, Generation: 0,
		Offsets: []group.OffsetToCommit{{TopicPartition: tp, Offset: 7}}})
	require.Equal(t, kafka.ErrIllegalGeneration, stale.Partitions[0].Err)
	fr = groupCall[group.FetchOffsetsResponse](c, next, group.FetchOffsetsRequest{Group: g})
	require.Equal(t, int64(42), fr.Partitions[0].Offset)
}

func TestFindCoordinatorCreatesTheOffsetsTopicOnce(t *testing.T) {
	c := newCluster(t, opts{})
	c.send(2, broker.FindCoordinatorRequest{Correlation: c.nextCorr(), Group: "g"})
	resp := takeOne[broker.FindCoordinatorResponse](c)
	require.True(t, errors.Is(resp.Err, kafka.ErrCoordinatorNotAvailable), "%v", resp.Err)
	c.tick(100)
	st := c.state(kafka.TopicPartition{Topic: broker.OffsetsTopic, Partition: group.PartitionFor("g", 3)})
	require.Len(t, st.Replicas, 3)
	id := c.coordinator(2, "g")
	require.Equal(t, st.Leader, int32(id))
}

// An empty group id gets a coordinator, and the coordinator refuses the
// group with INVALID_GROUP_ID, which clients do not retry.
func TestEmptyGroupIDIsRefusedByItsCoordinator(t *testing.T) {
	c := newCluster(t, opts{})
	coord := c.coordinator(1, "")
	jr := groupCall[group.JoinResponse](c, coord, group.JoinRequest{Group: "", SessionTimeoutMs: 10_000, ProtocolType: "consumer",
		Protocols: []group.Protocol{{Name: "range"}}})
	require.Equal(t, kafka.ErrInvalidGroupID, jr.Err)
}
