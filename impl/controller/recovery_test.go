package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

const recoveryTimeout = 5000 // longer than a kill, so that only tick waits it out

func recoveryConfig(s RecoveryStrategy) Config {
	return Config{UncleanRecovery: s, UncleanRecoveryTimeoutMs: recoveryTimeout}
}

// lastISRMemberDies makes t-0 offline on a fresh 3-broker harness: the
// leader, broker 1, shrinks the ISR to itself, then dies. Brokers 2 and 3
// live outside the ISR, with no eligible leader replica (no
// EligibleMinISR). It drains the Ready and returns the asks in it.
func lastISRMemberDies(t *testing.T, cfg Config) (*harness, kafka.TopicPartition, []kafka.ReplicaLogInfoRequest) {
	t.Helper()
	h := newHarness(t, cfg, 1, 2, 3)
	h.createTopic("t", 1, 3)
	p := tp("t", 0)
	require.NoError(t, h.alter(p, 1).Err)
	drain(h.c)
	h.kill(1)
	require.Equal(t, kafka.NoLeader, h.state(p).Leader)
	return h, p, drain(h.c).Asks
}

// answer has broker id answer the recovery of tp in flight with the log
// end epoch/offset, from its current process.
func (h *harness) answer(tp kafka.TopicPartition, id, epoch int32, offset int64) error {
	h.t.Helper()
	err := h.c.ReplicaLogInfo(kafka.ReplicaLogInfo{TopicPartition: tp, BrokerID: id, Incarnation: h.inc[id],
		PartitionEpoch: h.state(tp).PartitionEpoch, LogEnd: kafka.LogEnd{LastEpoch: epoch, Offset: offset}}, h.now)
	h.check()
	return err
}

func askedOf(asks []kafka.ReplicaLogInfoRequest) []int32 {
	var ids []int32
	for _, a := range asks {
		ids = append(ids, a.BrokerID)
	}
	return ids
}

// With the last ISR member dead for good and no eligible replica, the
// controller asks every live replica where its log ends and, once all
// have answered, elects the one whose log ends last, with the ISR set to
// it; the event lists every answer. Before the last answer it waits.
// Reference: KIP-966, Unclean Recovery (GetReplicaLogInfo; the highest
// leader epoch, then the longest log).
func TestRecoveryElectsTheLongestLiveReplica(t *testing.T) {
	h, p, asks := lastISRMemberDies(t, recoveryConfig(RecoveryAggressive))
	assert.Equal(t, []int32{2, 3}, askedOf(asks))
	s := h.state(p)
	for i, a := range asks {
		assert.Equal(t, h.inc[a.BrokerID], a.Incarnation, "ask %d", i)
		assert.Equal(t, s.PartitionEpoch, a.PartitionEpoch, "ask %d: the offline state's", i)
		assert.Equal(t, p, a.TopicPartition)
	}

	require.NoError(t, h.answer(p, 2, 0, 100))
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "3 has not answered yet")
	require.NoError(t, h.answer(p, 3, 0, 250))
	s = h.state(p)
	assert.Equal(t, int32(3), s.Leader, "3's log is the longer")
	assert.Equal(t, []int32{3}, s.ISR)
	rd := drain(h.c)
	require.Len(t, rd.Events, 1)
	e := rd.Events[0]
	assert.Equal(t, ElectionRecovery, e.Kind)
	assert.Equal(t, []ReplicaEnd{{Broker: 2, LogEnd: kafka.LogEnd{Offset: 100}}, {Broker: 3, LogEnd: kafka.LogEnd{Offset: 250}}}, e.Ends)
	assert.Contains(t, e.String(), "election-recovery t-0 leader=-1->3")
	assert.Contains(t, e.String(), "ends=[2:0/100 3:0/250]")
	assert.True(t, e.Kind.IsElection())
	_, _, inFlight := h.c.Recovery(p)
	assert.False(t, inFlight, "done")
	assert.ErrorIs(t, h.answer(p, 2, 0, 100), ErrNotAsked, "a late copy of an answer changes nothing")
	assert.Equal(t, int32(3), h.state(p).Leader)
}

// The last epoch ranks first: a log whose last record is of a later epoch
// was written by a later leader, which held every record committed
// before; records past it in a longer log of an older epoch never were.
// Ties go to assignment order. A replica that registered having lost the
// partition's data is elected if its log, as it is now, ends last: its
// lost mark goes with the election.
// Reference: KIP-966 (GetReplicaLogInfo's LastWrittenLeaderEpoch, then
// LogEndOffset).
func TestRecoveryRanksByLastEpochThenLength(t *testing.T) {
	assert.Positive(t, kafka.LogEnd{LastEpoch: 3, Offset: 10}.Compare(kafka.LogEnd{LastEpoch: 2, Offset: 500}))
	assert.Negative(t, kafka.LogEnd{LastEpoch: 2, Offset: 10}.Compare(kafka.LogEnd{LastEpoch: 2, Offset: 11}))
	assert.Zero(t, kafka.LogEnd{LastEpoch: 2, Offset: 10}.Compare(kafka.LogEnd{LastEpoch: 2, Offset: 10}))
	assert.Positive(t, kafka.LogEnd{LastEpoch: 0, Offset: 0}.Compare(kafka.LogEnd{LastEpoch: -1, Offset: 0}), "a record beats an empty log")

	h, p, _ := lastISRMemberDies(t, recoveryConfig(RecoveryAggressive))
	require.NoError(t, h.answer(p, 2, 3, 10))
	require.NoError(t, h.answer(p, 3, 2, 500))
	assert.Equal(t, int32(2), h.state(p).Leader, "the later epoch")

	h, p, _ = lastISRMemberDies(t, recoveryConfig(RecoveryAggressive))
	require.NoError(t, h.answer(p, 3, 0, 70))
	require.NoError(t, h.answer(p, 2, 0, 70))
	assert.Equal(t, int32(2), h.state(p).Leader, "a tie: the first in assignment order")

	// Broker 2 comes back having lost t-0's records, yet holds more than 3.
	h, p, _ = lastISRMemberDies(t, recoveryConfig(RecoveryAggressive))
	h.register(2, Registration{Lost: []kafka.TopicPartition{p}})
	asks := drain(h.c).Asks
	assert.Equal(t, []int32{2}, askedOf(asks), "its new process is asked; 3 was")
	assert.ErrorIs(t, h.c.ReplicaLogInfo(kafka.ReplicaLogInfo{TopicPartition: p, BrokerID: 2, Incarnation: h.inc[2] - 1,
		PartitionEpoch: h.state(p).PartitionEpoch, LogEnd: kafka.LogEnd{Offset: 900}}, h.now), ErrNotAsked, "its old process's answer")
	require.NoError(t, h.answer(p, 3, 0, 40))
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader)
	require.NoError(t, h.answer(p, 2, 0, 60))
	assert.Equal(t, int32(2), h.state(p).Leader, "the longer, though it lost data at its start")
	assert.False(t, h.c.LostData(2, p), "its log is the partition's from now on")
}

// Off by default: the partition stays offline as before, nothing is
// asked, and unclean leader election decides as it did. On, recovery
// replaces unclean leader election, the controller's and the topics'.
// Reference: KIP-966 (unclean.recovery.strategy replaces
// unclean.leader.election.enable when recovery is enabled).
func TestRecoveryIsOffByDefaultAndReplacesUncleanElection(t *testing.T) {
	h, p, asks := lastISRMemberDies(t, Config{})
	assert.Empty(t, asks)
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader)
	_, _, inFlight := h.c.Recovery(p)
	assert.False(t, inFlight)
	assert.ErrorIs(t, h.answer(p, 2, 0, 100), ErrNotAsked)
	assert.NotContains(t, h.c.Describe(), "recovery")

	h = newHarness(t, Config{UncleanLeaderElection: true}, 1, 2, 3)
	h.createTopic("t", 1, 3)
	require.NoError(t, h.alter(p, 1).Err)
	h.kill(1)
	assert.Equal(t, int32(2), h.state(p).Leader, "unclean election: the first live replica, at once")

	cfg := recoveryConfig(RecoveryAggressive)
	cfg.UncleanLeaderElection = true
	h, p, asks = lastISRMemberDies(t, cfg)
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "no unclean election while recovery asks")
	assert.Equal(t, []int32{2, 3}, askedOf(asks))
	assert.Contains(t, h.c.Describe(), "unclean-recovery=aggressive")
	assert.Contains(t, h.c.Describe(), "recovery asked=[2 3] answered=[]")

	yes := true
	h = newHarness(t, recoveryConfig(RecoveryBalanced), 1, 2, 3)
	require.NoError(t, createTopic(h.c, "u", 1, 3, kafka.TopicConfig{UncleanLeaderElection: &yes}, h.now))
	require.NoError(t, h.alter(tp("u", 0), 1).Err)
	h.kill(1)
	assert.Equal(t, kafka.NoLeader, h.state(tp("u", 0)).Leader, "nor for a topic that enables it")
}

// Answers to a question the recovery in flight did not ask are ignored:
// from another process of the broker, for another partition epoch, from
// a replica not asked. A replica that dies while the recovery waits is
// dropped with its answer: the recovery decides without it.
// Reference: KIP-966 (an answer whose broker epoch does not match the
// registration is rejected).
func TestRecoveryIgnoresStaleAnswers(t *testing.T) {
	h, p, _ := lastISRMemberDies(t, recoveryConfig(RecoveryAggressive))
	epoch := h.state(p).PartitionEpoch
	stale := []kafka.ReplicaLogInfo{
		{TopicPartition: p, BrokerID: 2, Incarnation: h.inc[2] + 1, PartitionEpoch: epoch},
		{TopicPartition: p, BrokerID: 2, Incarnation: h.inc[2], PartitionEpoch: epoch - 1},
		{TopicPartition: p, BrokerID: 1, Incarnation: h.inc[1], PartitionEpoch: epoch},
		{TopicPartition: tp("t", 7), BrokerID: 2, Incarnation: h.inc[2], PartitionEpoch: epoch},
	}
	for i, ans := range stale {
		ans.LogEnd = kafka.LogEnd{Offset: 999}
		assert.ErrorIs(t, h.c.ReplicaLogInfo(ans, h.now), ErrNotAsked, "answer %d", i)
		_, answered, _ := h.c.Recovery(p)
		assert.Empty(t, answered, "answer %d", i)
	}

	require.NoError(t, h.answer(p, 3, 0, 500))
	h.kill(3)
	asked, answered, ok := h.c.Recovery(p)
	require.True(t, ok)
	assert.Equal(t, []int32{2}, asked, "3 died: dropped, with its answer")
	assert.Empty(t, answered)
	require.NoError(t, h.answer(p, 2, 0, 100))
	assert.Equal(t, int32(2), h.state(p).Leader, "the one live replica")
}

// The wait for live replicas is bounded: once the timeout has passed
// since the last question, the recovery decides on the answers it has,
// and with none asks again (a question or an answer may have been lost).
// Reference: KIP-966, unclean.recovery.timeout.ms.
func TestRecoveryTimesOut(t *testing.T) {
	h, p, _ := lastISRMemberDies(t, recoveryConfig(RecoveryAggressive))
	h.now += recoveryTimeout - 2
	h.tick()
	assert.Empty(t, drain(h.c).Asks, "a millisecond before the timeout")
	h.tick()
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader)
	asks := drain(h.c).Asks
	assert.Equal(t, []int32{2, 3}, askedOf(asks), "no answer when the time is up: both asked again")
	require.NoError(t, h.answer(p, 3, 0, 40))
	h.now += recoveryTimeout - 2
	h.tick()
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "the timeout counts from the last question")
	h.tick()
	assert.Equal(t, int32(3), h.state(p).Leader, "2 stayed silent: 3's answer decides")
	assert.Empty(t, drain(h.c).Asks)
}

// Balanced waits for every last-known member (the ISR's last member, the
// eligible leader replicas), dead or alive, however long: only one of
// them is known to have held every committed record. Aggressive does not.
// Reference: KIP-966 (Balanced: unclean recovery once all of
// LastKnownELR are unfenced; Aggressive: even with fenced ELR members).
func TestBalancedRecoveryWaitsForTheLastKnownMembers(t *testing.T) {
	h, p, asks := lastISRMemberDies(t, recoveryConfig(RecoveryBalanced))
	assert.Equal(t, []int32{2, 3}, askedOf(asks), "the live replicas are asked at once")
	require.NoError(t, h.answer(p, 2, 0, 100))
	require.NoError(t, h.answer(p, 3, 0, 250))
	h.now += 3 * recoveryTimeout
	h.tick()
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "1, the ISR's last member, is down")
	assert.Empty(t, drain(h.c).Asks, "those that answered are not asked again")

	// 1 comes back having lost the data: it cannot lead, but it answers.
	h.register(1, Registration{Lost: []kafka.TopicPartition{p}})
	assert.Equal(t, []int32{1}, askedOf(drain(h.c).Asks))
	require.NoError(t, h.answer(p, 1, 0, 180))
	assert.Equal(t, int32(3), h.state(p).Leader)

	// 1 comes back with its data: a clean election; the recovery ends.
	h, p, _ = lastISRMemberDies(t, recoveryConfig(RecoveryBalanced))
	require.NoError(t, h.answer(p, 2, 0, 100))
	require.NoError(t, h.answer(p, 3, 0, 250))
	h.revive(1)
	assert.Equal(t, int32(1), h.state(p).Leader)
	assert.Contains(t, kinds(drain(h.c)), ElectionClean)
	_, _, inFlight := h.c.Recovery(p)
	assert.False(t, inFlight)
	assert.ErrorIs(t, h.answer(p, 2, 0, 100), ErrNotAsked)

	// With an eligible leader replica down too, balanced waits for it and
	// aggressive does not. RF 3, min ISR 2: 2 leaves the ISR [1 2] and is
	// eligible, then both die; 3 lives.
	for _, s := range []RecoveryStrategy{RecoveryBalanced, RecoveryAggressive} {
		cfg := recoveryConfig(s)
		cfg.EligibleMinISR = 2
		h = newHarness(t, cfg, 1, 2, 3)
		h.createTopic("t", 1, 3)
		require.NoError(t, h.alter(p, 1, 2).Err)
		require.NoError(t, h.alter(p, 1).Err)
		require.Equal(t, []int32{2}, h.c.ELR(p))
		h.kill(1, 2)
		require.NoError(t, h.answer(p, 3, 0, 10))
		if s == RecoveryBalanced {
			assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "balanced waits for 1 and 2")
			h.revive(2)
			assert.Equal(t, int32(2), h.state(p).Leader, "the eligible replica leads cleanly")
			assert.Contains(t, kinds(drain(h.c)), ElectionEligible)
		} else {
			assert.Equal(t, int32(3), h.state(p).Leader, "aggressive: the live replicas' answers decide")
			assert.Nil(t, h.c.ELR(p), "the new leader's log is the truth: no eligible replica left")
		}
	}
}

// A live eligible leader replica leads without a recovery: recovery is for
// partitions no ISR member or eligible replica can lead.
// Reference: KIP-966 (election order: ISR, ELR, then unclean recovery).
func TestRecoveryOnlyWhenNoEligibleReplicaCanLead(t *testing.T) {
	cfg := recoveryConfig(RecoveryAggressive)
	cfg.EligibleMinISR = 2
	h := newHarness(t, cfg, 1, 2, 3)
	h.createTopic("t", 1, 3)
	p := tp("t", 0)
	require.NoError(t, h.alter(p, 1).Err)
	drain(h.c)
	h.kill(1)
	assert.Equal(t, int32(2), h.state(p).Leader)
	rd := drain(h.c)
	assert.Contains(t, kinds(rd), ElectionEligible)
	assert.Empty(t, rd.Asks)
}

// A restored controller asks again: the recoveries in flight are not in
// its snapshot, as KIP-966's controller starts them anew after a failover.
func TestRestoreAsksAgain(t *testing.T) {
	h, p, _ := lastISRMemberDies(t, recoveryConfig(RecoveryAggressive))
	require.NoError(t, h.answer(p, 2, 0, 100))
	r, err := Restore(h.c.cfg, h.c.Snapshot(), h.now)
	require.NoError(t, err)
	asked, answered, ok := r.Recovery(p)
	require.True(t, ok)
	assert.Equal(t, []int32{2, 3}, asked)
	assert.Empty(t, answered)
	assert.Equal(t, []int32{2, 3}, askedOf(drain(r).Asks))
}

// CheckInvariants fires on an offline partition with a live replica and no
// recovery, and on a recovery of a partition that has a leader; it is
// quiet on the states the rules make.
func TestInvariantsKnowRecoveries(t *testing.T) {
	h, p, _ := lastISRMemberDies(t, recoveryConfig(RecoveryAggressive))
	require.NoError(t, h.c.CheckInvariants())
	r := h.c.recoveries[p]
	delete(h.c.recoveries, p)
	require.ErrorContains(t, h.c.CheckInvariants(), "no unclean recovery in flight")
	h.c.recoveries[p] = r
	r.answers[1] = kafka.LogEnd{}
	require.ErrorContains(t, h.c.CheckInvariants(), "did not ask")
	delete(r.answers, 1)
	require.NoError(t, h.answer(p, 2, 0, 1))
	require.NoError(t, h.answer(p, 3, 0, 2))
	h.c.recoveries[p] = r
	require.ErrorContains(t, h.c.CheckInvariants(), "has leader 3")
}

// The strategy is a named setting, validated with its timeout.
func TestRecoveryConfig(t *testing.T) {
	var s RecoveryStrategy
	require.NoError(t, s.UnmarshalText([]byte("balanced")))
	assert.Equal(t, RecoveryBalanced, s)
	b, err := RecoveryAggressive.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "aggressive", string(b))
	assert.Error(t, s.UnmarshalText([]byte("proactive")))
	assert.Equal(t, []string{"none", "balanced", "aggressive"}, s.Values())

	assert.NoError(t, DefaultConfig().Validate())
	assert.Equal(t, RecoveryNone, DefaultConfig().UncleanRecovery, "off by default")
	cfg := Config{SessionTimeoutMs: 1, UncleanRecovery: RecoveryBalanced}
	assert.ErrorIs(t, cfg.Validate(), ErrInvalidConfig, "no timeout")
	cfg.UncleanRecoveryTimeoutMs = 1
	assert.NoError(t, cfg.Validate())
	cfg.UncleanRecovery = 9
	assert.ErrorIs(t, cfg.Validate(), ErrInvalidConfig)
}
