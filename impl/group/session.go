package group

import "github.com/watermarkhq/watermark/impl/kafka"

// Heartbeat handles a Heartbeat: it keeps the member's session alive, and
// tells it to rejoin (REBALANCE_IN_PROGRESS) while the group prepares a
// rebalance.
func (c *Coordinator) Heartbeat(id uint64, req HeartbeatRequest, now int64) {
	c.answer(id, HeartbeatResponse{Err: c.heartbeat(req, now)})
}

func (c *Coordinator) heartbeat(req HeartbeatRequest, now int64) error {
	if e := c.serving(); e != nil {
		return e
	}
	if !validGroupID(req.Group) {
		return kafka.ErrInvalidGroupID
	}
	g := c.groups[req.Group]
	if g == nil || g.members[req.MemberID] == nil {
		return kafka.ErrUnknownMemberID
	}
	if req.Generation != g.generation {
		return kafka.ErrIllegalGeneration
	}
	g.members[req.MemberID].lastHeard = now
	if g.state == PreparingRebalance {
		return kafka.ErrRebalanceInProgress
	}
	return nil
}

// LeaveGroup removes the members named (or KIP-394 ids not yet used) and
// rebalances the group.
func (c *Coordinator) LeaveGroup(id uint64, req LeaveRequest, now int64) {
	if e := c.serving(); e != nil {
		c.answer(id, LeaveResponse{Err: e})
		return
	}
	if !validGroupID(req.Group) {
		c.answer(id, LeaveResponse{Err: kafka.ErrInvalidGroupID})
		return
	}
	g := c.groups[req.Group]
	resp := LeaveResponse{Members: make([]LeaveMember, 0, len(req.Members))}
	gone := false
	for _, mid := range req.Members {
		e := kafka.ErrUnknownMemberID
		if g != nil {
			if m := g.members[mid]; m != nil {
				c.dropMember(g, m, now, "leave")
				e, gone = nil, true
			} else if _, ok := g.pending[mid]; ok {
				delete(g.pending, mid)
				e = nil
			}
		}
		resp.Members = append(resp.Members, LeaveMember{MemberID: mid, Err: e})
	}
	c.answer(id, resp)
	if g == nil {
		return
	}
	if gone {
		c.membersGone(g, now, "leave")
	} else {
		c.maybeCompleteJoin(g, now)
	}
}

// tickGroup expires what timed out in g.
func (c *Coordinator) tickGroup(g *group, now int64) {
	for _, mid := range sortedKeys(g.pending) {
		if now >= g.pending[mid] {
			delete(g.pending, mid)
		}
	}
	gone := ""
	for _, id := range g.memberIDs() {
		m := g.members[id]
		switch {
		case m.join == 0 && m.sync == 0 && now-m.lastHeard >= m.sessionTimeoutMs:
			c.dropMember(g, m, now, "session-timeout")
			gone = "session-timeout"
		case (g.state == CompletingRebalance || g.state == Stable) && !m.synced && now >= g.syncDeadline:
			c.dropMember(g, m, now, "sync-timeout")
			gone = "sync-timeout"
		}
	}
	if gone != "" {
		c.membersGone(g, now, gone)
	}
	if g.state == PreparingRebalance && now >= g.joinDeadline {
		c.completeJoin(g, now)
		return
	}
	c.maybeCompleteJoin(g, now)
}
