package group

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/groupmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// harness drives one Coordinator, applying every Ready: answers are kept
// by request id, appends queue until the test decides their fate, and
// invariants are checked after every step.
type harness struct {
	t       *testing.T
	c       *Coordinator
	now     int64
	nextID  uint64
	answers map[uint64]any
	appends []Append // not yet reported done, in order
	log     []Record // committed records, in order: the offsets partition
	events  []Event
	// order lists answered request ids in answer order; nextAnswered is
	// len(order) before the last step.
	order        []uint64
	nextAnswered int
	trace        []Ready
}

const (
	testSession   = 10_000
	testRebalance = 30_000
)

func testConfig() Config { return Config{MinSessionTimeoutMs: 1000, MaxSessionTimeoutMs: 60_000} }

func newHarness(t *testing.T) *harness {
	t.Helper()
	c, err := New(testConfig())
	require.NoError(t, err)
	h := &harness{t: t, c: c, answers: make(map[uint64]any)}
	require.NoError(t, c.Load(1, nil, 0))
	return h
}

// step collects the coordinator's Ready and checks its invariants.
func (h *harness) step() {
	h.t.Helper()
	rd := drain(h.c)
	h.trace = append(h.trace, rd)
	h.nextAnswered = len(h.order)
	for _, a := range rd.Answers {
		h.order = append(h.order, a.ID)
		_, dup := h.answers[a.ID]
		require.False(h.t, dup, "request %d answered twice", a.ID)
		h.answers[a.ID] = a.Msg
	}
	for _, a := range rd.Appends {
		for _, r := range a.Records {
			_, err := Decode(r)
			require.NoError(h.t, err, "the coordinator appended a record Load would refuse")
		}
	}
	h.appends = append(h.appends, rd.Appends...)
	h.events = append(h.events, rd.Events...)
	require.NoError(h.t, h.c.CheckInvariants())
	require.False(h.t, h.c.HasReady())
}

// answeredSince returns the ids answered since order[first:].
func (h *harness) answeredSince(first int) []uint64 { return h.order[first:] }

func (h *harness) id() uint64 { h.nextID++; return h.nextID }

// finishAppends reports every queued append committed (err nil) or failed.
func (h *harness) finishAppends(err error) {
	h.t.Helper()
	for len(h.appends) > 0 {
		a := h.appends[0]
		h.appends = h.appends[1:]
		if err == nil {
			h.log = append(h.log, a.Records...)
		}
		h.c.AppendDone(a.ID, err, h.now)
		h.step()
	}
}

func (h *harness) tick(ms int64) {
	h.t.Helper()
	h.now += ms
	h.c.Tick(h.now)
	h.step()
}

func joinReq(group, member string, topics ...string) JoinRequest {
	return JoinRequest{Group: group, MemberID: member, ClientID: "c", SessionTimeoutMs: testSession,
		RebalanceTimeoutMs: testRebalance, ProtocolType: "consumer",
		Protocols: []Protocol{{Name: "range", Metadata: EncodeConsumerSubscription(topics)}}}
}

// join sends a JoinGroup and returns its request id.
func (h *harness) join(req JoinRequest) uint64 {
	h.t.Helper()
	id := h.id()
	h.c.JoinGroup(id, req, h.now)
	h.step()
	return id
}

// newMember gets a member id (KIP-394) and joins with it; it returns the
// member id and the request id of the second JoinGroup.
func (h *harness) newMember(group string, topics ...string) (string, uint64) {
	h.t.Helper()
	first := h.join(joinReq(group, "", topics...))
	r := h.answer(first).(JoinResponse)
	require.Equal(h.t, kafka.ErrMemberIDRequired, r.Err)
	require.NotEmpty(h.t, r.MemberID)
	return r.MemberID, h.join(joinReq(group, r.MemberID, topics...))
}

// memberID asks for a member id (KIP-394) without joining with it yet.
func (h *harness) memberID(group string) string {
	h.t.Helper()
	r := h.joinResp(h.join(joinReq(group, "", "t")))
	require.Equal(h.t, kafka.ErrMemberIDRequired, r.Err)
	return r.MemberID
}

// answer returns the answer to request id, failing if there is none.
func (h *harness) answer(id uint64) any {
	h.t.Helper()
	a, ok := h.answers[id]
	require.True(h.t, ok, "request %d not answered", id)
	return a
}

func (h *harness) unanswered(id uint64) {
	h.t.Helper()
	_, ok := h.answers[id]
	require.False(h.t, ok, "request %d answered: %+v", id, h.answers[id])
}

func (h *harness) joinResp(id uint64) JoinResponse { h.t.Helper(); return h.answer(id).(JoinResponse) }

func (h *harness) sync(group, member string, gen int32, asg map[string][]byte) uint64 {
	h.t.Helper()
	id := h.id()
	h.c.SyncGroup(id, SyncRequest{Group: group, MemberID: member, Generation: gen, Assignments: asg}, h.now)
	h.step()
	return id
}

func (h *harness) heartbeat(group, member string, gen int32) error {
	h.t.Helper()
	id := h.id()
	h.c.Heartbeat(id, HeartbeatRequest{Group: group, MemberID: member, Generation: gen}, h.now)
	h.step()
	return h.answer(id).(HeartbeatResponse).Err
}

func (h *harness) commit(group, member string, gen int32, offsets ...OffsetToCommit) uint64 {
	h.t.Helper()
	id := h.id()
	h.c.OffsetCommit(id, CommitRequest{Group: group, MemberID: member, Generation: gen, Offsets: offsets}, h.now)
	h.step()
	return id
}

// commitErr returns the single error of a commit answer.
func (h *harness) commitErr(id uint64) error {
	h.t.Helper()
	r := h.answer(id).(CommitResponse)
	require.NotEmpty(h.t, r.Partitions)
	for _, p := range r.Partitions {
		require.Equal(h.t, r.Partitions[0].Err, p.Err)
	}
	return r.Partitions[0].Err
}

func (h *harness) fetch(group string, tps ...kafka.TopicPartition) FetchOffsetsResponse {
	h.t.Helper()
	id := h.id()
	h.c.OffsetFetch(id, FetchOffsetsRequest{Group: group, Partitions: tps}, h.now)
	h.step()
	return h.answer(id).(FetchOffsetsResponse)
}

func (h *harness) leave(group string, members ...string) LeaveResponse {
	h.t.Helper()
	id := h.id()
	h.c.LeaveGroup(id, LeaveRequest{Group: group, Members: members}, h.now)
	h.step()
	return h.answer(id).(LeaveResponse)
}

func off(topic string, p int32, o int64) OffsetToCommit {
	return OffsetToCommit{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p}, Offset: o}
}

// rangeAssign computes the leader's assignment from a JoinResponse, as a
// consumer would: Range over the members' subscriptions.
func rangeAssign(t *testing.T, r JoinResponse, partitions map[string]int32) map[string][]byte {
	t.Helper()
	var subs []groupmsg.Subscription
	for _, m := range r.Members {
		topics, err := DecodeConsumerSubscription(m.Metadata)
		require.NoError(t, err)
		subs = append(subs, groupmsg.Subscription{MemberID: m.MemberID, Topics: topics})
	}
	out := make(map[string][]byte)
	for id, a := range groupmsg.Range(subs, partitions) {
		out[id] = EncodeConsumerAssignment(a)
	}
	return out
}

// stableGroup brings members (by count) into a Stable group on topic "t"
// of 4 partitions and returns their ids, leader first, and the generation.
func (h *harness) stableGroup(group string, n int) ([]string, int32) {
	h.t.Helper()
	ids := make([]string, n)
	joins := make([]uint64, n)
	for i := range n {
		ids[i] = h.memberID(group)
	}
	for i := range n {
		joins[i] = h.join(joinReq(group, ids[i], "t"))
	}
	for _, j := range joins {
		require.Equal(h.t, nil, h.joinResp(j).Err)
	}
	r := h.joinResp(joins[0])
	require.Equal(h.t, ids[0], r.LeaderID)
	syncs := make([]uint64, n)
	syncs[0] = h.sync(group, ids[0], r.Generation, rangeAssign(h.t, r, map[string]int32{"t": 4}))
	for i := 1; i < n; i++ {
		syncs[i] = h.sync(group, ids[i], r.Generation, nil)
	}
	h.finishAppends(nil)
	for _, s := range syncs {
		require.Equal(h.t, nil, h.answer(s).(SyncResponse).Err)
	}
	return ids, r.Generation
}
