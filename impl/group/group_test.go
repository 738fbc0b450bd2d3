package group

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

var errLostLeadership = errors.New("not leader")

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	assert.Equal(t, Config{MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 1800000}, DefaultConfig())
	for _, cfg := range []Config{
		{MinSessionTimeoutMs: 0, MaxSessionTimeoutMs: 10},
		{MinSessionTimeoutMs: 10, MaxSessionTimeoutMs: 5},
		{MinSessionTimeoutMs: 1, MaxSessionTimeoutMs: 5, InitialRebalanceDelayMs: -1},
	} {
		_, err := New(cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
	}
}

// TestTwoMembersJoinSyncStable checks the whole classic protocol for two
// members: each gets MEMBER_ID_REQUIRED first, the join completes with
// generation 1 once both rejoined, the first to join leads and alone gets
// the member list, and SyncGroup answers only after the group's metadata
// append is committed.
// Reference: KIP-394; spec/SEMANTICS.md, Consumer and groups.
func TestTwoMembersJoinSyncStable(t *testing.T) {
	h := newHarness(t)
	a, b := h.memberID("g"), h.memberID("g")
	assert.Equal(t, "c-1-1", a, "ids are <client>-<epoch>-<n>")
	ja := h.join(joinReq("g", a, "t"))
	h.unanswered(ja) // b's id is outstanding: the join waits for it
	jb := h.join(joinReq("g", b, "t"))

	ra, rb := h.joinResp(ja), h.joinResp(jb)
	for _, r := range []JoinResponse{ra, rb} {
		assert.Equal(t, nil, r.Err)
		assert.Equal(t, int32(1), r.Generation)
		assert.Equal(t, a, r.LeaderID)
		assert.Equal(t, "range", r.Protocol)
		assert.Equal(t, "consumer", r.ProtocolType)
	}
	require.Len(t, ra.Members, 2, "the leader gets every member")
	assert.Equal(t, []string{a, b}, []string{ra.Members[0].MemberID, ra.Members[1].MemberID})
	assert.Empty(t, rb.Members, "followers get no member list")

	sb := h.sync("g", b, 1, nil)
	h.unanswered(sb)
	asg := rangeAssign(t, ra, map[string]int32{"t": 4})
	sa := h.sync("g", a, 1, asg)
	require.Len(t, h.appends, 1, "the leader's assignment is persisted first")
	h.unanswered(sa)
	h.unanswered(sb)
	assert.Contains(t, h.c.Describe(), "state=CompletingRebalance")

	h.finishAppends(nil)
	assert.Equal(t, asg[a], h.answer(sa).(SyncResponse).Assignment)
	assert.Equal(t, asg[b], h.answer(sb).(SyncResponse).Assignment)
	got, err := DecodeConsumerAssignment(h.answer(sb).(SyncResponse).Assignment)
	require.NoError(t, err)
	assert.Equal(t, map[string][]int32{"t": {2, 3}}, got)
	assert.Contains(t, h.c.Describe(), "state=Stable generation=1")
	assert.Equal(t, nil, h.heartbeat("g", a, 1))
	sum, ok := h.c.Group("g")
	require.True(t, ok)
	assert.Equal(t, GroupSummary{Name: "g", State: Stable, Generation: 1, ProtocolType: "consumer", Protocol: "range",
		Leader: a, Members: []MemberSummary{{a, "c", asg[a]}, {b, "c", asg[b]}}}, sum)
	assert.Equal(t, []string{"g"}, h.c.Groups())

	// A late SyncGroup in Stable gets the assignment at once.
	s := h.sync("g", b, 1, nil)
	assert.Equal(t, asg[b], h.answer(s).(SyncResponse).Assignment)
}

// TestThirdMemberRebalances checks that a new member moves a Stable group
// to PreparingRebalance, that heartbeats then say REBALANCE_IN_PROGRESS,
// that the next generation is 2, and that a commit of generation 1 is then
// refused with ILLEGAL_GENERATION. During CompletingRebalance the member,
// then the generation, then the state are checked, as Kafka 4.x does: a
// current member's commit is REBALANCE_IN_PROGRESS, an older generation's
// ILLEGAL_GENERATION, an unknown member's or a simple one UNKNOWN_MEMBER_ID
// (Kafka before KAFKA-8487, in 2.4, answered them all REBALANCE_IN_PROGRESS).
// Reference: spec/SEMANTICS.md, Consumer and groups (stale-generation-commit);
// Kafka 4.x ClassicGroup.validateOffsetCommit.
func TestThirdMemberRebalances(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	c, jc := h.newMember("g", "t")
	h.unanswered(jc)
	assert.Equal(t, kafka.ErrRebalanceInProgress, h.heartbeat("g", a, gen))

	// Generation 1 still owns its partitions until the join completes.
	ci := h.commit("g", b, gen, off("t", 2, 7))
	h.finishAppends(nil)
	assert.Equal(t, nil, h.commitErr(ci))

	ja := h.join(joinReq("g", a, "t"))
	h.unanswered(ja)
	jb := h.join(joinReq("g", b, "t"))
	for _, j := range []uint64{ja, jb, jc} {
		r := h.joinResp(j)
		assert.Equal(t, nil, r.Err)
		assert.Equal(t, int32(2), r.Generation)
		assert.Equal(t, a, r.LeaderID, "the old leader keeps leading")
	}
	assert.Equal(t, kafka.ErrRebalanceInProgress, h.commitErr(h.commit("g", a, 2, off("t", 0, 1))),
		"no commits while the assignment is being decided")
	assert.Equal(t, kafka.ErrIllegalGeneration, h.commitErr(h.commit("g", b, 1, off("t", 2, 9))))
	assert.Equal(t, kafka.ErrUnknownMemberID, h.commitErr(h.commit("g", "nobody", 2, off("t", 2, 9))))
	assert.Equal(t, kafka.ErrUnknownMemberID, h.commitErr(h.commit("g", "", -1, off("t", 2, 9))))

	h.sync("g", a, 2, rangeAssign(t, h.joinResp(ja), map[string]int32{"t": 4}))
	h.sync("g", c, 2, nil)
	h.finishAppends(nil)
	assert.Equal(t, kafka.ErrIllegalGeneration, h.commitErr(h.commit("g", b, 1, off("t", 2, 9))))
	assert.Equal(t, kafka.ErrIllegalGeneration, h.heartbeat("g", b, 1))
	assert.Equal(t, kafka.ErrUnknownMemberID, h.commitErr(h.commit("g", "nobody", 2, off("t", 2, 9))))
	assert.Equal(t, []FetchedOffset{{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 2}, Offset: 7}}, h.fetch("g").Partitions)
}

// TestSilentMemberRemoved checks "A member silent for session.timeout.ms
// is removed and the group rebalances; its partitions move to the
// survivors."
// Reference: spec/SEMANTICS.md, Consumer and groups.
func TestSilentMemberRemoved(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	h.tick(testSession - 1000)
	require.Equal(t, nil, h.heartbeat("g", a, gen))
	h.tick(999)
	assert.Contains(t, h.c.Describe(), "state=Stable", "b has 1 ms left")
	h.tick(1)
	assert.NotContains(t, h.c.Describe(), "member "+b)
	assert.Contains(t, h.c.Describe(), "state=PreparingRebalance")
	requireEvent(t, h.events, MemberRemoved, b, "session-timeout")
	assert.Equal(t, kafka.ErrUnknownMemberID, h.heartbeat("g", b, gen))
	assert.Equal(t, kafka.ErrRebalanceInProgress, h.heartbeat("g", a, gen))

	j := h.join(joinReq("g", a, "t"))
	r := h.joinResp(j)
	assert.Equal(t, int32(2), r.Generation)
	require.Len(t, r.Members, 1)
	s := h.sync("g", a, 2, rangeAssign(t, r, map[string]int32{"t": 4}))
	h.finishAppends(nil)
	got, err := DecodeConsumerAssignment(h.answer(s).(SyncResponse).Assignment)
	require.NoError(t, err)
	assert.Equal(t, map[string][]int32{"t": {0, 1, 2, 3}}, got)
}

// TestRebalanceTimeoutRemovesLaggards checks that a join completes at the
// rebalance timeout without the members that did not rejoin, even though
// they keep heartbeating.
// Reference: Kafka's JoinGroup rebalance.timeout.ms (KIP-62).
func TestRebalanceTimeoutRemovesLaggards(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	ja := h.join(joinReq("g", a, "t", "u")) // new subscription: rebalance
	for range 5 {
		h.tick(testRebalance / 6)
		require.Equal(t, kafka.ErrRebalanceInProgress, h.heartbeat("g", b, gen))
	}
	h.unanswered(ja)
	h.tick(testRebalance / 6)
	r := h.joinResp(ja)
	assert.Equal(t, int32(2), r.Generation)
	require.Len(t, r.Members, 1)
	requireEvent(t, h.events, MemberRemoved, b, "rebalance-timeout")
}

// TestSyncTimeout checks that members that do not send SyncGroup within
// the rebalance timeout after the join completed are removed, even if they
// heartbeat.
// Reference: KAFKA-13461-era pending-sync timeout of Kafka 3.x.
func TestSyncTimeout(t *testing.T) {
	h := newHarness(t)
	a, b := h.memberID("g"), h.memberID("g")
	ja := h.join(joinReq("g", a, "t"))
	h.join(joinReq("g", b, "t"))
	sb := h.sync("g", b, 1, nil)
	for range testRebalance / 5000 {
		require.Equal(t, nil, h.heartbeat("g", a, 1), "heartbeats in CompletingRebalance are fine")
		h.tick(5000)
	}
	requireEvent(t, h.events, MemberRemoved, a, "sync-timeout")
	assert.Equal(t, kafka.ErrRebalanceInProgress, h.answer(sb).(SyncResponse).Err)
	assert.Equal(t, nil, h.joinResp(ja).Err)
}

// TestLeave checks LeaveGroup v3+: several members at once, per-member
// errors, pending KIP-394 ids, and a group left empty going Empty with its
// generation bumped and persisted.
// Reference: KIP-345 (LeaveGroup v3 batch), spec/SEMANTICS.md.
func TestLeave(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stableGroup("g", 3)
	r := h.leave("g", ids[1], "ghost")
	assert.Equal(t, []LeaveMember{{MemberID: ids[1], Err: nil}, {MemberID: "ghost", Err: kafka.ErrUnknownMemberID}}, r.Members)
	assert.Contains(t, h.c.Describe(), "state=PreparingRebalance generation=1")
	requireEvent(t, h.events, MemberRemoved, ids[1], "leave")

	pending := h.memberID("g")
	assert.Equal(t, []LeaveMember{{MemberID: pending, Err: nil}}, h.leave("g", pending).Members)

	j := h.join(joinReq("g", ids[0], "t"))
	h.unanswered(j)
	r = h.leave("g", ids[2])
	assert.Equal(t, nil, r.Members[0].Err)
	assert.Equal(t, int32(2), h.joinResp(j).Generation, "the last laggard left: the join completes")

	h.leave("g", ids[0])
	assert.Contains(t, h.c.Describe(), "state=Empty generation=3")
	require.Len(t, h.appends, 1, "Empty is persisted")
	assert.Equal(t, []LeaveMember{{MemberID: "x", Err: kafka.ErrUnknownMemberID}}, h.leave("nogroup", "x").Members)
}

// TestCommitVisibleAfterAppendDone checks that an accepted OffsetCommit is
// answered, and its offsets become visible to OffsetFetch, only once the
// broker reports its append committed; a failed append answers
// NOT_COORDINATOR and the offsets never become visible.
// Reference: spec/SEMANTICS.md, Consumer and groups (committed offset).
func TestCommitVisibleAfterAppendDone(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	ci := h.commit("g", ids[0], gen, off("t", 0, 5), off("t", 1, 6))
	h.unanswered(ci)
	require.Len(t, h.appends, 1)
	assert.Len(t, h.appends[0].Records, 2)
	assert.Equal(t, []FetchedOffset{{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Offset: -1}}, h.fetch("g", kafka.TopicPartition{Topic: "t", Partition: 0}).Partitions)
	assert.Empty(t, h.fetch("g").Partitions)

	h.finishAppends(nil)
	assert.Equal(t, nil, h.commitErr(ci))
	assert.Equal(t, []FetchedOffset{{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Offset: 5}, {TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 1}, Offset: 6}}, h.fetch("g").Partitions)

	cf := h.commit("g", ids[0], gen, off("t", 0, 50))
	h.finishAppends(errLostLeadership)
	assert.Equal(t, kafka.ErrNotCoordinator, h.commitErr(cf))
	assert.Equal(t, int64(5), h.fetch("g", kafka.TopicPartition{Topic: "t", Partition: 0}).Partitions[0].Offset)
}

// TestCommitRefusesBadPartitions checks that a partition with an empty
// topic or a negative number is refused on its own (it could not be
// written as a record Load reads back) while the others commit.
func TestCommitRefusesBadPartitions(t *testing.T) {
	h := newHarness(t)
	ci := h.commit("solo", "", -1, off("", 0, 1), off("t", -1, 1), off("t", 0, 1))
	h.finishAppends(nil)
	assert.Equal(t, CommitResponse{Partitions: []PartitionError{
		{TopicPartition: kafka.TopicPartition{Topic: "", Partition: 0}, Err: kafka.ErrUnknownTopicOrPartition},
		{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: -1}, Err: kafka.ErrUnknownTopicOrPartition},
		{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Err: nil},
	}}, h.answer(ci))
	ci = h.commit("solo", "", -1, off("", 0, 1))
	assert.Empty(t, h.appends)
	assert.Equal(t, kafka.ErrUnknownTopicOrPartition, h.commitErr(ci))
	assert.Equal(t, []FetchedOffset{{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Offset: 1}}, h.fetch("solo").Partitions)
}

// TestSyncAppendFails checks that when the group's metadata append fails,
// the parked SyncGroups are answered NOT_COORDINATOR and the group
// rebalances, as Kafka's coordinator does on a storage error.
// Reference: Kafka GroupCoordinator.doSyncGroup.
func TestSyncAppendFails(t *testing.T) {
	h := newHarness(t)
	a, b := h.memberID("g"), h.memberID("g")
	ja := h.join(joinReq("g", a, "t"))
	h.join(joinReq("g", b, "t"))
	sa := h.sync("g", a, 1, rangeAssign(t, h.joinResp(ja), map[string]int32{"t": 4}))
	sb := h.sync("g", b, 1, nil)
	h.finishAppends(errLostLeadership)
	assert.Equal(t, kafka.ErrNotCoordinator, h.answer(sa).(SyncResponse).Err)
	assert.Equal(t, kafka.ErrNotCoordinator, h.answer(sb).(SyncResponse).Err)
	assert.Contains(t, h.c.Describe(), "state=PreparingRebalance generation=1")
}

// TestSimpleCommit checks commits from consumers that do not use group
// management (generation -1, no member id): accepted when the group does
// not exist or is Empty, refused with UNKNOWN_MEMBER_ID when it has members.
// Reference: Kafka GroupCoordinator.handleCommitOffsets.
func TestSimpleCommit(t *testing.T) {
	h := newHarness(t)
	ci := h.commit("solo", "", -1, off("t", 0, 3))
	h.finishAppends(nil)
	assert.Equal(t, nil, h.commitErr(ci))
	assert.Equal(t, kafka.ErrIllegalGeneration, h.commitErr(h.commit("nogroup", "m", 0, off("t", 0, 3))))

	h.stableGroup("g", 1)
	assert.Equal(t, kafka.ErrUnknownMemberID, h.commitErr(h.commit("g", "", -1, off("t", 0, 3))))
	assert.Equal(t, kafka.ErrInvalidGroupID, h.commitErr(h.commit("", "", -1, off("t", 0, 3))))
}

// TestJoinRefused checks the JoinGroup errors.
func TestJoinRefused(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stableGroup("g", 1)
	other := joinReq("g", "", "t")
	other.Protocols = []Protocol{{Name: "roundrobin"}}
	wrongType := joinReq("g", "", "t")
	wrongType.ProtocolType = "connect"
	short := joinReq("g", "", "t")
	short.SessionTimeoutMs = 999
	long := joinReq("g", "", "t")
	long.SessionTimeoutMs = 60_001
	none := joinReq("fresh", "", "t")
	none.Protocols = nil
	for _, tc := range []struct {
		name string
		req  JoinRequest
		want error
	}{
		{"empty group id", joinReq("", "", "t"), kafka.ErrInvalidGroupID},
		{"NUL in group id", joinReq("a\x00b", "", "t"), kafka.ErrInvalidGroupID},
		{"session too short", short, kafka.ErrInvalidSessionTimeout},
		{"session too long", long, kafka.ErrInvalidSessionTimeout},
		{"unknown member, unknown group", joinReq("nogroup", "m", "t"), kafka.ErrUnknownMemberID},
		{"unknown member", joinReq("g", "m", "t"), kafka.ErrUnknownMemberID},
		{"no common protocol", other, kafka.ErrInconsistentGroupProtocol},
		{"other protocol type", wrongType, kafka.ErrInconsistentGroupProtocol},
		{"no protocols", none, kafka.ErrInconsistentGroupProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, h.joinResp(h.join(tc.req)).Err)
		})
	}
	assert.NotContains(t, h.c.Describe(), "group fresh", "a refused join creates no group")

	// A follower rejoining a Stable group unchanged gets the generation back.
	two, _ := h.stableGroup("h", 2)
	r := h.joinResp(h.join(joinReq("h", two[1], "t")))
	assert.Equal(t, JoinResponse{Generation: 1, ProtocolType: "consumer", Protocol: "range", LeaderID: two[0], MemberID: two[1]}, r)
	assert.Contains(t, h.c.Describe(), "group h state=Stable")
	// The leader rejoining forces a rebalance (new topic metadata, say).
	h.join(joinReq("h", two[0], "t"))
	assert.Contains(t, h.c.Describe(), "group h state=PreparingRebalance")
	_ = ids
}

// TestSyncRefused checks the SyncGroup errors.
func TestSyncRefused(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	for _, tc := range []struct {
		name string
		req  SyncRequest
		want error
	}{
		{"unknown group", SyncRequest{Group: "x", MemberID: ids[0], Generation: gen}, kafka.ErrUnknownMemberID},
		{"unknown member", SyncRequest{Group: "g", MemberID: "x", Generation: gen}, kafka.ErrUnknownMemberID},
		{"stale generation", SyncRequest{Group: "g", MemberID: ids[0], Generation: gen - 1}, kafka.ErrIllegalGeneration},
		{"wrong protocol", SyncRequest{Group: "g", MemberID: ids[0], Generation: gen, Protocol: "roundrobin"}, kafka.ErrInconsistentGroupProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := h.id()
			h.c.SyncGroup(id, tc.req, h.now)
			h.step()
			assert.Equal(t, tc.want, h.answer(id).(SyncResponse).Err)
		})
	}
	h.join(joinReq("g", ids[0], "t"))
	assert.Equal(t, kafka.ErrRebalanceInProgress, h.answer(h.sync("g", ids[1], gen, nil)).(SyncResponse).Err)
}

// TestInitialRebalanceDelay checks group.initial.rebalance.delay.ms: the
// first join of an Empty group waits for the delay even when every member
// has joined.
func TestInitialRebalanceDelay(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelayMs = 3000
	c, err := New(cfg)
	require.NoError(t, err)
	h := &harness{t: t, c: c, answers: make(map[uint64]any)}
	require.NoError(t, c.Load(1, nil, 0))
	a, j := h.newMember("g", "t")
	h.tick(2999)
	h.unanswered(j)
	h.tick(1)
	assert.Equal(t, a, h.joinResp(j).LeaderID)
}

func requireEvent(t *testing.T, events []Event, kind EventKind, member, reason string) {
	t.Helper()
	for _, e := range events {
		if e.Kind == kind && e.Member == member && e.Reason == reason {
			return
		}
	}
	require.Failf(t, "event missing", "%s member=%s reason=%s in %v", kind, member, reason, events)
}

// TestProtocolChoice checks the rule chosen where Kafka votes: the first
// protocol, in the leader's order of preference, that every member
// supports.
func TestProtocolChoice(t *testing.T) {
	h := newHarness(t)
	a, b := h.memberID("g"), h.memberID("g")
	ra := joinReq("g", a, "t")
	ra.Protocols = []Protocol{{Name: "sticky"}, {Name: "roundrobin"}, {Name: "range"}}
	rb := joinReq("g", b, "t")
	rb.Protocols = []Protocol{{Name: "range"}, {Name: "roundrobin"}}
	ja := h.join(ra)
	h.join(rb)
	assert.Equal(t, "roundrobin", h.joinResp(ja).Protocol)

	// A member that shares no protocol with every member is refused.
	rc := joinReq("g", h.memberID("g"), "t")
	rc.Protocols = []Protocol{{Name: "sticky"}}
	assert.Equal(t, kafka.ErrInconsistentGroupProtocol, h.joinResp(h.join(rc)).Err)
}

// TestPendingMemberID checks KIP-394's pending ids: one outstanding holds
// the join open, expires after the session timeout, and can no longer be
// used after that.
// Reference: KIP-394.
func TestPendingMemberID(t *testing.T) {
	h := newHarness(t)
	a, late := h.memberID("g"), h.memberID("g")
	ja := h.join(joinReq("g", a, "t"))
	h.tick(testSession - 1)
	h.unanswered(ja)
	require.Equal(t, kafka.ErrRebalanceInProgress, h.heartbeat("g", a, 0))
	h.tick(1)
	assert.Equal(t, int32(1), h.joinResp(ja).Generation, "the pending id expired")
	assert.Equal(t, kafka.ErrUnknownMemberID, h.joinResp(h.join(joinReq("g", late, "t"))).Err)
}

// TestRetriedJoinSupersedes checks that a member that sends JoinGroup again
// while its first one is parked gets the first answered
// REBALANCE_IN_PROGRESS and the second answered when the join completes.
func TestRetriedJoinSupersedes(t *testing.T) {
	h := newHarness(t)
	a, b := h.memberID("g"), h.memberID("g")
	first := h.join(joinReq("g", a, "t"))
	second := h.join(joinReq("g", a, "t"))
	assert.Equal(t, kafka.ErrRebalanceInProgress, h.joinResp(first).Err)
	assert.Equal(t, int32(-1), h.joinResp(first).Generation)
	h.unanswered(second)
	h.join(joinReq("g", b, "t"))
	assert.Equal(t, int32(1), h.joinResp(second).Generation)
}

// TestUnloadAnswersParkedSyncs checks that Unload answers SyncGroups
// waiting on an append NOT_COORDINATOR, and that the append's late
// AppendDone changes nothing.
func TestUnloadAnswersParkedSyncs(t *testing.T) {
	h := newHarness(t)
	a, j := h.newMember("g", "t")
	s := h.sync("g", a, 1, rangeAssign(t, h.joinResp(j), map[string]int32{"t": 4}))
	h.c.Unload()
	h.step()
	assert.Equal(t, kafka.ErrNotCoordinator, h.answer(s).(SyncResponse).Err)
	h.finishAppends(nil)
	assert.Equal(t, "coordinator unloaded epoch=1\n", h.c.Describe())
}
