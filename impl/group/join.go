package group

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// serving returns the error every request gets while the coordinator does
// not serve: before Load, and after Unload.
func (c *Coordinator) serving() error {
	switch c.state {
	case notLoaded:
		return kafka.ErrCoordinatorLoadInProgress
	case unloaded:
		return kafka.ErrNotCoordinator
	}
	return nil
}

// validGroupID reports whether name can be a group id here. Kafka accepts
// any non-empty string; NUL is refused too because it separates the fields
// of an offset record's key.
func validGroupID(name string) bool { return name != "" && !strings.ContainsRune(name, 0) }

// JoinGroup handles a JoinGroup. The answer arrives in a later Ready when
// the member must wait for the others (PreparingRebalance).
//
// Rules, after Kafka's classic GroupCoordinator with KIP-394:
//   - MemberID "": the member gets MEMBER_ID_REQUIRED and a fresh id that
//     becomes a member only when it rejoins with it;
//   - a pending id joins the group: the group rebalances;
//   - a known member rejoining in CompletingRebalance with unchanged
//     protocols, or in Stable when not the leader and unchanged, gets the
//     current generation back; otherwise the group rebalances;
//   - the join completes once every member and no pending id is waiting, or
//     at the rebalance timeout (Tick).
func (c *Coordinator) JoinGroup(id uint64, req JoinRequest, now int64) {
	fail := func(e error) { c.answer(id, joinError(e, req.MemberID)) }
	if e := c.serving(); e != nil {
		fail(e)
		return
	}
	if !validGroupID(req.Group) {
		fail(kafka.ErrInvalidGroupID)
		return
	}
	if req.SessionTimeoutMs < c.cfg.MinSessionTimeoutMs || req.SessionTimeoutMs > c.cfg.MaxSessionTimeoutMs {
		fail(kafka.ErrInvalidSessionTimeout)
		return
	}
	g := c.groups[req.Group]
	if g == nil && req.MemberID != "" {
		fail(kafka.ErrUnknownMemberID)
		return
	}
	if !supports(g, req.ProtocolType, req.Protocols, req.MemberID) {
		fail(kafka.ErrInconsistentGroupProtocol)
		return
	}
	if g == nil {
		g = &group{name: req.Group, members: make(map[string]*member), pending: make(map[string]int64)}
		c.groups[req.Group] = g
	}
	if req.MemberID == "" {
		mid := c.newMemberID(g, req.ClientID)
		g.pending[mid] = now + req.SessionTimeoutMs
		c.answer(id, joinError(kafka.ErrMemberIDRequired, mid))
		return
	}
	m := g.members[req.MemberID]
	if m == nil {
		if _, ok := g.pending[req.MemberID]; !ok {
			fail(kafka.ErrUnknownMemberID)
			return
		}
		delete(g.pending, req.MemberID)
		c.nextJoin++
		m = &member{id: req.MemberID, clientID: req.ClientID, joinSeq: c.nextJoin}
		if len(g.members) == 0 {
			g.protocolType = req.ProtocolType
			g.leader = m.id
		}
		g.members[m.id] = m
		c.emit(Event{Kind: MemberAdded, Now: now, Group: g.name, Generation: g.generation, Member: m.id})
		c.updateAndRebalance(g, m, id, req, now, "member-joined")
		return
	}
	m.lastHeard = now
	unchanged := req.ProtocolType == g.protocolType && sameProtocols(m.protocols, req.Protocols)
	switch {
	case g.state == CompletingRebalance && unchanged,
		g.state == Stable && unchanged && m.id != g.leader:
		c.answer(id, c.joinResponse(g, m))
	default:
		c.updateAndRebalance(g, m, id, req, now, "member-rejoined")
	}
}

// updateAndRebalance takes req's settings into m, parks its JoinGroup, and
// moves the group to PreparingRebalance (or keeps it there).
func (c *Coordinator) updateAndRebalance(g *group, m *member, id uint64, req JoinRequest, now int64, reason string) {
	m.sessionTimeoutMs = req.SessionTimeoutMs
	m.rebalanceTimeoutMs = req.RebalanceTimeoutMs
	if m.rebalanceTimeoutMs <= 0 {
		m.rebalanceTimeoutMs = req.SessionTimeoutMs
	}
	m.protocols = cloneProtocols(req.Protocols)
	m.lastHeard = now
	if len(g.members) == 1 {
		// supports let the only member change the protocol type.
		g.protocolType = req.ProtocolType
	}
	if g.state != PreparingRebalance {
		c.prepareRebalance(g, now, reason)
	}
	if m.join != 0 {
		// A retried JoinGroup supersedes the one parked: the client gave up
		// on that one, so any answer will do.
		c.answer(m.join, joinError(kafka.ErrRebalanceInProgress, m.id))
	}
	m.join = id
	c.maybeCompleteJoin(g, now)
}

// newMemberID returns "<clientID or member>-<epoch>-<n>": deterministic, and
// unique across leadership terms as long as each Load gets a new leader
// epoch. Kafka uses clientID-UUID.
func (c *Coordinator) newMemberID(g *group, clientID string) string {
	if clientID == "" {
		clientID = "member"
	}
	// The id is persisted as JSON, which would mangle invalid UTF-8.
	clientID = strings.ToValidUTF8(clientID, "?")
	for {
		c.nextMember++
		mid := fmt.Sprintf("%s-%d-%d", clientID, c.epoch, c.nextMember)
		_, known := g.members[mid]
		_, pending := g.pending[mid]
		if !known && !pending {
			return mid
		}
	}
}

// supports reports whether a member with these protocols may be in g: the
// protocol type must match and one of its protocols must be supported by
// every other member (Kafka's supportsProtocols). self is left out, so that
// a member may change its own protocols.
func supports(g *group, protocolType string, protocols []Protocol, self string) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	if g == nil {
		return true
	}
	others := 0
	for _, m := range g.members {
		if m.id != self {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if supportedByAll(g, p.Name, self) {
			return true
		}
	}
	return false
}

func supportedByAll(g *group, name, self string) bool {
	for _, m := range g.members {
		if m.id != self && !hasProtocol(m.protocols, name) {
			return false
		}
	}
	return true
}

func hasProtocol(ps []Protocol, name string) bool {
	return slices.ContainsFunc(ps, func(p Protocol) bool { return p.Name == name })
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool {
		return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
	})
}

func cloneProtocols(ps []Protocol) []Protocol {
	out := make([]Protocol, len(ps))
	for i, p := range ps {
		out[i] = Protocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)}
	}
	return out
}

// prepareRebalance moves g to PreparingRebalance. Parked SyncGroups of the
// generation being abandoned are answered REBALANCE_IN_PROGRESS, and a
// metadata append in flight will no longer make the group Stable.
func (c *Coordinator) prepareRebalance(g *group, now int64, reason string) {
	if g.state == CompletingRebalance {
		c.answerSyncs(g, kafka.ErrRebalanceInProgress)
	}
	g.storing, g.proposal = 0, nil
	g.joinDeadline = now + maxRebalanceTimeout(g)
	g.joinEarliest = now
	if g.state == Empty {
		// Kafka caps the initial delay at the rebalance timeout too.
		g.joinEarliest = min(now+c.cfg.InitialRebalanceDelayMs, g.joinDeadline)
	}
	g.state = PreparingRebalance
	c.emit(Event{Kind: RebalanceStarted, Now: now, Group: g.name, Generation: g.generation, Reason: reason})
}

func maxRebalanceTimeout(g *group) int64 {
	var most int64
	for _, m := range g.members {
		most = max(most, m.rebalanceTimeoutMs)
	}
	return most
}

// answerSyncs answers every parked SyncGroup of g with e.
func (c *Coordinator) answerSyncs(g *group, e error) {
	for _, id := range g.memberIDs() {
		if m := g.members[id]; m.sync != 0 {
			c.answer(m.sync, SyncResponse{Err: e})
			m.sync = 0
		}
	}
}

// maybeCompleteJoin completes the join once every member has rejoined and
// no KIP-394 id is outstanding, and the initial delay has passed.
//
// A group that lost its last member completes at once, pending ids or not,
// and goes Empty: Kafka waits for the rebalance timeout instead, which
// only delays the same outcome (a pending id then joins the Empty group).
func (c *Coordinator) maybeCompleteJoin(g *group, now int64) {
	if g.state != PreparingRebalance {
		return
	}
	if len(g.members) == 0 {
		c.completeJoin(g, now)
		return
	}
	if now < g.joinEarliest || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == 0 {
			return
		}
	}
	c.completeJoin(g, now)
}

// completeJoin ends PreparingRebalance: members that did not rejoin are
// removed, the generation is bumped, the leader and protocol are chosen and
// every parked JoinGroup is answered. A group left without members becomes
// Empty, and that is persisted so that the generation survives failover.
func (c *Coordinator) completeJoin(g *group, now int64) {
	for _, id := range g.memberIDs() {
		if g.members[id].join == 0 {
			c.dropMember(g, g.members[id], now, "rebalance-timeout")
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = Empty, "", ""
		c.emit(Event{Kind: RebalanceCompleted, Now: now, Group: g.name, Generation: g.generation, Members: []string{}})
		c.appendRecords(&pendingAppend{group: g.name, generation: g.generation},
			[]Record{EncodeGroup(g.name, g.metadata(nil))})
		return
	}
	g.protocol = chooseProtocol(g)
	g.state = CompletingRebalance
	g.syncDeadline = now + maxRebalanceTimeout(g)
	ids := g.memberIDs()
	for _, id := range ids {
		m := g.members[id]
		m.assignment, m.synced = nil, false
		c.answer(m.join, c.joinResponse(g, m))
		m.join = 0
		m.lastHeard = now
	}
	c.emit(Event{Kind: RebalanceCompleted, Now: now, Group: g.name, Generation: g.generation, Members: ids})
}

// chooseProtocol returns the first protocol, in the leader's order of
// preference, that every member supports. Kafka instead lets every member
// vote for its most preferred candidate; the two agree when members list
// protocols in the same order. supports guarantees a candidate exists.
func chooseProtocol(g *group) string {
	leader := g.members[g.leader]
	for _, p := range leader.protocols {
		if supportedByAll(g, p.Name, "") {
			return p.Name
		}
	}
	return leader.protocols[0].Name
}

// joinError is a JoinGroup answer carrying an error; generation -1 is
// Kafka's UNKNOWN_GENERATION_ID, as clients expect in error answers.
func joinError(e error, memberID string) JoinResponse {
	return JoinResponse{Err: e, Generation: -1, MemberID: memberID}
}

func (c *Coordinator) joinResponse(g *group, m *member) JoinResponse {
	r := JoinResponse{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol,
		LeaderID: g.leader, MemberID: m.id}
	if m.id == g.leader {
		r.Members = []JoinMember{}
		for _, id := range g.memberIDs() {
			r.Members = append(r.Members, JoinMember{MemberID: id,
				Metadata: slices.Clone(g.members[id].metadataFor(g.protocol))})
		}
	}
	return r
}

// firstJoined returns the member that joined g first, or "".
func (c *Coordinator) firstJoined(g *group) string {
	var first *member
	for _, m := range g.members {
		if first == nil || m.joinSeq < first.joinSeq {
			first = m
		}
	}
	if first == nil {
		return ""
	}
	return first.id
}

// dropMember removes m from g, answers its parked requests
// UNKNOWN_MEMBER_ID and passes leadership on; the caller then calls
// membersGone.
func (c *Coordinator) dropMember(g *group, m *member, now int64, reason string) {
	if m.join != 0 {
		c.answer(m.join, joinError(kafka.ErrUnknownMemberID, m.id))
	}
	if m.sync != 0 {
		c.answer(m.sync, SyncResponse{Err: kafka.ErrUnknownMemberID})
	}
	delete(g.members, m.id)
	if g.leader == m.id {
		g.leader = c.firstJoined(g)
	}
	c.emit(Event{Kind: MemberRemoved, Now: now, Group: g.name, Generation: g.generation, Member: m.id, Reason: reason})
}

// membersGone rebalances g after members were removed.
func (c *Coordinator) membersGone(g *group, now int64, reason string) {
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g, now, reason)
	case Empty:
		return
	}
	c.maybeCompleteJoin(g, now)
}
