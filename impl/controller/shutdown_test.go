package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// A broker that asks to shut down leads nothing from that moment: every
// partition it led goes to the first other active ISR member in
// assignment order (an election-shutdown), it leaves every ISR, joins
// none while it stops, and once fenced its next process registers at
// once, without waiting for the old session.
// Reference: Kafka 4.1 ReplicationControlManager.handleBrokerInControlledShutdown,
// BrokerHeartbeatManager (CONTROLLED_SHUTDOWN, SHUTDOWN_NOW); KIP-841.
func TestControlledShutdownMovesLeadershipsAway(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2, 3)
	h.createTopic("t", 3, 3) // leaders 1, 2, 3
	p0, p1 := tp("t", 0), tp("t", 1)
	require.Equal(t, int32(1), h.state(p0).Leader)
	drain(h.c)

	ok, err := h.c.ControlledShutdown(1, h.inc[1], h.now)
	require.NoError(t, err)
	assert.True(t, ok, "its one leadership moved at once")
	s := h.state(p0)
	assert.Equal(t, int32(2), s.Leader, "the next ISR member in assignment order")
	assert.Equal(t, []int32{2, 3}, s.ISR)
	assert.Equal(t, []int32{2, 3}, h.state(p1).ISR, "it leaves the ISRs it does not lead too")
	rd := drain(h.c)
	assert.Equal(t, BrokerShuttingDown, rd.Events[0].Kind)
	assert.Contains(t, kinds(rd), ElectionShutdown)
	assert.True(t, h.c.IsAlive(1), "alive until fenced")
	h.check()

	res := answerTo(h.c, h.request(h.state(p1), 1, 2, 3), h.now)
	assert.ErrorIs(t, res.Err, kafka.ErrIneligibleReplica, "a broker shutting down joins no ISR (KIP-841)")

	require.NoError(t, h.c.ShutDown(1, h.inc[1], h.now))
	assert.False(t, h.c.IsAlive(1))
	assert.Equal(t, []EventKind{BrokerShutDown}, kinds(drain(h.c)))
	assert.ErrorIs(t, h.c.Heartbeat(1, h.inc[1], h.now), kafka.ErrStaleIncarnation, "the stopped process is not revived")
	ok, err = h.c.ControlledShutdown(1, h.inc[1], h.now)
	assert.True(t, ok && err == nil, "a lost answer is answered again")
	assert.False(t, h.c.IsAlive(1))

	// The next process, at once: the fenced one has no live session.
	prev := h.inc[1]
	h.inc[1]++
	require.NoError(t, h.c.Register(1, h.inc[1], h.now, Registration{PreviousIncarnation: prev}))
	assert.True(t, h.c.IsAlive(1))
	assert.False(t, h.c.suspect(1, p0), "a clean restart")
	h.check()
}

// ShutDown is refused while the broker still leads, or did not ask.
func TestShutDownOnlyAfterLeadershipsMoved(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2)
	h.createTopic("t", 1, 2)
	assert.ErrorIs(t, h.c.ShutDown(1, h.inc[1], h.now), kafka.ErrInvalidRequest, "it did not ask")
	_, err := h.c.ControlledShutdown(3, 1, h.now)
	assert.ErrorIs(t, err, kafka.ErrStaleIncarnation, "never registered: STALE_BROKER_EPOCH")
	_, err = h.c.ControlledShutdown(1, 7, h.now)
	assert.ErrorIs(t, err, kafka.ErrStaleIncarnation)
}

// The last ISR member's partitions go offline as it stops (no other
// replica may lead), and it leaves as an eligible leader replica's peers
// do; its clean restart leads them again.
// Reference: KIP-966 (a clean shutdown keeps the replica eligible).
func TestLastISRMemberStopsCleanly(t *testing.T) {
	h := newHarness(t, Config{EligibleMinISR: 2}, 1, 2)
	h.createTopic("t", 1, 2)
	p := tp("t", 0)
	require.NoError(t, h.alter(p, 1).Err) // ISR [1]; 2 is eligible
	require.Equal(t, []int32{2}, h.c.ELR(p))
	h.kill(2)

	ok, err := h.c.ControlledShutdown(1, h.inc[1], h.now)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, kafka.NoLeader, h.state(p).Leader)
	assert.Equal(t, []int32{1}, h.state(p).ISR, "the last member stays (Kafka with ELR: an empty ISR and 1 in the ELR)")
	require.NoError(t, h.c.ShutDown(1, h.inc[1], h.now))
	h.check()

	prev := h.inc[1]
	h.register(1, Registration{PreviousIncarnation: prev})
	assert.Equal(t, int32(1), h.state(p).Leader, "clean: it holds every committed record")
	h.check()
}

// KIP-966's clean-shutdown signal: a restart whose marker names the
// incarnation the controller last registered keeps its places among the
// eligible leader replicas; a missing marker, or one left by an older
// process, does not, and the replica waits for one that holds the data.
// Reference: KIP-966 (PreviousBrokerEpoch); Kafka 4.1 ClusterControlManager.registerBroker.
func TestCleanRestartKeepsEligibility(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prev  func(registered int64) int64
		clean bool
	}{
		{"marker of the registered incarnation", func(r int64) int64 { return r }, true},
		{"no marker", func(int64) int64 { return 0 }, false},
		{"marker of an older incarnation", func(r int64) int64 { return r - 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{EligibleMinISR: 2}, 1, 2, 3)
			h.createTopic("t", 1, 3)
			p := tp("t", 0)
			h.inc[2] = 2 // so that an older incarnation exists
			h.kill(2)
			h.register(2, Registration{})
			drain(h.c)
			require.NoError(t, h.alter(p, 1, 3).Err)
			_, err := h.c.ControlledShutdown(3, h.inc[3], h.now)
			require.NoError(t, err)
			require.Equal(t, []int32{3}, h.c.ELR(p), "3 left an ISR below min ISR")
			require.NoError(t, h.c.ShutDown(3, h.inc[3], h.now))

			h.register(3, Registration{PreviousIncarnation: tc.prev(h.inc[3])})
			if tc.clean {
				assert.Equal(t, []int32{3}, h.c.ELR(p))
			} else {
				assert.Nil(t, h.c.ELR(p), "it may have lost what it reported")
			}
			h.kill(1) // the last ISR member dies: 3 leads only if eligible
			if tc.clean {
				assert.Equal(t, int32(3), h.state(p).Leader)
			} else {
				assert.Equal(t, kafka.NoLeader, h.state(p).Leader)
			}
			h.check()
		})
	}
}

// A new process may not register while the previous one's session is
// live (KRaft's DUPLICATE_BROKER_REGISTRATION): a crashed broker restarted
// quickly waits for its old session to end, and the controller then sees
// a death and a return, never two processes at once.
// Reference: Kafka 4.1 ClusterControlManager.registerBroker.
func TestRegistrationWaitsForTheOldSession(t *testing.T) {
	h := newHarness(t, Config{}, 1, 2)
	h.createTopic("t", 1, 2)
	drain(h.c)
	h.now += timeout / 2
	err := h.c.RegisterBroker(1, 2, h.now)
	require.ErrorIs(t, err, kafka.ErrDuplicateBrokerRegistration)
	assert.True(t, drain(h.c).IsEmpty(), "nothing changed")
	inc, _ := h.c.Incarnation(1)
	assert.Equal(t, int64(1), inc)

	h.kill(1)
	require.NoError(t, h.c.RegisterBroker(1, 2, h.now))
	assert.Equal(t, []EventKind{BrokerDead, ElectionClean, BrokerRegistered}, kinds(drain(h.c)))
	h.check()
}
