package quorum

import (
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// elections is the node's own election timing, in place of raft's.
//
// etcd raft draws each follower's election timeout from a random source
// of its own, which no caller can seed, so a run whose voters tick raft
// would elect differently on every replay. The node therefore never ticks
// raft outside leadership: a voter that is not the leader keeps its own
// deadline, ElectionTimeoutMs plus a backoff drawn from the node's seeded
// source, moved on whenever it hears from its leader or grants a vote, and
// calls Campaign when it passes (with PreVote, so a voter with a stale log
// does not raise the term). The leader ticks raft once per HeartbeatMs,
// which sends heartbeats and the log; raft's leader-side timers use no
// randomness.
//
// raft's CheckQuorum needs followers' ticks, so it is off, and the node
// does both of its jobs itself: a voter that heard from its leader within
// ElectionTimeoutMs refuses another's vote requests (the leader lease
// that keeps a voter cut off from the leader, then back, from deposing
// it), and a leader that has not heard from a majority within
// ElectionTimeoutMs stops acting as the active controller (active.go)
// until it hears from one again or a new leader deposes it.
type elections struct {
	deadline   int64 // a voter that is not the leader campaigns then
	backoff    int64 // this election period's random extra wait
	leaderSeen int64 // when it last heard from its leader
	lastTick   int64 // the leader's last raft tick
	leading    bool
	heardAt    map[uint64]int64 // the leader's: when each voter last answered
}

func (e *elections) init(n *Node) {
	e.heardAt = map[uint64]int64{}
	e.leaderSeen = -1 << 62
	e.redraw(n)
	if n.cfg.Quorum.Voters == 1 {
		e.deadline = n.now // no one else to hear from: it leads at its first tick
	}
}

// redraw draws a new backoff and moves the deadline a full period on.
func (e *elections) redraw(n *Node) {
	if max := n.cfg.Quorum.ElectionBackoffMaxMs; max > 0 {
		e.backoff = n.rng.Int64N(max + 1)
	}
	e.deadline = n.now + n.cfg.Quorum.ElectionTimeoutMs + e.backoff
}

func (e *elections) tick(n *Node) {
	if e.leading {
		// One raft tick per heartbeat period, however late the host's
		// timer fires: a slow host sends fewer heartbeats, not a burst.
		if n.now-e.lastTick >= n.cfg.Quorum.HeartbeatMs {
			e.lastTick = n.now
			n.rn.Tick()
		}
		return
	}
	if n.now >= e.deadline {
		e.redraw(n)
		_ = n.rn.Campaign()
	}
}

// heard notes a message from another voter before raft steps it.
func (e *elections) heard(n *Node, m *pb.Message) {
	e.heardAt[m.GetFrom()] = n.now
	switch m.GetType() {
	case pb.MsgApp, pb.MsgHeartbeat, pb.MsgSnap:
		if m.GetTerm() >= n.term {
			e.leaderSeen = n.now
			e.deadline = n.now + n.cfg.Quorum.ElectionTimeoutMs + e.backoff
		}
	}
}

// refuse reports whether a vote request must be dropped unread: the
// voter is within its lease of a leader it hears from (raft's
// CheckQuorum rule for followers, applied here since raft's own needs
// ticks), or it leads with a majority behind it.
func (e *elections) refuse(n *Node, m *pb.Message) bool {
	t := m.GetType()
	if (t != pb.MsgVote && t != pb.MsgPreVote) || m.GetTerm() <= n.term {
		return false
	}
	if e.leading {
		return e.quorum(n)
	}
	return n.lead != 0 && n.now-e.leaderSeen < n.cfg.Quorum.ElectionTimeoutMs
}

// sent notes a message raft sends: granting a vote restarts the period,
// as raft does on its own.
func (e *elections) sent(n *Node, m *pb.Message) {
	if m.GetType() == pb.MsgVoteResp && !m.GetReject() {
		e.deadline = n.now + n.cfg.Quorum.ElectionTimeoutMs + e.backoff
	}
}

// roleChanged catches up with raft's role after a Ready.
func (e *elections) roleChanged(n *Node) {
	leading := n.rn.BasicStatus().RaftState == raft.StateLeader
	if leading == e.leading {
		return
	}
	e.leading = leading
	if leading {
		e.lastTick = n.now
		clear(e.heardAt)
		return
	}
	e.redraw(n)
}

// quorum reports whether the leader heard from a majority of voters
// (itself among them) within the election timeout.
func (e *elections) quorum(n *Node) bool {
	count := 0
	for v := uint64(1); v <= uint64(n.cfg.Quorum.Voters); v++ {
		if v == uint64(n.cfg.Voter) {
			count++
		} else if at, ok := e.heardAt[v]; ok && n.now-at < n.cfg.Quorum.ElectionTimeoutMs {
			count++
		}
	}
	return count > n.cfg.Quorum.Voters/2
}
