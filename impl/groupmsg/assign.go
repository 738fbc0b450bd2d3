package groupmsg

import (
	"maps"
	"slices"
)

// Subscription is one member's input to a client-side assignor: the topics
// it subscribes to.
type Subscription struct {
	MemberID string
	Topics   []string
}

// Assignment maps a member id to topic to the partitions assigned, sorted.
// Every member of the input appears, with an empty map if it got nothing.
type Assignment map[string]map[string][]int32

// Range is Kafka's RangeAssignor (partition.assignment.strategy "range"),
// as the group leader runs it. For each topic on its own, in sorted order:
// the members subscribed to it, sorted by member id, get consecutive ranges
// of its partitions in order; with n partitions and m members each gets
// n/m, and the first n%m members one more. Topics missing from partitions
// (unknown to the leader's metadata) are skipped.
func Range(members []Subscription, partitions map[string]int32) Assignment {
	out, subs := newAssignment(members)
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		var ms []string
		for _, id := range slices.Sorted(maps.Keys(subs)) {
			if subs[id][topic] {
				ms = append(ms, id)
			}
		}
		if len(ms) == 0 {
			continue
		}
		n, m := partitions[topic], int32(len(ms))
		per, extra := n/m, n%m
		for i, id := range ms {
			start := int32(i)*per + min(int32(i), extra)
			count := per
			if int32(i) < extra {
				count++
			}
			for p := start; p < start+count; p++ {
				out[id][topic] = append(out[id][topic], p)
			}
		}
	}
	return out
}

// RoundRobin is Kafka's RoundRobinAssignor ("roundrobin"): every partition
// of every subscribed topic, sorted by topic then partition, is dealt to
// the members sorted by id in turn; a member not subscribed to the
// partition's topic is skipped, and the deal goes on from the member after
// the one that took the partition.
func RoundRobin(members []Subscription, partitions map[string]int32) Assignment {
	out, subs := newAssignment(members)
	ids := slices.Sorted(maps.Keys(subs))
	next := 0
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		subscribed := false
		for _, id := range ids {
			subscribed = subscribed || subs[id][topic]
		}
		if !subscribed {
			continue
		}
		for p := range partitions[topic] {
			for !subs[ids[next]][topic] {
				next = (next + 1) % len(ids)
			}
			out[ids[next]][topic] = append(out[ids[next]][topic], p)
			next = (next + 1) % len(ids)
		}
	}
	return out
}

// newAssignment returns an empty assignment for every member and each
// member's subscriptions as a set. A member listed twice counts once, with
// the union of its topics.
func newAssignment(members []Subscription) (Assignment, map[string]map[string]bool) {
	out := make(Assignment, len(members))
	subs := make(map[string]map[string]bool, len(members))
	for _, m := range members {
		if subs[m.MemberID] == nil {
			subs[m.MemberID] = make(map[string]bool)
			out[m.MemberID] = make(map[string][]int32)
		}
		for _, t := range m.Topics {
			subs[m.MemberID][t] = true
		}
	}
	return out, subs
}
