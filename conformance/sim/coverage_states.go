package sim

import (
	"fmt"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
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
// is at most the committed HW (Kafka answers the leader's HW, never its
// log end), earliest the answering leader's log start. An answer given
// while the leader's HW is below its log end is the situation a "latest =
// log end" bug needs.
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
	if why := lookupProblem(latest, m.Offset, r.LogStart(), inv.committedHW(m.TopicPartition)); why != "" {
		inv.fail(run.InvOffsetLookup, fmt.Sprintf("%s: broker %d answered a ListOffsets of %d: %s", m.TopicPartition, from, to, why))
	}
}

// committedHW is the true HW of tp (-1 before any).
func (inv *invariants) committedHW(tp kafka.TopicPartition) int64 {
	if c := inv.committed[tp]; c != nil {
		return c.hw
	}
	return -1
}

// lookupProblem says why a ListOffsets answer of offset is wrong from a
// leader whose log starts at logStart, the partition committed up to hw;
// "" when it is not.
func lookupProblem(latest bool, offset, logStart, hw int64) string {
	switch {
	case latest && hw >= 0 && offset > hw:
		return fmt.Sprintf("latest %d is past the committed HW %d: a consumer would skip to records that may never commit", offset, hw)
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
