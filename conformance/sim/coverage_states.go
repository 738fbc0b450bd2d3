package sim

import (
	"fmt"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// lookups are the ListOffsets requests in flight, by who asked: whether
// each asked for the latest offset or the earliest.
type lookups map[reqKey]bool

// followerFetches are the replica fetches in flight, by the follower that
// sent them: how many truncations its replica had made when it did.
type followerFetches map[reqKey]uint64

// sentLookup and sentFollowerFetch note a request entering the network.
func (inv *invariants) sentLookup(env broker.Envelope, m broker.ListOffsetsRequest) {
	inv.lookups[reqKey{env.From, m.TopicPartition, m.Correlation}] = m.Latest
}

func (inv *invariants) sentFollowerFetch(env broker.Envelope, m partition.FetchRequest) {
	if n := inv.s.nodes[env.From]; n.b != nil {
		if r, ok := n.b.Replica(m.TopicPartition); ok {
			inv.followerFetches[reqKey{env.From, m.TopicPartition, m.ID}] = r.Truncations()
		}
	}
}

// checkLookup judges a ListOffsets answer as it leaves its broker: latest
// is the answering leader's HW (Kafka's answer for read_uncommitted, never
// its log end: records above the HW may never commit), earliest its log
// start. An answer given while the leader's HW is below its log end is
// the situation a "latest = log end" bug needs. The bound is the leader's
// own HW, not the committed one the invariants track: a deposed leader not
// yet told may still advance its HW with the followers that have not
// heard either, and answer from it, as Kafka's does.
func (inv *invariants) checkLookup(from broker.NodeID, to broker.NodeID, m broker.ListOffsetsResponse) {
	k := reqKey{to, m.TopicPartition, m.Correlation}
	latest, ok := inv.lookups[k]
	delete(inv.lookups, k)
	n := inv.s.nodes[from]
	if !ok || m.Err != nil || n.b == nil {
		return
	}
	r, ok := n.b.Replica(m.TopicPartition)
	if !ok || r.Role() != partition.RoleLeader {
		return
	}
	if r.HW() < r.LEO() {
		inv.s.Reached(run.SitLookupHWBehind)
	}
	if why := lookupProblem(latest, m.Offset, r.LogStart(), r.HW()); why != "" {
		inv.fail(run.InvOffsetLookup, fmt.Sprintf("%s: broker %d answered a ListOffsets of %d: %s", m.TopicPartition, from, to, why))
	}
}

// lookupProblem says why a ListOffsets answer of offset is wrong from a
// leader whose log starts at logStart and whose HW is hw; "" when it is
// not.
func lookupProblem(latest bool, offset, logStart, hw int64) string {
	switch {
	case latest && offset != hw:
		return fmt.Sprintf("latest %d is not the leader's HW %d: a consumer would start at records that may never commit, or skip committed ones", offset, hw)
	case !latest && offset != logStart:
		return fmt.Sprintf("earliest %d is not the leader's log start %d", offset, logStart)
	}
	return ""
}

// delivered sees a message reach a live broker, before it handles it: a
// follower's fetch answered by a broker no longer its leader, after the
// follower truncated its log since it asked.
func (c *coverage) delivered(s *Sim, env broker.Envelope) {
	m, ok := env.Msg.(partition.FetchResponse)
	if !ok {
		return
	}
	k := reqKey{env.To, m.TopicPartition, m.ID}
	was, ok := s.inv.followerFetches[k]
	delete(s.inv.followerFetches, k)
	n := s.nodes[env.To]
	if !ok || n.b == nil {
		return
	}
	if r, ok := n.b.Replica(m.TopicPartition); ok && r.Truncations() > was && r.Leader() != int32(env.From) {
		s.Reached(run.SitStaleFetchAnswer)
	}
}
