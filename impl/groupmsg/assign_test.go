package groupmsg

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// TestRangeAssignor checks Kafka's RangeAssignor example: per topic, sorted
// members get consecutive ranges, the first n%m one partition more.
// Reference: Kafka RangeAssignor javadoc (C0, C1; t0, t1 of 3 partitions).
func TestRangeAssignor(t *testing.T) {
	members := []Subscription{{"C1", []string{"t0", "t1"}}, {"C0", []string{"t0", "t1"}}}
	got := Range(members, map[string]int32{"t0": 3, "t1": 3})
	assert.Equal(t, Assignment{
		"C0": {"t0": {0, 1}, "t1": {0, 1}},
		"C1": {"t0": {2}, "t1": {2}},
	}, got)

	got = Range([]Subscription{{"a", []string{"x"}}, {"b", []string{"y"}}, {"c", []string{"x", "y", "missing"}}},
		map[string]int32{"x": 5, "y": 1})
	assert.Equal(t, Assignment{
		"a": {"x": {0, 1, 2}},
		"b": {"y": {0}},
		"c": {"x": {3, 4}},
	}, got)
}

// TestRoundRobinAssignor checks Kafka's RoundRobinAssignor examples.
// Reference: Kafka RoundRobinAssignor javadoc (identical and differing
// subscriptions).
func TestRoundRobinAssignor(t *testing.T) {
	members := []Subscription{{"C0", []string{"t0", "t1"}}, {"C1", []string{"t0", "t1"}}}
	assert.Equal(t, Assignment{
		"C0": {"t0": {0, 2}, "t1": {1}},
		"C1": {"t0": {1}, "t1": {0, 2}},
	}, RoundRobin(members, map[string]int32{"t0": 3, "t1": 3}))

	// C0: t0; C1: t0, t1; C2: t0, t1, t2 with 1, 2, 3 partitions.
	members = []Subscription{{"C0", []string{"t0"}}, {"C1", []string{"t0", "t1"}}, {"C2", []string{"t0", "t1", "t2"}}}
	assert.Equal(t, Assignment{
		"C0": {"t0": {0}},
		"C1": {"t1": {0}},
		"C2": {"t1": {1}, "t2": {0, 1, 2}},
	}, RoundRobin(members, map[string]int32{"t0": 1, "t1": 2, "t2": 3}))
}

// TestAssignorsCoverOnce checks, over random subscriptions, that both
// assignors give every partition of every subscribed topic to exactly one
// member subscribed to it, are deterministic, and do not depend on the
// order members are listed in.
func TestAssignorsCoverOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 300 {
		topics := map[string]int32{}
		for j := range rng.IntN(4) + 1 {
			topics[fmt.Sprintf("t%d", j)] = int32(rng.IntN(7))
		}
		var members []Subscription
		for j := range rng.IntN(5) + 1 {
			s := Subscription{MemberID: fmt.Sprintf("m%d", j)}
			for tp := range topics {
				if rng.IntN(2) == 0 {
					s.Topics = append(s.Topics, tp)
				}
			}
			slices.Sort(s.Topics)
			members = append(members, s)
		}
		for name, assign := range map[string]func([]Subscription, map[string]int32) Assignment{"range": Range, "roundrobin": RoundRobin} {
			got := assign(members, topics)
			shuffled := slices.Clone(members)
			rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
			require.Equal(t, got, assign(shuffled, topics), "%s case %d: order of members matters", name, i)
			owner := map[kafka.TopicPartition]string{}
			for _, m := range members {
				for topic, ps := range got[m.MemberID] {
					require.Contains(t, m.Topics, topic, "%s case %d", name, i)
					for _, p := range ps {
						tp := kafka.TopicPartition{Topic: topic, Partition: p}
						_, dup := owner[tp]
						require.False(t, dup, "%s case %d: %s twice", name, i, tp)
						owner[tp] = m.MemberID
					}
				}
			}
			for topic, n := range topics {
				subscribed := slices.ContainsFunc(members, func(s Subscription) bool { return slices.Contains(s.Topics, topic) })
				for p := range n {
					_, ok := owner[kafka.TopicPartition{Topic: topic, Partition: p}]
					require.Equal(t, subscribed, ok, "%s case %d: %s-%d", name, i, topic, p)
				}
			}
		}
	}
}
