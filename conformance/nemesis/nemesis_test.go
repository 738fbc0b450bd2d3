package nemesis

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// cluster is a Cluster with one partition state for every partition.
type cluster struct {
	state   kafka.PartitionState
	faulted map[int]bool
	coord   int // > 0: it is a Coordinators naming this broker
}

func (c *cluster) Faulted(id int) bool { return c.faulted[id] }
func (c *cluster) InSync() bool        { return true }
func (c *cluster) Partition(kafka.TopicPartition) (kafka.PartitionState, bool) {
	return c.state, true
}
func (c *cluster) ConsumersUp() []int { return nil }

type coordinated struct{ *cluster }

func (c coordinated) Coordinator() (int, bool) { return c.coord, c.coord > 0 }

// A follower fault strikes a follower without a fault of its own while
// there is one, so two at once strike both followers; only when every
// follower has one does it strike one of them again.
func TestFollowerFaultsStrikeDistinctFollowers(t *testing.T) {
	s := run.DefaultSpec(1)
	c := &cluster{state: kafka.PartitionState{Leader: 2, Replicas: []int32{1, 2, 3}}, faulted: map[int]bool{}}
	f := run.Fault{Kind: run.FaultCrash, Role: run.RoleFollower}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		c.faulted = map[int]bool{1: true}
		id, ok := Strike(&s, c, f, rng)
		require.True(t, ok)
		require.Equal(t, 3, id, "1 is down already")
		c.faulted[3] = true
		id, ok = Strike(&s, c, f, rng)
		require.True(t, ok)
		require.Contains(t, []int{1, 3}, id, "every follower is down: one of them")
	}
}

// A cluster that can say which broker coordinates the group is asked;
// one that cannot has the coordinator lead the group's offsets
// partition; a cluster that finds none strikes nothing.
func TestCoordinatorFaultAsksTheCluster(t *testing.T) {
	s := run.DefaultSpec(1)
	s.Workload.Group = "g"
	c := &cluster{state: kafka.PartitionState{Leader: 2, Replicas: []int32{1, 2, 3}}, faulted: map[int]bool{}, coord: 3}
	f := run.Fault{Kind: run.FaultCrash, Role: run.RoleCoordinator}
	rng := rand.New(rand.NewPCG(1, 2))
	id, ok := Strike(&s, c, f, rng)
	require.True(t, ok)
	require.Equal(t, 2, id, "no Coordinator method: the offsets partition's leader")
	id, ok = Strike(&s, coordinated{c}, f, rng)
	require.True(t, ok)
	require.Equal(t, 3, id)
	c.coord = 0
	_, ok = Strike(&s, coordinated{c}, f, rng)
	require.False(t, ok)
}
