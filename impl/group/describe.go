package group

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/impl/groupmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// Describe renders the whole state canonically, one line per group, member,
// pending id, committed offset and append in flight, in sorted order, for
// scenario tests and traces.
func (c *Coordinator) Describe() string {
	var b strings.Builder
	state := [...]string{notLoaded: "not-loaded", loaded: "loaded", unloaded: "unloaded"}[c.state]
	fmt.Fprintf(&b, "coordinator %s epoch=%d\n", state, c.epoch)
	for _, name := range sortedKeys(c.groups) {
		g := c.groups[name]
		fmt.Fprintf(&b, "group %s state=%s generation=%d protocol-type=%s protocol=%s leader=%s\n",
			name, g.state, g.generation, g.protocolType, g.protocol, g.leader)
		for _, id := range g.memberIDs() {
			m := g.members[id]
			fmt.Fprintf(&b, "  member %s session=%d rebalance=%d last-heard=%d", id, m.sessionTimeoutMs, m.rebalanceTimeoutMs, m.lastHeard)
			if m.assignment != nil {
				fmt.Fprintf(&b, " assignment=%s", describeAssignment(m.assignment))
			}
			if m.join != 0 {
				fmt.Fprintf(&b, " join=%d", m.join)
			}
			if m.sync != 0 {
				fmt.Fprintf(&b, " sync=%d", m.sync)
			}
			b.WriteString("\n")
		}
		for _, id := range sortedKeys(g.pending) {
			fmt.Fprintf(&b, "  pending %s until=%d\n", id, g.pending[id])
		}
	}
	for _, name := range sortedKeys(c.offsets) {
		for _, tp := range slices.SortedFunc(maps.Keys(c.offsets[name]), kafka.TopicPartition.Compare) {
			v := c.offsets[name][tp]
			fmt.Fprintf(&b, "offset %s %s=%d %q\n", name, tp, v.Offset, v.Metadata)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.appends)) {
		a := c.appends[id]
		if a.commit {
			fmt.Fprintf(&b, "append %d commit group=%s request=%d partitions=%d\n", id, a.group, a.request, len(a.offsets))
		} else {
			fmt.Fprintf(&b, "append %d group=%s generation=%d\n", id, a.group, a.generation)
		}
	}
	return b.String()
}

// CheckInvariants returns an error naming the first invariant of group or
// member that the current state breaks, or nil. For groups of protocol type
// "consumer" whose assignments all decode as Kafka's ConsumerProtocol
// assignment, it also checks that no partition is assigned to two members
// in Stable; other assignments are opaque bytes, as they are to Kafka.
// It remembers each group's generation to check that it never decreases
// within a leadership term (Load forgets).
func (c *Coordinator) CheckInvariants() error {
	for _, name := range sortedKeys(c.groups) {
		if err := c.checkGroup(c.groups[name]); err != nil {
			return fmt.Errorf("group %s: %w", name, err)
		}
	}
	return nil
}

func (c *Coordinator) checkGroup(g *group) error {
	if (g.state == Empty) != (len(g.members) == 0) {
		return fmt.Errorf("state %s with %d members", g.state, len(g.members))
	}
	if (g.leader == "") != (len(g.members) == 0) {
		return fmt.Errorf("leader %q with %d members", g.leader, len(g.members))
	}
	if g.leader != "" && g.members[g.leader] == nil {
		return fmt.Errorf("leader %q is not a member", g.leader)
	}
	if high, ok := c.highGen[g.name]; ok && g.generation < high {
		return fmt.Errorf("generation went back from %d to %d", high, g.generation)
	}
	c.highGen[g.name] = g.generation
	if g.storing != 0 && (g.state != CompletingRebalance || g.proposal == nil) {
		return fmt.Errorf("storing append %d in state %s", g.storing, g.state)
	}
	if (g.state == Empty && g.protocol != "") || ((g.state == CompletingRebalance || g.state == Stable) && g.protocol == "") {
		return fmt.Errorf("protocol %q in state %s", g.protocol, g.state)
	}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		if m.join != 0 && g.state != PreparingRebalance {
			return fmt.Errorf("member %s: join parked in state %s", id, g.state)
		}
		if m.sync != 0 && g.state != CompletingRebalance {
			return fmt.Errorf("member %s: sync parked in state %s", id, g.state)
		}
		if len(m.protocols) == 0 {
			return fmt.Errorf("member %s: no protocols", id)
		}
		if g.state == Stable && m.assignment == nil {
			return fmt.Errorf("member %s: no assignment in Stable", id)
		}
	}
	if g.state == Stable && g.protocolType == "consumer" {
		if tp, a, b, ok := g.doubleAssigned(); ok {
			return fmt.Errorf("%s assigned to %s and %s in generation %d", tp, a, b, g.generation)
		}
	}
	return nil
}

// doubleAssigned finds a partition assigned to two members, if every
// assignment decodes as a ConsumerProtocol assignment.
func (g *group) doubleAssigned() (kafka.TopicPartition, string, string, bool) {
	owner := make(map[kafka.TopicPartition]string)
	ids := g.memberIDs()
	decoded := make([]map[string][]int32, len(ids))
	for i, id := range ids {
		a, err := DecodeConsumerAssignment(g.members[id].assignment)
		if err != nil {
			return kafka.TopicPartition{}, "", "", false
		}
		decoded[i] = a
	}
	for i, id := range ids {
		for _, topic := range sortedKeys(decoded[i]) {
			for _, p := range decoded[i][topic] {
				tp := kafka.TopicPartition{Topic: topic, Partition: p}
				if prev, ok := owner[tp]; ok && prev != id {
					return tp, prev, id, true
				}
				owner[tp] = id
			}
		}
	}
	return kafka.TopicPartition{}, "", "", false
}

// describeAssignment renders a ConsumerProtocol assignment decoded, and any
// other one as quoted bytes.
func describeAssignment(b []byte) string { return groupmsg.DescribeAssignment(b) }

// GroupSummary is a copy of one group's state, for DescribeGroups and
// ListGroups and for checkers that compare assignments across members.
//
// Invariants: Members is sorted by MemberID; Assignment is nil for a
// member that has none in the current generation.
type GroupSummary struct {
	Name         string
	State        State
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	Members      []MemberSummary
}

// MemberSummary is one member of a GroupSummary.
type MemberSummary struct {
	MemberID   string
	ClientID   string
	Assignment []byte
}

// Group returns a copy of group name's state.
func (c *Coordinator) Group(name string) (GroupSummary, bool) {
	g, ok := c.groups[name]
	if !ok {
		return GroupSummary{}, false
	}
	s := GroupSummary{Name: name, State: g.state, Generation: g.generation,
		ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		s.Members = append(s.Members, MemberSummary{MemberID: id, ClientID: m.clientID, Assignment: slices.Clone(m.assignment)})
	}
	return s, true
}

// Groups returns the names of the groups this coordinator holds, sorted.
func (c *Coordinator) Groups() []string { return sortedKeys(c.groups) }
