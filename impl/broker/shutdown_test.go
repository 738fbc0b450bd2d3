package broker_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// others lists the brokers of a three-broker cluster other than id.
func others(id broker.NodeID) []broker.NodeID {
	return slices.DeleteFunc([]broker.NodeID{1, 2, 3}, func(o broker.NodeID) bool { return o == id })
}

// A leader's controlled shutdown: the controller moves the leadership to
// another ISR member and takes the stopping broker out of the ISR before
// it approves; the broker then flushes and writes a clean-shutdown marker
// naming its incarnation, which the next start takes away and reports, so
// that the controller keeps the restarted broker among the eligible
// replicas (it lost nothing). A crash after the same controlled shutdown
// leaves no marker, and the restart drops the broker from the ELR.
// Reference: spec/SEMANTICS.md, Controlled shutdown; Clean and unclean
// restarts.
func TestControlledShutdownThenCleanRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "clean", false: "crash after approval"}[clean]
		t.Run(name, func(t *testing.T) {
			c, leader := newTopic(t, opts{minISR: 3})
			c.produceOK(leader, tp0, "a", "b")
			inc, _ := c.ctrl.Controller().Incarnation(int32(leader))

			b := c.broker(leader)
			b.BeginShutdown(c.now)
			c.after(c.nodes[leader], nil)
			c.tickUntil(5000, b.ShutdownApproved, "the controller never approved the controlled shutdown")
			s := c.state(tp0)
			require.NotEqual(t, int32(leader), s.Leader, "approved while still leading")
			require.NotContains(t, s.ISR, int32(leader), "approved while still in the ISR")
			require.Contains(t, c.ctrl.Controller().ELR(tp0), int32(leader), "the ISR fell below min ISR: the leaver is eligible")
			require.NotEqual(t, partition.RoleLeader, c.replica(leader, tp0).Role())

			n := c.nodes[leader]
			if clean {
				require.NoError(t, b.Shutdown())
				c.after(n, nil)
				data, err := n.disk.ReadFile("clean-shutdown")
				require.NoError(t, err, "a clean shutdown writes its marker")
				require.Contains(t, string(data), "incarnation ")
				c.down(leader)
				n.disk.Crash() // the process is gone; the marker was written durably
			} else {
				c.crash(leader)
			}

			// The new leader waits so that the restarted broker cannot
			// rejoin the ISR before the ELR is read.
			newLeader := broker.NodeID(c.state(tp0).Leader)
			c.pause(newLeader)
			c.start(leader)
			c.settle()
			_, err := n.disk.ReadFile("clean-shutdown")
			require.Error(t, err, "the next start takes the marker away before it writes")
			if clean {
				require.Contains(t, c.ctrl.Controller().ELR(tp0), int32(leader),
					"a restart after the clean stop of incarnation %d keeps the broker eligible", inc)
			} else {
				require.NotContains(t, c.ctrl.Controller().ELR(tp0), int32(leader),
					"an unclean restart may have lost what the broker reported")
			}
			c.resume(newLeader)
			c.tickUntil(5000, func() bool { return slices.Contains(c.state(tp0).ISR, int32(leader)) }, "the restarted broker never rejoined the ISR")
			require.Equal(t, []string{"a", "b"}, values(c.read(newLeader, tp0, 0).Batches))
		})
	}
}

// A stopping follower that the controller took out of the ISR stops
// fetching, as Kafka's ReplicaManager stops its fetchers: were it to go on,
// its leader would propose it for the ISR again and wait for it.
// Reference: spec/SEMANTICS.md, Controlled shutdown.
func TestStoppingFollowerStopsFetchingOutsideTheISR(t *testing.T) {
	c, leader := newTopic(t, opts{})
	f := others(leader)[0]
	c.produceOK(leader, tp0, "a")
	c.tick(fetchWaitMs * 2)
	require.EqualValues(t, 1, c.replica(f, tp0).LEO())

	b := c.broker(f)
	b.BeginShutdown(c.now)
	c.after(c.nodes[f], nil)
	c.tickUntil(5000, b.ShutdownApproved, "the controller never approved the controlled shutdown")
	require.NotContains(t, c.state(tp0).ISR, int32(f))
	// The fetch the leader held when the approval came ends empty.
	c.tick(2 * fetchWaitMs)

	c.produceOK(leader, tp0, "b", "c")
	c.tick(5 * fetchWaitMs)
	require.EqualValues(t, 1, c.replica(f, tp0).LEO(), "a stopping follower out of the ISR fetched")
	require.NotContains(t, c.state(tp0).ISR, int32(f), "a stopping follower was proposed for the ISR again")
}

// A produce refused with NOT_LEADER_OR_FOLLOWER names the leader the broker
// knows, with its epoch (KIP-951's CurrentLeader): sent to a follower, and
// parked on a leader whose leadership a controlled shutdown moved away.
// Reference: spec/SEMANTICS.md, Producer (leader hints).
func TestNotLeaderAnswersNameTheLeader(t *testing.T) {
	c, leader := newTopic(t, opts{})
	f := others(leader)
	c.produce(f[0], tp0, partition.AcksAll, "v")
	resp := takeOne[broker.ProduceResponse](c)
	require.ErrorIs(t, resp.Err, kafka.ErrNotLeader)
	s := c.state(tp0)
	require.Equal(t, broker.LeaderHint{ID: s.Leader, Epoch: s.LeaderEpoch}, broker.LeaderHint{ID: resp.Leader.ID, Epoch: resp.Leader.Epoch})

	// An acks=all produce parks on the leader while one follower is
	// paused; the leader's controlled shutdown then ends its leadership.
	c.pause(f[1])
	req := c.produce(leader, tp0, partition.AcksAll, "parked")
	require.Empty(t, take[broker.ProduceResponse](c), "answered before every ISR member had the batch")
	b := c.broker(leader)
	b.BeginShutdown(c.now)
	c.after(c.nodes[leader], nil)
	c.tickUntil(5000, func() bool { return c.state(tp0).Leader != int32(leader) }, "the leadership never moved")
	c.settle()
	resp = takeOne[broker.ProduceResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.Equal(t, kafka.CodeOf(kafka.ErrNotLeader), kafka.CodeOf(resp.Err), "%v", resp.Err)
	s = c.state(tp0)
	require.Equal(t, s.Leader, resp.Leader.ID, "the hint names the new leader")
	require.Equal(t, s.LeaderEpoch, resp.Leader.Epoch)

	// Other refusals name no leader.
	c.resume(f[1])
	c.produce(broker.NodeID(s.Leader), kafka.TopicPartition{Topic: "nope"}, partition.AcksAll, "v")
	resp = takeOne[broker.ProduceResponse](c)
	require.ErrorIs(t, resp.Err, kafka.ErrUnknownTopicOrPartition)
	require.Equal(t, broker.LeaderHint{ID: -1, Epoch: -1}, resp.Leader)
}

// A client's OffsetForLeaderEpoch is answered by the leader from its epoch
// cache (the largest epoch at or below the one asked, and where it ended;
// -1 and -1 above its latest), fenced by the client's current leader epoch
// unless that is -1, and refused by followers.
// Reference: spec/SEMANTICS.md, Consumer (OffsetForLeaderEpoch, KIP-320).
func TestClientEpochEnd(t *testing.T) {
	c, first := newTopic(t, opts{})
	c.produceOK(first, tp0, "a")
	// A second epoch, so that an older one can be asked and fenced.
	c.crash(first)
	c.tickUntil(2*sessionTimeoutMs, func() bool { return c.state(tp0).Leader != int32(first) }, "no new leader")
	leader := broker.NodeID(c.state(tp0).Leader)
	c.produceOK(leader, tp0, "b")
	epoch := c.state(tp0).LeaderEpoch
	require.Positive(t, epoch)

	ask := func(to broker.NodeID, leaderEpoch, current int32) broker.EpochEndResponse {
		t.Helper()
		req := broker.EpochEndRequest{Correlation: c.nextCorr(), TopicPartition: tp0, LeaderEpoch: leaderEpoch, CurrentLeaderEpoch: current}
		c.send(to, req)
		resp := takeOne[broker.EpochEndResponse](c)
		require.Equal(t, req.Correlation, resp.Correlation)
		return resp
	}
	r := ask(leader, epoch, epoch)
	require.NoError(t, r.Err)
	require.Equal(t, epoch, r.LeaderEpoch)
	require.EqualValues(t, 2, r.EndOffset, "the current epoch ends at the log end")
	r = ask(leader, epoch-1, epoch)
	require.NoError(t, r.Err)
	require.Equal(t, epoch-1, r.LeaderEpoch)
	require.EqualValues(t, 1, r.EndOffset, "the first epoch ended where the second began")
	r = ask(leader, epoch+5, -1)
	require.NoError(t, r.Err)
	require.Equal(t, int32(-1), r.LeaderEpoch, "an epoch above every epoch the leader holds is unknown (LeaderEpochFileCache.endOffsetFor)")
	require.EqualValues(t, -1, r.EndOffset)

	require.ErrorIs(t, ask(leader, epoch, epoch-1).Err, kafka.ErrFencedLeaderEpoch)
	require.ErrorIs(t, ask(leader, epoch, epoch+1).Err, kafka.ErrUnknownLeaderEpoch)
	follower := slices.DeleteFunc(others(leader), func(id broker.NodeID) bool { return id == first })[0]
	r = ask(follower, epoch, epoch)
	require.ErrorIs(t, r.Err, kafka.ErrNotLeader)
	require.Equal(t, int32(-1), r.LeaderEpoch)
	require.EqualValues(t, -1, r.EndOffset)
}
