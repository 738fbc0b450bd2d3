package group

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// workload drives a coordinator with random requests from a seeded source:
// members that behave (rejoin, sync, commit with what they were told) and
// members that are stale or confused (old ids, old generations), random
// ticks, appends that commit or fail, and failovers that reload the
// offsets partition. The harness checks CheckInvariants after every step;
// the workload checks the protocol's promises about answers.
type workload struct {
	h   *harness
	rng *rand.Rand
	// seen holds (group, member, generation) triples that clients learned,
	// current or stale.
	seen []seen
	// joins maps a JoinGroup request id to what it asked.
	joins map[uint64]JoinRequest
	// leaders remembers, per group and generation, the leader and the
	// member count the join answers named: they must agree.
	leaders map[string]string
	epoch   int32
	// subs holds each member's subscription, which it mostly keeps.
	subs map[string][]string
}

type seen struct {
	group, member string
	generation    int32
	leaderResp    *JoinResponse
}

var (
	workloadGroups = []string{"g1", "g2"}
	workloadTopics = map[string]int32{"t": 4, "u": 3}
	errFailedWrite = errors.New("append failed")
)

func newWorkload(h *harness, rng *rand.Rand) *workload {
	return &workload{h: h, rng: rng, joins: make(map[uint64]JoinRequest), leaders: make(map[string]string), epoch: 1,
		subs: make(map[string][]string)}
}

func (w *workload) pick() (seen, bool) {
	if len(w.seen) == 0 {
		return seen{}, false
	}
	// Mostly what clients learned last: well-behaved members.
	if n := min(len(w.seen), 6); w.rng.IntN(4) > 0 {
		return w.seen[len(w.seen)-1-w.rng.IntN(n)], true
	}
	return w.seen[w.rng.IntN(len(w.seen))], true
}

func (w *workload) topics() []string {
	if w.rng.IntN(2) == 0 {
		return []string{"t"}
	}
	return []string{"t", "u"}
}

// step takes one random action and then learns from the answers.
func (w *workload) step() {
	h, rng := w.h, w.rng
	switch n := rng.IntN(100); {
	case n < 6:
		g := workloadGroups[rng.IntN(len(workloadGroups))]
		id := h.id()
		req := joinReq(g, "", w.topics()...)
		w.joins[id] = req
		h.c.JoinGroup(id, req, h.now)
	case n < 30:
		if s, ok := w.pick(); ok {
			id := h.id()
			topics, ok := w.subs[s.member]
			if !ok || rng.IntN(10) == 0 {
				topics = w.topics()
				w.subs[s.member] = topics
			}
			req := joinReq(s.group, s.member, topics...)
			w.joins[id] = req
			h.c.JoinGroup(id, req, h.now)
		}
	case n < 45:
		if s, ok := w.pick(); ok {
			var asg map[string][]byte
			if s.leaderResp != nil && rng.IntN(5) > 0 {
				asg = rangeAssign(h.t, *s.leaderResp, workloadTopics)
			}
			h.c.SyncGroup(h.id(), SyncRequest{Group: s.group, MemberID: s.member, Generation: s.generation, Assignments: asg}, h.now)
		}
	case n < 55:
		if s, ok := w.pick(); ok {
			h.c.Heartbeat(h.id(), HeartbeatRequest{Group: s.group, MemberID: s.member, Generation: s.generation}, h.now)
		}
	case n < 60:
		if s, ok := w.pick(); ok {
			h.c.LeaveGroup(h.id(), LeaveRequest{Group: s.group, Members: []string{s.member}}, h.now)
		}
	case n < 72:
		if s, ok := w.pick(); ok {
			req := CommitRequest{Group: s.group, MemberID: s.member, Generation: s.generation,
				Offsets: []OffsetToCommit{off("t", int32(rng.IntN(4)), int64(rng.IntN(100)))}}
			if rng.IntN(10) == 0 {
				req.MemberID, req.Generation = "", -1
			}
			if rng.IntN(20) == 0 {
				req.Offsets = append(req.Offsets, off("t", -1, 0))
			}
			w.commit(req)
		}
	case n < 75:
		h.c.OffsetFetch(h.id(), FetchOffsetsRequest{Group: workloadGroups[rng.IntN(len(workloadGroups))]}, h.now)
	case n < 88:
		h.now += int64(rng.IntN(6000))
		h.c.Tick(h.now)
	case n < 99:
		if len(h.appends) > 0 {
			a := h.appends[0]
			h.appends = h.appends[1:]
			var err error
			if rng.IntN(10) == 0 {
				err = errFailedWrite
			} else {
				h.log = append(h.log, a.Records...)
			}
			h.c.AppendDone(a.ID, err, h.now)
		}
	default:
		if rng.IntN(3) > 0 {
			break
		}
		// Failover: appends in flight are lost, the partition is reloaded.
		h.c.Unload()
		w.learn()
		h.appends = nil
		w.epoch++
		require.NoError(h.t, h.c.Load(w.epoch, h.log, h.now))
		h.c.highGen = make(map[string]int32)
	}
	w.learn()
}

// commit sends an OffsetCommit and checks that an accepted one (appended)
// comes from the group's current generation, or is a simple commit to a
// group without members.
func (w *workload) commit(req CommitRequest) {
	h := w.h
	appends := len(h.c.ready.Appends)
	h.c.OffsetCommit(h.id(), req, h.now)
	if len(h.c.ready.Appends) == appends {
		return
	}
	g := h.c.groups[req.Group]
	if req.Generation < 0 {
		require.True(h.t, g == nil || g.state == Empty, "simple commit accepted by %s", req.Group)
		return
	}
	require.NotNil(h.t, g)
	require.Equal(h.t, g.generation, req.Generation, "stale-generation commit accepted")
	require.NotNil(h.t, g.members[req.MemberID], "commit from a non-member accepted")
	require.NotEqual(h.t, CompletingRebalance, g.state)
}

// learn applies the Ready and records what clients were told.
func (w *workload) learn() {
	h := w.h
	first := len(h.order)
	h.step()
	for _, id := range h.answeredSince(first) {
		req, ok := w.joins[id]
		if !ok {
			continue
		}
		r := h.answers[id].(JoinResponse)
		switch r.Err {
		case kafka.ErrMemberIDRequired:
			w.seen = append(w.seen, seen{group: req.Group, member: r.MemberID})
		case nil:
			// Generations not yet persisted are chosen again after a
			// failover, so leaders agree within one leadership term.
			key := fmt.Sprintf("%d/%s/%d", w.epoch, req.Group, r.Generation)
			if l, ok := w.leaders[key]; ok {
				require.Equal(h.t, l, r.LeaderID, "two leaders for %s", key)
			}
			w.leaders[key] = r.LeaderID
			s := seen{group: req.Group, member: r.MemberID, generation: r.Generation}
			if r.LeaderID == r.MemberID {
				s.leaderResp = &r
				require.True(h.t, slices.ContainsFunc(r.Members, func(m JoinMember) bool { return m.MemberID == r.MemberID }))
			}
			w.seen = append(w.seen, s)
		}
	}
	if len(w.seen) > 60 {
		w.seen = w.seen[len(w.seen)-60:]
	}
}

// TestRandomized drives random workloads from fixed seeds and checks the
// invariants after every step.
func TestRandomized(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			h := newHarness(t)
			w := newWorkload(h, rand.New(rand.NewPCG(seed, 99)))
			for range 2000 {
				w.step()
			}
			// Reached Stable and committed at least once somewhere, or
			// the workload is too weak to mean anything.
			kinds := map[EventKind]int{}
			for _, e := range h.events {
				kinds[e.Kind]++
			}
			commits := 0
			for _, a := range h.answers {
				if r, ok := a.(CommitResponse); ok && len(r.Partitions) > 0 && r.Partitions[0].Err == nil {
					commits++
				}
			}
			t.Logf("events %v, commits accepted %d, failovers %d", kinds, commits, w.epoch-1)
			require.NotZero(t, kinds[GroupStable], "no group ever became Stable")
			require.NotZero(t, commits, "no commit was ever accepted")
		})
	}
}
