package group

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// TestNotLoaded checks that requests before Load get
// COORDINATOR_LOAD_IN_PROGRESS, so that clients retry, and after Unload
// NOT_COORDINATOR, so that they look the coordinator up again.
// Reference: Kafka GroupCoordinator (isCoordinatorLoadInProgress).
func TestNotLoaded(t *testing.T) {
	c, err := New(testConfig())
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		do   func()
		want error
	}{
		{"load in progress", func() {}, kafka.ErrCoordinatorLoadInProgress},
		{"unloaded", c.Unload, kafka.ErrNotCoordinator},
	} {
		tc.do()
		c.JoinGroup(1, joinReq("g", "", "t"), 0)
		c.SyncGroup(2, SyncRequest{Group: "g"}, 0)
		c.Heartbeat(3, HeartbeatRequest{Group: "g"}, 0)
		c.LeaveGroup(4, LeaveRequest{Group: "g", Members: []string{"m"}}, 0)
		c.OffsetCommit(5, CommitRequest{Group: "g", Generation: -1, Offsets: []OffsetToCommit{off("t", 0, 1)}}, 0)
		c.OffsetFetch(6, FetchOffsetsRequest{Group: "g"}, 0)
		rd := drain(c)
		require.Len(t, rd.Answers, 6, tc.name)
		assert.Equal(t, tc.want, rd.Answers[0].Msg.(JoinResponse).Err, tc.name)
		assert.Equal(t, tc.want, rd.Answers[1].Msg.(SyncResponse).Err, tc.name)
		assert.Equal(t, tc.want, rd.Answers[2].Msg.(HeartbeatResponse).Err, tc.name)
		assert.Equal(t, tc.want, rd.Answers[3].Msg.(LeaveResponse).Err, tc.name)
		assert.Equal(t, tc.want, rd.Answers[4].Msg.(CommitResponse).Partitions[0].Err, tc.name)
		assert.Equal(t, tc.want, rd.Answers[5].Msg.(FetchOffsetsResponse).Err, tc.name)
		assert.Empty(t, rd.Appends)
	}
}

// TestFailover checks that a coordinator loading the offsets partition on
// a new leader keeps each group's generation, members and assignments and
// the committed offsets, so that a member of an older generation is still
// refused with ILLEGAL_GENERATION, and that what was never committed to
// the partition (an offset whose append was still in flight) is not seen.
// Reference: spec/SEMANTICS.md, Consumer and groups; Kafka's coordinator
// failover (GroupMetadataManager.loadGroupsAndOffsets).
func TestFailover(t *testing.T) {
	h := newHarness(t)
	ids, _ := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	ci := h.commit("g", a, 1, off("t", 0, 10))
	h.finishAppends(nil)
	require.Equal(t, nil, h.commitErr(ci))
	// Generation 2 without b; b is stale.
	h.leave("g", b)
	j := h.join(joinReq("g", a, "t"))
	h.sync("g", a, 2, rangeAssign(t, h.joinResp(j), map[string]int32{"t": 4}))
	h.finishAppends(nil)
	inFlight := h.commit("g", a, 2, off("t", 1, 99))
	h.memberID("g")                             // an id outstanding holds the next join open
	parked := h.join(joinReq("g", a, "t", "u")) // a rebalance the old leader never finished

	h.c.Unload()
	h.step()
	assert.Equal(t, kafka.ErrNotCoordinator, h.commitErr(inFlight))
	assert.Equal(t, kafka.ErrNotCoordinator, h.joinResp(parked).Err)
	h.c.AppendDone(h.appends[0].ID, nil, h.now) // too late: ignored
	h.appends = nil
	h.step()

	// The new leader of the offsets partition.
	c2, err := New(testConfig())
	require.NoError(t, err)
	h.c = c2
	h.now += 5000
	require.NoError(t, c2.Load(2, h.log, h.now))
	h.step()
	assert.Contains(t, c2.Describe(), "group g state=Stable generation=2 protocol-type=consumer protocol=range leader="+a)
	assert.Equal(t, []FetchedOffset{{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Offset: 10}}, h.fetch("g").Partitions)
	assert.Equal(t, kafka.ErrIllegalGeneration, h.commitErr(h.commit("g", a, 1, off("t", 0, 1))))
	assert.Equal(t, kafka.ErrUnknownMemberID, h.commitErr(h.commit("g", b, 1, off("t", 0, 1))))
	assert.Equal(t, nil, h.heartbeat("g", a, 2))
	s := h.sync("g", a, 2, nil)
	got, err := DecodeConsumerAssignment(h.answer(s).(SyncResponse).Assignment)
	require.NoError(t, err)
	assert.Equal(t, map[string][]int32{"t": {0, 1, 2, 3}}, got, "assignment restored")

	// New member ids carry the new leader epoch, so they cannot collide.
	assert.True(t, strings.HasPrefix(h.memberID("g"), "c-2-"))

	// Restored members' sessions start at Load (a last heard at Load+0):
	// a expires, and the group goes Empty in generation 3.
	h.tick(testSession - 1)
	assert.Contains(t, c2.Describe(), "group g state=Stable generation=2")
	h.tick(1)
	assert.Contains(t, c2.Describe(), "group g state=Empty generation=3")
	requireEvent(t, h.events, MemberRemoved, a, "session-timeout")
}

// TestLoadRejectsGarbage checks that Load refuses a malformed partition
// and leaves the coordinator as it was.
func TestLoadRejectsGarbage(t *testing.T) {
	c, err := New(testConfig())
	require.NoError(t, err)
	err = c.Load(1, []Record{EncodeOffset("g", kafka.TopicPartition{Topic: "t", Partition: 0}, &OffsetValue{Offset: 1}), {Key: []byte("junk")}}, 0)
	require.ErrorIs(t, err, ErrBadRecord)
	assert.False(t, c.Loaded())
}

// TestLoadTombstones checks that tombstones delete offsets and groups.
func TestLoadTombstones(t *testing.T) {
	c, err := New(testConfig())
	require.NoError(t, err)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	require.NoError(t, c.Load(1, []Record{
		EncodeOffset("g", tp, &OffsetValue{Offset: 1}),
		EncodeGroup("g", &GroupMetadata{ProtocolType: "consumer", Generation: 4}),
		EncodeOffset("g", kafka.TopicPartition{Topic: "t", Partition: 1}, &OffsetValue{Offset: 2}),
		EncodeOffset("g", tp, nil),
		EncodeGroup("h", &GroupMetadata{ProtocolType: "consumer", Generation: 1}),
		EncodeGroup("h", nil),
	}, 0))
	assert.Equal(t, "coordinator loaded epoch=1\n"+
		"group g state=Empty generation=4 protocol-type=consumer protocol= leader=\n"+
		"offset g t-1=2 \"\"\n", c.Describe())
}

// TestDeterminism checks that the same calls yield the same Ready, bit for
// bit: nothing depends on map order, a clock or randomness.
func TestDeterminism(t *testing.T) {
	run := func() string {
		var out strings.Builder
		h := newHarness(t)
		rng := rand.New(rand.NewPCG(1, 2))
		w := newWorkload(h, rng)
		for range 300 {
			w.step()
			fmt.Fprintf(&out, "%s\n", h.c.Describe())
		}
		for _, rd := range h.trace {
			fmt.Fprintf(&out, "%+v\n", rd)
		}
		return out.String()
	}
	assert.Equal(t, run(), run())
}
