package kitclient

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/groupmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// consumerProtocolType is JoinGroup's protocol type for consumers; real
// clients in the same group read the metadata and assignments as Kafka's
// ConsumerProtocol schemas.
const consumerProtocolType = "consumer"

// groupState is where the member stands in the group protocol.
type groupState uint8

const (
	gsNone      groupState = iota // no subscription: not a member
	gsJoining                     // JoinGroup to send, or in flight
	gsAssigning                   // leader: waiting for metadata to assign
	gsSyncing                     // SyncGroup to send, or in flight
	gsStable                      // assignment received: heartbeating
	gsFailed                      // refused for good
	gsClosed
)

// pendingCommit is one Commit without an outcome yet.
type pendingCommit struct {
	id      uint64
	call    int64
	gen     int32
	member  string
	offsets map[kafka.TopicPartition]int64
	req     ctl // zero until sent
	// to is the coordinator the commit was last sent to (0: never sent).
	to clientmsg.NodeID
}

// consumerGroup is the member's side of the group protocol.
//
// Invariants:
//  1. state == gsStable => generation >= 0 and memberID != "".
//  2. members != nil <=> state == gsAssigning.
type consumerGroup struct {
	state         groupState
	coord         int32
	coordKnown    bool
	find          ctl
	findNotBefore int64

	memberID   string
	generation int32
	protocol   string

	join, sync, hb, ofetch ctl
	joinNotBefore          int64
	hbAt                   int64
	ofetchNotBefore        int64

	members     []groupmsg.JoinMember // the leader's, while it assigns
	assignAfter uint64                // metadata answers to exceed before assigning without a topic
	assignments map[string][]byte     // the leader's SyncGroup

	commits    []*pendingCommit // in Commit order
	lastCommit uint64
}

// Commit asks the coordinator to store offsets (the next offset to read,
// per partition) and returns the commit's ID, which its Committed event
// carries. A group member commits under its generation and member id; a
// consumer with a Group and manual assignment sends a "simple" commit
// (generation -1, no member id). A member that is rebalancing fails at once
// with REBALANCE_IN_PROGRESS, as Kafka's does.
func (c *Consumer) Commit(offsets map[kafka.TopicPartition]int64, now int64) uint64 {
	c.advance(now)
	g := &c.g
	g.lastCommit++
	pc := &pendingCommit{id: g.lastCommit, call: c.now, gen: -1, offsets: maps.Clone(offsets)}
	if c.subscribed() {
		pc.gen, pc.member = g.generation, g.memberID
	}
	switch {
	case c.closed:
		c.commitDone(pc, ErrClosed, false)
	case c.cfg.Group == "":
		c.commitDone(pc, ErrNoGroup, false)
	case c.subscribed() && g.state != gsStable:
		c.commitDone(pc, kafka.ErrRebalanceInProgress, false)
	case len(offsets) == 0:
		// Nothing to store: Kafka's commitSync returns at once. Sent, a
		// non-coordinator's refusal would carry no partition to say so.
		c.commitDone(pc, nil, false)
	default:
		g.commits = append(g.commits, pc)
		c.step()
	}
	return pc.id
}

func (c *Consumer) commitDone(pc *pendingCommit, err error, unknown bool) {
	c.emit(&Committed{Span: Span{pc.call, c.now}, ID: pc.id, Generation: pc.gen, MemberID: pc.member,
		Offsets: pc.offsets, Err: err, Unknown: unknown, Coordinator: pc.to})
}

// failCommits ends every unresolved commit with err: Unknown for those
// already sent.
func (c *Consumer) failCommits(err error) {
	for _, pc := range c.g.commits {
		c.commitDone(pc, err, pc.req.busy())
	}
	c.g.commits = nil
}

// needCoordinator reports whether anything waits for the coordinator.
func (c *Consumer) needCoordinator() bool {
	g := &c.g
	if g.state == gsJoining || g.state == gsSyncing || g.state == gsStable || len(g.commits) > 0 {
		return true
	}
	for _, ps := range c.order {
		if ps.phase == phaseCommitted {
			return true
		}
	}
	return false
}

// coordinatorLost forgets the coordinator (it moved, is loading, or did
// not answer); it is looked up again after the backoff. Requests it has
// not answered stay in flight until they time out.
func (c *Consumer) coordinatorLost() {
	if c.g.coordKnown {
		c.g.coordKnown = false
		c.g.findNotBefore = c.now + c.cfg.RetryBackoffMs
	}
}

// coordinatorError reports codes that mean "ask for the coordinator again".
// COORDINATOR_NOT_AVAILABLE is one, as in Java's AbstractCoordinator: Kafka
// 4.x's coordinator answers it when a write timed out, which a coordinator
// cut off from its followers keeps doing.
func coordinatorError(e error) bool {
	return errors.Is(e, kafka.ErrNotCoordinator) || errors.Is(e, kafka.ErrCoordinatorLoadInProgress) ||
		errors.Is(e, kafka.ErrCoordinatorNotAvailable)
}

// stepGroup sends the group requests that are due.
func (c *Consumer) stepGroup() {
	g := &c.g
	if c.cfg.Group == "" || g.state == gsFailed || !c.needCoordinator() {
		return
	}
	if !g.coordKnown {
		if !g.find.busy() && c.now >= g.findNotBefore {
			if to, ok := c.pickBroker(); ok {
				g.find = ctl{corr: c.nextCorr(), to: to, sent: c.now, deadline: c.now + c.cfg.MetadataTimeoutMs}
				c.send(to, clientmsg.FindCoordinatorRequest{Correlation: g.find.corr, Group: c.cfg.Group})
			}
		}
		return
	}
	coord := clientmsg.NodeID(g.coord)
	switch g.state {
	case gsJoining:
		if !g.join.busy() && c.now >= g.joinNotBefore {
			c.sendGroup(&g.join, coord, c.joinRequest(), c.cfg.RebalanceTimeoutMs+c.cfg.RequestTimeoutMs)
		}
	case gsSyncing:
		if !g.sync.busy() {
			c.sendGroup(&g.sync, coord, groupmsg.SyncRequest{Group: c.cfg.Group, MemberID: g.memberID, Generation: g.generation,
				ProtocolType: consumerProtocolType, Protocol: g.protocol, Assignments: g.assignments},
				c.cfg.RebalanceTimeoutMs+c.cfg.RequestTimeoutMs)
		}
	case gsStable:
		if !g.hb.busy() && c.now >= g.hbAt {
			c.sendGroup(&g.hb, coord, groupmsg.HeartbeatRequest{Group: c.cfg.Group, MemberID: g.memberID, Generation: g.generation},
				c.cfg.RequestTimeoutMs)
		}
	}
	c.maybeFetchOffsets(coord)
	for _, pc := range g.commits {
		if pc.req.busy() {
			continue
		}
		req := groupmsg.CommitRequest{Group: c.cfg.Group, MemberID: pc.member, Generation: pc.gen}
		for _, tp := range slices.SortedFunc(maps.Keys(pc.offsets), kafka.TopicPartition.Compare) {
			req.Offsets = append(req.Offsets, groupmsg.OffsetToCommit{TopicPartition: tp, Offset: pc.offsets[tp]})
		}
		c.sendGroup(&pc.req, coord, req, c.cfg.RequestTimeoutMs)
		pc.to = coord
	}
}

func (c *Consumer) sendGroup(r *ctl, to clientmsg.NodeID, req groupmsg.Request, timeout int64) {
	*r = ctl{corr: c.nextCorr(), to: to, sent: c.now, deadline: c.now + timeout}
	c.send(to, clientmsg.GroupRequest{Correlation: r.corr, Req: req})
}

func (c *Consumer) joinRequest() groupmsg.JoinRequest {
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version = 0
	sub.Topics = slices.Clone(c.cfg.Topics)
	return groupmsg.JoinRequest{
		Group:              c.cfg.Group,
		MemberID:           c.g.memberID,
		ClientID:           c.cfg.ClientID,
		SessionTimeoutMs:   c.cfg.SessionTimeoutMs,
		RebalanceTimeoutMs: c.cfg.RebalanceTimeoutMs,
		ProtocolType:       consumerProtocolType,
		Protocols:          []groupmsg.Protocol{{Name: c.cfg.Assignor, Metadata: sub.AppendTo(nil)}},
	}
}

func (c *Consumer) leaveRequest() groupmsg.LeaveRequest {
	return groupmsg.LeaveRequest{Group: c.cfg.Group, Members: []string{c.g.memberID}}
}

// maybeFetchOffsets sends one OffsetFetch for every partition waiting for
// its committed offset, when none is in flight.
func (c *Consumer) maybeFetchOffsets(coord clientmsg.NodeID) {
	g := &c.g
	if g.ofetch.busy() || c.now < g.ofetchNotBefore || (c.subscribed() && g.state != gsStable) {
		return
	}
	var tps []kafka.TopicPartition
	for _, ps := range c.order {
		if ps.phase == phaseCommitted {
			tps = append(tps, ps.tp)
		}
	}
	if len(tps) > 0 {
		c.sendGroup(&g.ofetch, coord, groupmsg.FetchOffsetsRequest{Group: c.cfg.Group, Partitions: tps}, c.cfg.RequestTimeoutMs)
	}
}

// tickGroup times out group requests.
func (c *Consumer) tickGroup() {
	g := &c.g
	late := func(r *ctl) bool {
		if r.busy() && c.now >= r.deadline {
			c.silent = r.to // look for the coordinator elsewhere
			return true
		}
		return false
	}
	if late(&g.find) {
		g.find = ctl{}
		g.findNotBefore = c.now + c.cfg.RetryBackoffMs
	}
	if late(&g.join) {
		g.join = ctl{}
		c.coordinatorLost()
	}
	if late(&g.sync) {
		g.sync = ctl{}
		c.coordinatorLost()
		c.rejoin(false)
	}
	if late(&g.hb) {
		g.hb = ctl{}
		c.coordinatorLost()
	}
	if late(&g.ofetch) {
		g.ofetch = ctl{}
		c.coordinatorLost()
	}
	n := 0
	for _, pc := range g.commits {
		switch {
		case late(&pc.req):
			c.commitDone(pc, ErrResponseTimeout, true)
			c.coordinatorLost()
		case !pc.req.busy() && c.now-pc.call >= c.cfg.RequestTimeoutMs:
			c.commitDone(pc, ErrNoCoordinator, false)
		default:
			g.commits[n] = pc
			n++
		}
	}
	clear(g.commits[n:])
	g.commits = g.commits[:n]
}

func (c *Consumer) handleFindCoordinator(from clientmsg.NodeID, m clientmsg.FindCoordinatorResponse) {
	g := &c.g
	if !g.find.busy() || m.Correlation != g.find.corr || from != g.find.to {
		return
	}
	g.find = ctl{}
	if m.Err != nil || m.Coordinator < 0 {
		g.findNotBefore = c.now + c.cfg.RetryBackoffMs
		return
	}
	g.coord, g.coordKnown = m.Coordinator, true
}

func (c *Consumer) handleGroupResponse(from clientmsg.NodeID, m clientmsg.GroupResponse) {
	g := &c.g
	match := func(r *ctl) (int64, bool) {
		if !r.busy() || r.corr != m.Correlation || r.to != from {
			return 0, false
		}
		call := r.sent
		*r = ctl{}
		return call, true
	}
	// The correlation says which request m answers; the answer's type is
	// that request's (a broker refuses with the request's own answer).
	if call, ok := match(&g.join); ok {
		if resp, ok := m.Resp.(groupmsg.JoinResponse); ok && g.state == gsJoining {
			c.handleJoin(call, from, resp)
		}
		return
	}
	if call, ok := match(&g.sync); ok {
		if resp, ok := m.Resp.(groupmsg.SyncResponse); ok && g.state == gsSyncing {
			c.handleSync(call, from, resp)
		}
		return
	}
	if call, ok := match(&g.hb); ok {
		if resp, ok := m.Resp.(groupmsg.HeartbeatResponse); ok && g.state == gsStable {
			c.handleHeartbeat(call, resp)
		}
		return
	}
	if call, ok := match(&g.ofetch); ok {
		if resp, ok := m.Resp.(groupmsg.FetchOffsetsResponse); ok {
			c.handleFetchOffsets(call, from, resp)
		}
		return
	}
	for i, pc := range g.commits {
		if _, ok := match(&pc.req); ok {
			g.commits = slices.Delete(g.commits, i, i+1)
			if resp, ok := m.Resp.(groupmsg.CommitResponse); ok {
				c.handleCommit(pc, resp)
			}
			return
		}
	}
}

func (c *Consumer) handleJoin(call int64, from clientmsg.NodeID, resp groupmsg.JoinResponse) {
	g := &c.g
	switch e := resp.Err; {
	case e == nil:
		g.generation, g.memberID, g.protocol = resp.Generation, resp.MemberID, resp.Protocol
		leader := resp.LeaderID == resp.MemberID
		c.emit(&Joined{Span: Span{call, c.now}, Generation: g.generation, MemberID: g.memberID, Leader: leader, Coordinator: from})
		if !leader {
			g.assignments = nil
			g.state = gsSyncing
			return
		}
		g.members = slices.Clone(resp.Members)
		g.state = gsAssigning
		g.assignAfter = c.metaAnswers
		c.maybeAssign()
	case errors.Is(e, kafka.ErrMemberIDRequired): // KIP-394: rejoin at once with the id given
		g.memberID = resp.MemberID
	case errors.Is(e, kafka.ErrUnknownMemberID):
		g.memberID = ""
		g.joinNotBefore = c.now + c.cfg.RetryBackoffMs
	case errors.Is(e, kafka.ErrRebalanceInProgress), errors.Is(e, kafka.ErrIllegalGeneration):
		g.joinNotBefore = c.now
	case coordinatorError(e):
		c.coordinatorLost()
	default:
		c.failGroup(call, e)
	}
}

func (c *Consumer) failGroup(call int64, e error) {
	c.revoke()
	c.g.state = gsFailed
	c.failCommits(e)
	c.emit(&GroupFailed{Span: Span{call, c.now}, Err: e})
}

// maybeAssign runs the leader's assignor once metadata knows every topic
// the members subscribe to, or once a metadata answer came after the join
// (topics still unknown then are skipped, as Kafka's assignors skip them).
func (c *Consumer) maybeAssign() {
	g := &c.g
	if g.state != gsAssigning {
		return
	}
	subs := make([]groupmsg.Subscription, 0, len(g.members))
	known := true
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.Metadata); err != nil {
			meta.Topics = nil // a member we cannot read gets nothing
		}
		for _, t := range meta.Topics {
			_, ok := c.topics[t]
			known = known && ok
		}
		subs = append(subs, groupmsg.Subscription{MemberID: m.MemberID, Topics: meta.Topics})
	}
	if !known && c.metaAnswers <= g.assignAfter {
		c.metaWanted = true
		return
	}
	counts := map[string]int32{}
	for _, s := range subs {
		for _, t := range s.Topics {
			if n, ok := c.topics[t]; ok {
				counts[t] = n
			}
		}
	}
	var a groupmsg.Assignment
	if c.cfg.Assignor == AssignorRoundRobin {
		a = groupmsg.RoundRobin(subs, counts)
	} else {
		a = groupmsg.Range(subs, counts)
	}
	g.assignments = make(map[string][]byte, len(a))
	for _, id := range slices.Sorted(maps.Keys(a)) {
		asg := kmsg.NewConsumerMemberAssignment()
		for _, t := range slices.Sorted(maps.Keys(a[id])) {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = t, slices.Clone(a[id][t])
			asg.Topics = append(asg.Topics, at)
		}
		g.assignments[id] = asg.AppendTo(nil)
	}
	g.members = nil
	g.state = gsSyncing
}

func (c *Consumer) handleSync(call int64, from clientmsg.NodeID, resp groupmsg.SyncResponse) {
	g := &c.g
	switch e := resp.Err; {
	case e == nil:
		var asg kmsg.ConsumerMemberAssignment
		if err := asg.ReadFrom(resp.Assignment); err != nil && len(resp.Assignment) > 0 {
			// An assignment we cannot read: take part in the next
			// generation rather than consume nothing silently.
			c.emit(&GroupFailed{Span: Span{call, c.now}, Err: fmt.Errorf("read assignment: %w", err)})
			g.joinNotBefore = c.now + c.cfg.RetryBackoffMs
			g.state = gsJoining
			return
		}
		var tps []kafka.TopicPartition
		for _, t := range asg.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, kafka.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
		tps = slices.Compact(slices.SortedFunc(slices.Values(tps), kafka.TopicPartition.Compare))
		g.state = gsStable
		g.hbAt = c.now + c.cfg.HeartbeatIntervalMs
		c.emit(&Assigned{Span: Span{call, c.now}, Generation: g.generation, MemberID: g.memberID, Partitions: tps, Coordinator: from})
		for _, tp := range tps {
			ps := c.newPart(tp, g.generation)
			c.parts[tp] = ps
			c.order = append(c.order, ps)
		}
	case errors.Is(e, kafka.ErrUnknownMemberID):
		c.rejoin(true)
	case coordinatorError(e):
		c.coordinatorLost()
		c.rejoin(false)
	default: // REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, ...
		c.rejoin(false)
	}
}

func (c *Consumer) handleHeartbeat(call int64, resp groupmsg.HeartbeatResponse) {
	g := &c.g
	switch e := resp.Err; {
	case e == nil:
		g.hbAt = call + c.cfg.HeartbeatIntervalMs
	case errors.Is(e, kafka.ErrUnknownMemberID):
		c.rejoin(true)
	case coordinatorError(e):
		c.coordinatorLost()
	default: // REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION
		c.rejoin(false)
	}
}

func (c *Consumer) handleFetchOffsets(call int64, from clientmsg.NodeID, resp groupmsg.FetchOffsetsResponse) {
	g := &c.g
	if resp.Err != nil {
		if coordinatorError(resp.Err) {
			c.coordinatorLost()
		}
		g.ofetchNotBefore = c.now + c.cfg.RetryBackoffMs
		return
	}
	for _, fo := range resp.Partitions {
		ps, ok := c.parts[fo.TopicPartition]
		if !ok || ps.phase != phaseCommitted {
			continue // revoked, or sought, since
		}
		c.emit(&OffsetsFetched{Span: Span{call, c.now}, TP: ps.tp, Offset: fo.Offset, Coordinator: from})
		if fo.Offset < 0 {
			c.startReset(ps, call)
			continue
		}
		c.position(ps, fo.Offset)
		c.emit(&Positioned{Span: Span{call, c.now}, TP: ps.tp, Offset: fo.Offset, Why: WhyCommitted})
	}
}

func (c *Consumer) handleCommit(pc *pendingCommit, resp groupmsg.CommitResponse) {
	var e error
	for _, p := range resp.Partitions {
		if p.Err != nil {
			e = p.Err
			break
		}
	}
	if e == nil {
		c.commitDone(pc, nil, false)
		return
	}
	c.commitDone(pc, e, kafka.CommitOutcomeUnknown(e))
	g := &c.g
	current := c.subscribed() && g.state == gsStable && pc.gen == g.generation && pc.member == g.memberID
	switch {
	case coordinatorError(e), errors.Is(e, kafka.ErrRequestTimedOut):
		// Java's consumer looks the coordinator up again after a
		// commit's REQUEST_TIMED_OUT too (Kafka 3.x answered a slow
		// write so).
		c.coordinatorLost()
	case !current:
		// A refusal of an older generation's commit says nothing about
		// the current one.
	case errors.Is(e, kafka.ErrUnknownMemberID):
		c.rejoin(true)
	case errors.Is(e, kafka.ErrRebalanceInProgress), errors.Is(e, kafka.ErrIllegalGeneration):
		c.rejoin(false)
	}
}

// rejoin revokes every partition and joins again, under the same member
// id unless resetMember.
func (c *Consumer) rejoin(resetMember bool) {
	g := &c.g
	if g.state == gsNone || g.state == gsFailed || g.state == gsClosed {
		return
	}
	c.revoke()
	if resetMember {
		g.memberID = ""
	}
	if g.state == gsJoining {
		return
	}
	g.state = gsJoining
	g.sync, g.hb = ctl{}, ctl{}
	g.members, g.assignments = nil, nil
	g.joinNotBefore = c.now
}

// revoke stops consuming every partition: fetches in flight are ignored
// when they come back, unpolled records are dropped.
func (c *Consumer) revoke() {
	if len(c.order) == 0 {
		return
	}
	tps := c.Assignment()
	gen, member := int32(-1), ""
	if c.subscribed() {
		gen, member = c.g.generation, c.g.memberID
	}
	c.emit(&Revoked{Span: Span{c.now, c.now}, Generation: gen, MemberID: member, Partitions: tps})
	c.parts = map[kafka.TopicPartition]*consumedPart{}
	c.order = nil
	c.g.ofetch = ctl{}
}
