package kitclient

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// The tests below feed a consumer answers by hand, to reach the error
// paths a healthy cluster never takes.

func newTestConsumer(t *testing.T, cfg ConsumerConfig) *Consumer {
	t.Helper()
	cfg.Bootstrap = []int32{1}
	c, err := NewConsumer(broker.ClientIDBase, cfg, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	return c
}

// only requires that out holds exactly one message, of type T, and
// returns it with its destination.
func only[T any](t *testing.T, out []broker.Envelope) (T, broker.NodeID) {
	t.Helper()
	var got []T
	var to broker.NodeID
	for _, env := range out {
		if m, ok := env.Msg.(T); ok {
			got = append(got, m)
			to = env.To
		}
	}
	require.Len(t, got, 1, "want one %T in %+v", *new(T), out)
	return got[0], to
}

func partitionState(tp kafka.TopicPartition, leader, epoch int32) kafka.PartitionState {
	s := kafka.PartitionState{Leader: leader, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	s.Topic, s.Partition = tp.Topic, tp.Partition
	return s
}

// TestConsumerFencedFetchRefreshesMetadata: a fetch refused with
// FENCED_LEADER_EPOCH makes the consumer back off, refresh metadata, and
// fetch again from the new leader with the new epoch; a lagging metadata
// answer with an older epoch does not move it back. Reference: KIP-320.
func TestConsumerFencedFetchRefreshesMetadata(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	c := newTestConsumer(t, manualConfig(ResetEarliest))
	require.NoError(t, c.Assign([]kafka.TopicPartition{tp}, 0))
	out, _ := c.Ready()
	meta, to := only[broker.MetadataRequest](t, out)
	c.Handle(to, broker.MetadataResponse{Correlation: meta.Correlation, Partitions: []kafka.PartitionState{partitionState(tp, 1, 5)}, LiveBrokers: []int32{1, 2}}, 1)
	out, _ = c.Ready()
	lo, to := only[broker.ListOffsetsRequest](t, out)
	require.Equal(t, broker.NodeID(1), to)
	c.Handle(1, broker.ListOffsetsResponse{Correlation: lo.Correlation, TopicPartition: tp, Offset: 0, LeaderEpoch: 5}, 2)
	out, _ = c.Ready()
	f, _ := only[broker.FetchRequest](t, out)
	require.EqualValues(t, 5, f.CurrentLeaderEpoch)

	c.Handle(1, broker.FetchResponse{Correlation: f.Correlation, TopicPartition: tp, HW: -1, LEO: -1, Err: kafka.ErrFencedLeaderEpoch}, 3)
	out, ev := c.Ready()
	require.Empty(t, out, "backs off first")
	require.ErrorIs(t, ev[0].(*Fetched).Err, kafka.ErrFencedLeaderEpoch)
	c.Tick(3 + 100)
	out, _ = c.Ready()
	meta, to = only[broker.MetadataRequest](t, out)
	c.Handle(to, broker.MetadataResponse{Correlation: meta.Correlation, Partitions: []kafka.PartitionState{partitionState(tp, 2, 6)}}, 104)
	out, _ = c.Ready()
	f, to = only[broker.FetchRequest](t, out)
	require.Equal(t, broker.NodeID(2), to)
	require.EqualValues(t, 6, f.CurrentLeaderEpoch)
	require.Zero(t, f.Offset)

	c.applyMetadata([]kafka.PartitionState{partitionState(tp, 1, 5)}, nil)
	require.Equal(t, leaderInfo{leader: 2, epoch: 6}, c.leaders[tp], "the highest leader epoch wins")

	// A batch that starts before the position: only the records from the
	// position on are delivered.
	c.Handle(2, broker.FetchResponse{Correlation: f.Correlation, TopicPartition: tp, HW: 3, LEO: 3,
		Batches: []record.Batch{{BaseOffset: 0, Records: []record.Record{{Value: []byte("a")}, {Value: []byte("b")}}}}}, 105)
	require.Equal(t, []string{"a", "b"}, polledValues(c.Poll()[0].Records))
	out, _ = c.Ready()
	f, _ = only[broker.FetchRequest](t, out)
	require.EqualValues(t, 2, f.Offset, "fetches on at once after data")
	require.NoError(t, c.Seek(tp, 1, 106))
	out, _ = c.Ready()
	f, _ = only[broker.FetchRequest](t, out)
	c.Handle(2, broker.FetchResponse{Correlation: f.Correlation, TopicPartition: tp, HW: 3, LEO: 3,
		Batches: []record.Batch{{BaseOffset: 0, Records: []record.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}}}}, 107)
	ds := c.Poll()
	require.Equal(t, []int64{1, 2}, polledOffsets(ds[0].Records))
}

// TestConsumerFetchTimeoutRetries: a fetch without an answer within
// fetch.max.wait.ms + request.timeout.ms is counted lost; after the backoff
// the consumer asks for metadata (the leader may be gone) and fetches
// again from the leader it names; the late answer is ignored.
func TestConsumerFetchTimeoutRetries(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	c := newTestConsumer(t, manualConfig(ResetEarliest))
	c.UpdateLeaders(t, tp)
	require.NoError(t, c.Seek(tp, 7, 0))
	out, _ := c.Ready()
	f, _ := only[broker.FetchRequest](t, out)
	deadline := c.cfg.FetchMaxWaitMs + c.cfg.RequestTimeoutMs
	c.Tick(deadline - 1)
	out, _ = c.Ready()
	require.Empty(t, out)
	c.Tick(deadline)
	out, ev := c.Ready()
	require.ErrorIs(t, ev[len(ev)-1].(*Fetched).Err, ErrResponseTimeout)
	meta, to := only[broker.MetadataRequest](t, out)
	c.Tick(deadline + c.cfg.RetryBackoffMs)
	out, _ = c.Ready()
	require.Empty(t, out, "no fetch before fresh metadata")
	c.Handle(to, broker.MetadataResponse{Correlation: meta.Correlation, Partitions: []kafka.PartitionState{partitionState(tp, 1, 0)}}, deadline+c.cfg.RetryBackoffMs)
	out, _ = c.Ready()
	f2, _ := only[broker.FetchRequest](t, out)
	require.EqualValues(t, 7, f2.Offset)
	c.Handle(1, broker.FetchResponse{Correlation: f.Correlation, TopicPartition: tp, HW: 9, LEO: 9,
		Batches: []record.Batch{{BaseOffset: 7, Records: []record.Record{{Value: []byte("late")}}}}}, deadline+200)
	require.Empty(t, c.Poll(), "the answer to a request given up on is dropped")
}

// UpdateLeaders gives c leader 1, epoch 0, for tps and assigns them (a
// test helper on the test's side of the API).
func (c *Consumer) UpdateLeaders(t *testing.T, tps ...kafka.TopicPartition) {
	t.Helper()
	var states []kafka.PartitionState
	for _, tp := range tps {
		states = append(states, partitionState(tp, 1, 0))
	}
	c.applyMetadata(states, []int32{1})
	c.metaRefreshAt = 1 << 60
	require.NoError(t, c.Assign(tps, c.now))
	c.Ready()
}

// joinStable walks c through FindCoordinator, JoinGroup (with
// MEMBER_ID_REQUIRED first, KIP-394) and SyncGroup as the only member,
// assigning itself tps, and returns the coordinator.
func joinStable(t *testing.T, c *Consumer, tps ...kafka.TopicPartition) broker.NodeID {
	t.Helper()
	var states []kafka.PartitionState
	for _, tp := range tps {
		states = append(states, partitionState(tp, 1, 0))
	}
	c.applyMetadata(states, []int32{1})
	c.Tick(c.now)
	out, _ := c.Ready()
	fc, to := only[broker.FindCoordinatorRequest](t, out)
	require.Equal(t, "g", fc.Group)
	c.Handle(to, broker.FindCoordinatorResponse{Correlation: fc.Correlation, Coordinator: 2}, c.now)
	out, _ = c.Ready()
	gr, to := only[broker.GroupRequest](t, out)
	require.Equal(t, broker.NodeID(2), to)
	join := gr.Req.(group.JoinRequest)
	require.Empty(t, join.MemberID)
	topics, err := group.DecodeConsumerSubscription(join.Protocols[0].Metadata)
	require.NoError(t, err, "the subscription is Kafka's ConsumerProtocol")
	require.Equal(t, c.cfg.Topics, topics)
	require.Equal(t, c.cfg.Assignor, join.Protocols[0].Name)
	c.Handle(2, broker.GroupResponse{Correlation: gr.Correlation, Resp: group.JoinResponse{Err: kafka.ErrMemberIDRequired, MemberID: "m-1"}}, c.now)
	out, _ = c.Ready()
	gr, _ = only[broker.GroupRequest](t, out)
	join = gr.Req.(group.JoinRequest)
	require.Equal(t, "m-1", join.MemberID)
	c.Handle(2, broker.GroupResponse{Correlation: gr.Correlation, Resp: group.JoinResponse{Generation: 4, Protocol: c.cfg.Assignor,
		LeaderID: "m-1", MemberID: "m-1", Members: []group.JoinMember{{MemberID: "m-1", Metadata: join.Protocols[0].Metadata}}}}, c.now)
	out, _ = c.Ready()
	gr, _ = only[broker.GroupRequest](t, out)
	sync := gr.Req.(group.SyncRequest)
	require.EqualValues(t, 4, sync.Generation)
	asg, err := group.DecodeConsumerAssignment(sync.Assignments["m-1"])
	require.NoError(t, err, "the assignment is Kafka's ConsumerProtocol")
	require.Len(t, asg["t"], len(tps))
	c.Handle(2, broker.GroupResponse{Correlation: gr.Correlation, Resp: group.SyncResponse{Assignment: sync.Assignments["m-1"]}}, c.now)
	require.Equal(t, tps, c.Assignment())
	return 2
}

// TestConsumerHeartbeatErrors: NOT_COORDINATOR makes the member look the
// coordinator up again and heartbeat there; REBALANCE_IN_PROGRESS revokes
// and rejoins under the same member id; UNKNOWN_MEMBER_ID rejoins
// without one.
func TestConsumerHeartbeatErrors(t *testing.T) {
	cfg := groupConfig(AssignorRange)
	c := newTestConsumer(t, cfg)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	joinStable(t, c, tp)
	c.Ready()
	c.Tick(c.now + cfg.HeartbeatIntervalMs)
	out, _ := c.Ready()
	gr, _ := only[broker.GroupRequest](t, out)
	require.IsType(t, group.HeartbeatRequest{}, gr.Req)
	c.Handle(2, broker.GroupResponse{Correlation: gr.Correlation, Resp: group.HeartbeatResponse{Err: kafka.ErrNotCoordinator}}, c.now)
	c.Tick(c.now + cfg.RetryBackoffMs)
	out, _ = c.Ready()
	fc, to := only[broker.FindCoordinatorRequest](t, out)
	c.Handle(to, broker.FindCoordinatorResponse{Correlation: fc.Correlation, Coordinator: 3}, c.now)
	out, _ = c.Ready()
	gr, to = only[broker.GroupRequest](t, out)
	require.Equal(t, broker.NodeID(3), to)
	require.IsType(t, group.HeartbeatRequest{}, gr.Req)

	c.Handle(3, broker.GroupResponse{Correlation: gr.Correlation, Resp: group.HeartbeatResponse{Err: kafka.ErrRebalanceInProgress}}, c.now)
	out, ev := c.Ready()
	require.Empty(t, c.Assignment())
	require.IsType(t, &Revoked{}, ev[0])
	gr, _ = only[broker.GroupRequest](t, out)
	require.Equal(t, "m-1", gr.Req.(group.JoinRequest).MemberID)
	c.Handle(3, broker.GroupResponse{Correlation: gr.Correlation, Resp: group.JoinResponse{Err: kafka.ErrUnknownMemberID, MemberID: "m-1"}}, c.now)
	c.Tick(c.now + cfg.RetryBackoffMs)
	out, _ = c.Ready()
	gr, _ = only[broker.GroupRequest](t, out)
	require.Empty(t, gr.Req.(group.JoinRequest).MemberID)
}

// TestConsumerCommitTimeoutIsUnknown: a commit without an answer may or
// may not have been stored (the answers that say as much:
// TestConsumerCommitAnswers).
func TestConsumerCommitTimeoutIsUnknown(t *testing.T) {
	cfg := groupConfig(AssignorRange)
	c := newTestConsumer(t, cfg)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	joinStable(t, c, tp)
	c.Ready()
	start := c.now
	id := c.Commit(map[kafka.TopicPartition]int64{tp: 5}, start)
	out, _ := c.Ready()
	gr, _ := only[broker.GroupRequest](t, out)
	req := gr.Req.(group.CommitRequest)
	require.EqualValues(t, 4, req.Generation)
	require.Equal(t, "m-1", req.MemberID)
	require.Equal(t, []group.OffsetToCommit{{TopicPartition: tp, Offset: 5}}, req.Offsets)
	c.Tick(start + cfg.RequestTimeoutMs)
	_, ev := c.Ready()
	var cm *Committed
	for _, e := range ev {
		if x, ok := e.(*Committed); ok {
			cm = x
		}
	}
	require.NotNil(t, cm)
	require.Equal(t, id, cm.ID)
	require.True(t, cm.Unknown)
	require.ErrorIs(t, cm.Err, ErrResponseTimeout)
	require.Equal(t, Span{start, start + cfg.RequestTimeoutMs}, cm.Span)
}

// TestConsumerCommitAnswers: after a commit reached the coordinator, the
// answers that leave its write possible (Kafka 4.x answers a write that
// timed out COORDINATOR_NOT_AVAILABLE, one whose leader moved
// NOT_COORDINATOR, and may commit either) are unknown outcomes, not
// failures; a refusal is a definite failure. COORDINATOR_NOT_AVAILABLE,
// NOT_COORDINATOR and REQUEST_TIMED_OUT also send the member to look the
// coordinator up again, as Java's ConsumerCoordinator does.
// Reference: Kafka 4.x CoordinatorOperationExceptionHelper.handleOperationException.
func TestConsumerCommitAnswers(t *testing.T) {
	for _, tc := range []struct {
		err     error
		unknown bool
		relook  bool
	}{
		{kafka.ErrCoordinatorNotAvailable, true, true},
		{kafka.ErrNotCoordinator, true, true},
		{kafka.ErrRequestTimedOut, true, true},
		{kafka.ErrNotEnoughReplicasAfterAppend, true, false},
		{kafka.ErrCoordinatorLoadInProgress, false, true},
		{kafka.ErrUnknownMemberID, false, false},
		{kafka.ErrRebalanceInProgress, false, false},
	} {
		t.Run(kafka.Name(tc.err), func(t *testing.T) {
			cfg := groupConfig(AssignorRange)
			c := newTestConsumer(t, cfg)
			tp := kafka.TopicPartition{Topic: "t", Partition: 0}
			joinStable(t, c, tp)
			c.Ready()
			id := c.Commit(map[kafka.TopicPartition]int64{tp: 5}, c.now)
			out, _ := c.Ready()
			gr, to := only[broker.GroupRequest](t, out)
			c.Handle(to, broker.GroupResponse{Correlation: gr.Correlation,
				Resp: group.CommitResponse{Partitions: []group.PartitionError{{TopicPartition: tp, Err: tc.err}}}}, c.now)
			_, ev := c.Ready()
			var cm *Committed
			for _, e := range ev {
				if x, ok := e.(*Committed); ok {
					cm = x
				}
			}
			require.NotNil(t, cm)
			require.Equal(t, id, cm.ID)
			require.ErrorIs(t, cm.Err, tc.err)
			require.Equal(t, tc.unknown, cm.Unknown)
			c.Tick(c.now + cfg.RetryBackoffMs)
			out, _ = c.Ready()
			finds := 0
			for _, env := range out {
				if _, ok := env.Msg.(broker.FindCoordinatorRequest); ok {
					finds++
				}
			}
			require.Equal(t, tc.relook, finds == 1, "FindCoordinator sent: %+v", out)
		})
	}
}

// TestConsumerJoinCoordinatorNotAvailable: a JoinGroup answered
// COORDINATOR_NOT_AVAILABLE (what a Kafka 4.x coordinator answers when a
// write timed out, and what a wire front end answers when its broker is
// slow) sends the member to look the coordinator up again rather than
// giving up on the group. Reference: Kafka AbstractCoordinator's
// JoinGroupResponseHandler.
func TestConsumerJoinCoordinatorNotAvailable(t *testing.T) {
	cfg := groupConfig(AssignorRange)
	c := newTestConsumer(t, cfg)
	c.applyMetadata([]kafka.PartitionState{partitionState(kafka.TopicPartition{Topic: "t"}, 1, 0)}, []int32{1})
	c.Tick(1)
	out, _ := c.Ready()
	fc, to := only[broker.FindCoordinatorRequest](t, out)
	c.Handle(to, broker.FindCoordinatorResponse{Correlation: fc.Correlation, Coordinator: 1}, 2)
	out, _ = c.Ready()
	gr, _ := only[broker.GroupRequest](t, out)
	c.Handle(1, broker.GroupResponse{Correlation: gr.Correlation, Resp: group.JoinResponse{Err: kafka.ErrCoordinatorNotAvailable}}, 3)
	_, ev := c.Ready()
	require.Empty(t, ev, "no GroupFailed")
	c.Tick(3 + cfg.RetryBackoffMs)
	out, _ = c.Ready()
	only[broker.FindCoordinatorRequest](t, out)
}

// TestConsumerGroupRefusedForGood: a JoinGroup refused with
// INVALID_SESSION_TIMEOUT (the broker's group.min.session.timeout.ms is
// above the member's session) cannot succeed by retrying: the consumer
// reports GroupFailed and stops sending group requests.
func TestConsumerGroupRefusedForGood(t *testing.T) {
	c := newTestConsumer(t, groupConfig(AssignorRange))
	c.applyMetadata([]kafka.PartitionState{partitionState(kafka.TopicPartition{Topic: "t"}, 1, 0)}, []int32{1})
	c.Tick(1)
	out, _ := c.Ready()
	fc, to := only[broker.FindCoordinatorRequest](t, out)
	c.Handle(to, broker.FindCoordinatorResponse{Correlation: fc.Correlation, Coordinator: 1}, 2)
	out, _ = c.Ready()
	gr, _ := only[broker.GroupRequest](t, out)
	c.Handle(1, broker.GroupResponse{Correlation: gr.Correlation, Resp: group.JoinResponse{Err: kafka.ErrInvalidSessionTimeout}}, 3)
	_, ev := c.Ready()
	require.Len(t, ev, 1)
	require.ErrorIs(t, ev[0].(*GroupFailed).Err, kafka.ErrInvalidSessionTimeout)
	c.Tick(10_000)
	out, _ = c.Ready()
	for _, env := range out {
		require.IsType(t, broker.MetadataRequest{}, env.Msg, "no group request after a definitive refusal")
	}
}
