package group

import (
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// SyncGroup handles a SyncGroup. In CompletingRebalance it is parked; the
// leader's carries the assignment, which is persisted (Ready.Appends)
// before any member is answered.
func (c *Coordinator) SyncGroup(id uint64, req SyncRequest, now int64) {
	fail := func(e error) { c.answer(id, SyncResponse{Err: e}) }
	if e := c.serving(); e != nil {
		fail(e)
		return
	}
	if !validGroupID(req.Group) {
		fail(kafka.ErrInvalidGroupID)
		return
	}
	g := c.groups[req.Group]
	if g == nil || g.members[req.MemberID] == nil {
		fail(kafka.ErrUnknownMemberID)
		return
	}
	m := g.members[req.MemberID]
	if req.Generation != g.generation {
		fail(kafka.ErrIllegalGeneration)
		return
	}
	if (req.ProtocolType != "" && req.ProtocolType != g.protocolType) || (req.Protocol != "" && req.Protocol != g.protocol) {
		fail(kafka.ErrInconsistentGroupProtocol)
		return
	}
	m.lastHeard = now
	switch g.state {
	case PreparingRebalance:
		fail(kafka.ErrRebalanceInProgress)
	case Stable:
		m.synced = true
		c.answer(id, SyncResponse{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: slices.Clone(m.assignment)})
	case CompletingRebalance:
		m.synced = true
		if m.sync != 0 {
			c.answer(m.sync, SyncResponse{Err: kafka.ErrRebalanceInProgress})
		}
		m.sync = id
		if m.id == g.leader && g.storing == 0 {
			g.proposal = make(map[string][]byte, len(g.members))
			for mid := range g.members {
				g.proposal[mid] = slices.Clone(req.Assignments[mid])
				if g.proposal[mid] == nil {
					g.proposal[mid] = []byte{}
				}
			}
			g.storing = c.appendRecords(&pendingAppend{group: g.name, generation: g.generation},
				[]Record{EncodeGroup(g.name, g.metadata(g.proposal))})
		}
	}
}

// groupStored completes the leader's SyncGroup once its append's fate is
// known.
func (c *Coordinator) groupStored(g *group, err error, now int64) {
	proposal := g.proposal
	g.storing, g.proposal = 0, nil
	if err != nil {
		c.answerSyncs(g, writeError(err))
		c.prepareRebalance(g, now, "store-failed")
		return
	}
	g.state = Stable
	for _, id := range g.memberIDs() {
		m := g.members[id]
		m.assignment = proposal[id]
		if m.sync != 0 {
			c.answer(m.sync, SyncResponse{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: slices.Clone(m.assignment)})
			m.sync = 0
		}
	}
	c.emit(Event{Kind: GroupStable, Now: now, Group: g.name, Generation: g.generation, Members: g.memberIDs()})
}

// metadata returns what EncodeGroup persists for g, with the assignments
// given (nil for an Empty group).
func (g *group) metadata(assignments map[string][]byte) *GroupMetadata {
	gm := &GroupMetadata{ProtocolType: g.protocolType, Generation: g.generation, Protocol: g.protocol, Leader: g.leader}
	if assignments == nil {
		return gm
	}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		gm.Members = append(gm.Members, MemberMetadata{MemberID: id, ClientID: m.clientID,
			SessionTimeoutMs: m.sessionTimeoutMs, RebalanceTimeoutMs: m.rebalanceTimeoutMs,
			Metadata: m.metadataFor(g.protocol), Assignment: assignments[id]})
	}
	return gm
}
