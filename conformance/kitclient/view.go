package kitclient

import (
	"math/rand/v2"
	"slices"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// clusterView is what a client knows of the cluster from metadata: each
// partition's leader and epoch, each topic's partition count, the live
// brokers, and the broker that last left a request unanswered. The
// producer and the consumer keep one each.
type clusterView struct {
	leaders map[kafka.TopicPartition]leaderInfo
	topics  map[string]int32   // partition count
	live    []clientmsg.NodeID // sorted
	silent  clientmsg.NodeID   // the broker that last left a request unanswered
}

func newClusterView(silent clientmsg.NodeID) clusterView {
	return clusterView{leaders: map[kafka.TopicPartition]leaderInfo{}, topics: map[string]int32{}, silent: silent}
}

// merge takes partition states, keeping per partition the one with the
// highest leader epoch (a lagging broker's answer must not move a
// partition back to a deposed leader), and the live brokers if named.
func (v *clusterView) merge(parts []kafka.PartitionState, live []int32) {
	for _, s := range parts {
		tp := kafka.TopicPartition{Topic: s.Topic, Partition: s.Partition}
		if cur, ok := v.leaders[tp]; ok && s.LeaderEpoch < cur.epoch {
			continue
		}
		v.leaders[tp] = leaderInfo{leader: s.Leader, epoch: s.LeaderEpoch}
		if s.Partition+1 > v.topics[s.Topic] {
			v.topics[s.Topic] = s.Partition + 1
		}
	}
	if len(live) > 0 {
		v.live = v.live[:0]
		for _, id := range live {
			v.live = append(v.live, clientmsg.NodeID(id))
		}
		slices.Sort(v.live)
	}
}

// pick chooses a random broker among the live ones the last metadata
// named and the bootstrap ones, avoiding the silent one: metadata can be
// stale (it may name a broker that died since), and a client must not keep
// asking a dead broker.
func (v *clusterView) pick(bootstrap []int32, rng *rand.Rand) (clientmsg.NodeID, bool) {
	cands := slices.Clone(v.live)
	for _, id := range bootstrap {
		if !slices.Contains(cands, clientmsg.NodeID(id)) {
			cands = append(cands, clientmsg.NodeID(id))
		}
	}
	if len(cands) > 1 {
		cands = slices.DeleteFunc(cands, func(id clientmsg.NodeID) bool { return id == v.silent })
	}
	if len(cands) == 0 {
		return 0, false
	}
	return cands[rng.IntN(len(cands))], true
}
