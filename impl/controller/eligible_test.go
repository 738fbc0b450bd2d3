package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// The schedule, on the controller: RF 3, min ISR 2; the followers
// die one after the other, so the ISR shrinks to the leader; the second
// one out joins the ELR (the HW is frozen from then on), the first does
// not (the HW moved on without it). The last ISR member dies and comes
// back having lost the data: the ELR member leads, not it, and not the
// replica that left first.
// Reference: spec/SEMANTICS.md, Durability (Lost data); KIP-966.
func TestEligibleReplicaLeadsWhenTheLastISRMemberLostData(t *testing.T) {
	h := newHarness(t, Config{EligibleMinISR: 2}, 1, 2, 3)
	h.createTopic("t", 1, 3)
	p := tp("t", 0)
	require.Equal(t, int32(1), h.state(p).Leader)

	h.kill(3)
	assert.Nil(t, h.c.ELR(p), "ISR [1 2] is at min ISR: the HW moves on without 3")
	h.kill(2)
	assert.Equal(t, []int32{2}, h.c.ELR(p), "ISR [1] is below min ISR: 2 holds every committed record")
	h.kill(1)
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader)
	assert.Equal(t, []int32{1}, h.state(p).ISR, "the last member stays in the ISR")

	// All three come back; broker 1's log was damaged.
	h.register(3, Registration{Synced: true})
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "3 is neither in the ISR nor eligible")
	h.inc[1]++
	require.NoError(t, h.c.Register(1, h.inc[1], h.now, Registration{Synced: true, Lost: []kafka.TopicPartition{p}}))
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "1 lost the data")
	drain(h.c)
	h.register(2, Registration{Synced: true})
	s := h.state(p)
	assert.Equal(t, int32(2), s.Leader, "the eligible replica leads")
	assert.Equal(t, []int32{2}, s.ISR)
	assert.Contains(t, kinds(drain(h.c)), ElectionEligible)
	assert.Nil(t, h.c.ELR(p), "1, out of the ISR now, lost the data: not eligible")
	h.check()

	// 3 catches up: the ISR is back at min ISR.
	require.NoError(t, h.alter(p, 2, 3).Err)
	assert.Nil(t, h.c.ELR(p))
	h.check()
}

// Rule 3 and 4: the ELR empties once the ISR is back at min ISR; a member
// that restarts without having synced what it reported leaves it, one
// that had stays; unclean elections and configs without ELR keep none.
func TestEligibleReplicasComeAndGo(t *testing.T) {
	h := newHarness(t, Config{EligibleMinISR: 2}, 1, 2, 3)
	h.createTopic("t", 1, 3)
	p := tp("t", 0)
	require.NoError(t, h.alter(p, 1).Err)
	assert.Equal(t, []int32{2, 3}, h.c.ELR(p), "both leave as the ISR drops below min ISR")
	h.check()

	h.register(2, Registration{Synced: true})
	assert.Equal(t, []int32{2, 3}, h.c.ELR(p), "2 synced every append: it lost nothing it reported")
	h.register(3, Registration{})
	assert.Equal(t, []int32{2}, h.c.ELR(p), "3 may have lost unsynced records it reported")
	drain(h.c)
	h.check()

	require.NoError(t, h.alter(p, 1, 3).Err)
	assert.Nil(t, h.c.ELR(p), "ISR [1 3] is at min ISR: the HW moves on without 2")
	h.check()

	// The snapshot keeps the ELR.
	require.NoError(t, h.alter(p, 1).Err)
	snap := h.c.Snapshot()
	require.Len(t, snap.ELR, 1)
	r, err := Restore(h.c.cfg, snap, h.now)
	require.NoError(t, err)
	assert.Equal(t, h.c.ELR(p), r.ELR(p))

	// An unclean election empties it: the new leader's log is the truth.
	hu := newHarness(t, Config{EligibleMinISR: 3, UncleanLeaderElection: true}, 1, 2, 3)
	hu.createTopic("t", 1, 3)
	hu.kill(3)
	assert.Equal(t, []int32{3}, hu.c.ELR(p))
	hu.kill(1, 2)
	hu.inc[3]++
	require.NoError(t, hu.c.Register(3, hu.inc[3], hu.now, Registration{}))
	assert.Equal(t, int32(3), hu.state(p).Leader, "unclean")
	assert.Nil(t, hu.c.ELR(p))
	hu.check()

	// Without EligibleMinISR there is none.
	h0 := newHarness(t, Config{}, 1, 2, 3)
	h0.createTopic("t", 1, 3)
	require.NoError(t, h0.alter(p, 1).Err)
	assert.Nil(t, h0.c.ELR(p))
}

// CheckInvariants fires on an ELR that breaks the rules, and is quiet on
// one that keeps them.
func TestInvariantsKnowELR(t *testing.T) {
	h := newHarness(t, Config{EligibleMinISR: 2}, 1, 2, 3)
	h.createTopic("t", 1, 3)
	p := tp("t", 0)
	h.c.elr[p] = []int32{2}
	require.ErrorContains(t, h.c.CheckInvariants(), "beside isr", "the ISR is at min ISR")
	delete(h.c.elr, p)
	require.NoError(t, h.alter(p, 1).Err)
	require.NoError(t, h.c.CheckInvariants())
	h.c.elr[p] = []int32{1, 2}
	require.ErrorContains(t, h.c.CheckInvariants(), "in isr")
	h.c.elr[p] = []int32{2, 3}
	h.c.brokers[3].lost = lostSet([]kafka.TopicPartition{p})
	require.ErrorContains(t, h.c.CheckInvariants(), "lost")
	h.c.brokers[3].lost = nil
	require.NoError(t, h.c.CheckInvariants())
	h.kill(1)
	require.Equal(t, int32(2), h.state(p).Leader, "elected from the ELR")
	require.NoError(t, h.c.CheckInvariants())
	h.c.partitions[p].Leader = kafka.NoLeader
	h.c.partitions[p].ISR = []int32{1}
	h.c.elr[p] = []int32{2}
	require.ErrorContains(t, h.c.CheckInvariants(), "offline although eligible leader replica 2 is alive")
}

// A topic's own settings are kept, published, snapshotted and restored;
// a negative size is refused.
func TestTopicConfigs(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2, 3)
	require.NoError(t, createTopic(h.c, "big", 1, 3, kafka.TopicConfig{MaxMessageBytes: 5 << 20}, h.now))
	h.createTopic("plain", 1, 3)
	require.ErrorIs(t, createTopic(h.c, "bad", 1, 3, kafka.TopicConfig{MaxMessageBytes: -1}, h.now), kafka.ErrInvalidConfig)
	want := map[string]kafka.TopicConfig{"big": {MaxMessageBytes: 5 << 20}}
	assert.Equal(t, want, h.c.TopicConfigs(), "only topics with settings of their own")
	r, err := Restore(h.c.cfg, h.c.Snapshot(), h.now)
	require.NoError(t, err)
	assert.Equal(t, want, r.TopicConfigs())
	snap := h.c.Snapshot()
	snap.TopicConfigs["nope"] = kafka.TopicConfig{MaxMessageBytes: 1}
	_, err = Restore(h.c.cfg, snap, h.now)
	require.ErrorContains(t, err, "config of topic nope")
}

// Rule 5: the last ISR member restarts without having synced what it
// reported (a power loss may have taken committed records) while the
// eligible replica is down: it waits for that one, which holds them all,
// and leads only where the ELR is empty. Synced, it leads at once.
func TestUncleanLastISRMemberWaitsForAnEligibleReplica(t *testing.T) {
	for _, synced := range []bool{false, true} {
		t.Run(fmt.Sprintf("synced=%t", synced), func(t *testing.T) {
			h := newHarness(t, Config{EligibleMinISR: 2}, 1, 2)
			h.createTopic("t", 1, 2)
			p := tp("t", 0)
			require.NoError(t, h.alter(p, 1).Err)
			require.Equal(t, []int32{2}, h.c.ELR(p))
			h.kill(2)
			h.register(1, Registration{Synced: synced})
			h.check()
			if synced {
				assert.Equal(t, int32(1), h.state(p).Leader)
				return
			}
			assert.Equal(t, kafka.NoLeader, h.state(p).Leader, "1 may have lost committed records; 2 holds them")
			h.revive(2)
			assert.Equal(t, int32(2), h.state(p).Leader)
			assert.Nil(t, h.c.ELR(p), "1 restarted uncleanly: it joins no ELR")
			h.check()
			require.NoError(t, h.alter(p, 1, 2).Err)
			assert.False(t, h.c.suspect(1, p), "back in the ISR, it holds the HW again")
		})
	}

	// With an empty ELR it leads, as before KIP-966.
	h := newHarness(t, Config{EligibleMinISR: 2}, 1, 2)
	h.createTopic("t", 1, 2)
	p := tp("t", 0)
	h.kill(2) // 2 leaves at min ISR... of 2 replicas: {1} is below it
	require.Equal(t, []int32{2}, h.c.ELR(p))
	h.register(2, Registration{})
	require.Nil(t, h.c.ELR(p), "2 restarted uncleanly")
	h.kill(2)
	h.register(1, Registration{})
	assert.Equal(t, int32(1), h.state(p).Leader)
	h.check()
}

// A topic's own min.insync.replicas and unclean.leader.election.enable
// replace the brokers' for it. With the brokers' min ISR 2, a topic of
// min ISR 1 keeps no eligible replicas (its HW moves with one member, so
// a replica that left may lack committed records) and waits for its last
// ISR member; a topic that allows unclean elections, on a controller
// that does not, elects the live out-of-sync replica.
func TestTopicConfigsReplaceTheBrokers(t *testing.T) {
	h := newHarness(t, Config{EligibleMinISR: 2}, 1, 2)
	yes := true
	require.NoError(t, createTopic(h.c, "own", 1, 2, kafka.TopicConfig{MinInsyncReplicas: 1}, h.now))
	require.NoError(t, createTopic(h.c, "loose", 1, 2, kafka.TopicConfig{MinInsyncReplicas: 1, UncleanLeaderElection: &yes}, h.now))
	h.createTopic("shared", 1, 2)
	drain(h.c)
	own, loose, shared := tp("own", 0), tp("loose", 0), tp("shared", 0)
	for _, p := range []kafka.TopicPartition{own, loose, shared} {
		require.Equal(t, int32(1), h.state(p).Leader, p)
	}

	h.kill(2)
	assert.Nil(t, h.c.ELR(own), "ISR [1] is at the topic's min ISR 1: no ELR")
	assert.Equal(t, []int32{2}, h.c.ELR(shared), "below the brokers' min ISR 2")
	h.kill(1)
	h.register(2, Registration{Synced: true})
	drain(h.c)
	assert.Equal(t, kafka.NoLeader, h.state(own).Leader, "2 left the ISR and is not eligible: the topic waits for 1")
	assert.Equal(t, int32(2), h.state(shared).Leader, "2 is eligible")
	assert.Equal(t, int32(2), h.state(loose).Leader, "the topic allows unclean elections")
	h.check()
}
