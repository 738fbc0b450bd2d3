package sim

import (
	"bytes"
	"errors"
	"slices"
	"sync"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/storage"
)

// coverage recognises the protocol situations a run reaches
// (run.Situations) from what the simulator sees: the controller's
// decisions, messages on the network, replicas' logs and the disks.
type coverage struct {
	logEnd  map[replicaKey]logPos
	written map[writeKey]bool // idempotent batches acknowledged
	upAt    map[broker.NodeID]int64
}

type replicaKey struct {
	id  broker.NodeID
	inc int64
	tp  kafka.TopicPartition
}

type logPos struct {
	leo         int64
	truncations uint64
}

type writeKey struct {
	tp    kafka.TopicPartition
	pid   int64
	epoch int16
	seq   int32
}

// newCoverage starts from the partitions' first leaders.
func newCoverage(s *Sim, start []kafka.PartitionState) coverage {
	for _, p := range start {
		s.Elected(p.TopicPartition, p.Leader)
	}
	return coverage{
		logEnd:  map[replicaKey]logPos{},
		written: map[writeKey]bool{},
		upAt:    map[broker.NodeID]int64{},
	}
}

// election sees the controller elect p.Leader.
func (c *coverage) election(s *Sim, p kafka.PartitionState) {
	for _, id := range p.Replicas {
		if id != p.Leader && !slices.Contains(p.ISR, id) && s.nodes[id].b != nil {
			s.Reached(run.SitStaleReplicaElection)
			break
		}
	}
	s.Elected(p.TopicPartition, p.Leader)
}

// truncation sees a replica's log end: one that went down with a
// truncation, under an epoch rule, is a truncation by epoch.
func (c *coverage) truncation(s *Sim, tp kafka.TopicPartition, v replicaView) {
	k := replicaKey{v.id, v.inc, tp}
	now := logPos{leo: v.r.LEO(), truncations: v.r.Truncations()}
	if was, ok := c.logEnd[k]; ok && now.truncations > was.truncations && now.leo < was.leo &&
		s.Spec.Broker.Truncation != partition.TruncateToHW {
		s.Reached(run.SitEpochTruncation)
	}
	c.logEnd[k] = now
}

// epochAsked sees a follower name epoch to its leader to, in an epoch
// query or a fetch.
func (c *coverage) epochAsked(s *Sim, to broker.NodeID, tp kafka.TopicPartition, epoch int32) {
	if n := s.nodes[to]; n.b != nil {
		if r, ok := n.b.Replica(tp); ok && r.Role() == partition.RoleLeader && unknownEpoch(r.EpochCache(), epoch) {
			s.Reached(run.SitEpochUnknownToLeader)
		}
	}
}

// message sees one message enter the network.
func (c *coverage) message(s *Sim, env broker.Envelope) {
	_, _ = coverageWatch().Handle(sent{c, s, env}, env.Msg)
	if env.From > broker.ControllerID && env.From < broker.ClientIDBase && env.To >= broker.ClientIDBase {
		c.zombie(s, env)
	}
}

// sent is what a coverage watcher sees of a message entering the network.
type sent struct {
	c   *coverage
	s   *Sim
	env broker.Envelope
}

// coverageWatch is what coverage looks for in each kind of message.
var coverageWatch = sync.OnceValue(func() *kafka.Handlers[sent] {
	h := &kafka.Handlers[sent]{}
	kafka.On(h, func(w sent, m partition.FetchResponse) error {
		// Consumers' fenced fetches are seen by the clients (traffic).
		if errors.Is(m.Err, kafka.ErrFencedLeaderEpoch) || errors.Is(m.Err, kafka.ErrUnknownLeaderEpoch) {
			w.s.Reached(run.SitFencedFetch)
		}
		return nil
	})
	kafka.On(h, func(w sent, m partition.EpochEndRequest) error {
		w.c.epochAsked(w.s, w.env.To, m.TopicPartition, m.Epoch)
		return nil
	})
	kafka.On(h, func(w sent, m partition.FetchRequest) error {
		// On the fetch path the fetch names the epoch (LastFetchedEpoch).
		if m.LastFetchedEpoch >= 0 {
			w.c.epochAsked(w.s, w.env.To, m.TopicPartition, m.LastFetchedEpoch)
		}
		return nil
	})
	kafka.On(h, func(w sent, m kafka.AlterPartitionAnswer) error {
		if m.Err != nil {
			w.s.Reached(run.SitISRChangeRefused)
		}
		return nil
	})
	kafka.On(h, func(w sent, m kafka.AlterPartition) error {
		if n := w.s.nodes[w.env.From]; n.b != nil {
			if r, ok := n.b.Replica(m.TopicPartition); ok && len(m.NewISR) > len(r.ISR()) {
				if cl := w.s.inv.committed[m.TopicPartition]; cl != nil && r.HW() < cl.hw {
					w.s.Reached(run.SitExpandWhileHWBehind)
				}
			}
		}
		return nil
	})
	kafka.On(h, func(w sent, m broker.GroupResponse) error {
		// A heartbeat or a commit refused as a zombie's: a member of a
		// generation or a membership the group has ended.
		_, heartbeat := m.Resp.(group.HeartbeatResponse)
		_, commit := m.Resp.(group.CommitResponse)
		if !heartbeat && !commit {
			return nil
		}
		err := m.Resp.Failure()
		for _, zombie := range []error{kafka.ErrIllegalGeneration, kafka.ErrUnknownMemberID, kafka.ErrRebalanceInProgress} {
			if errors.Is(err, zombie) {
				w.s.Reached(run.SitZombieCommit)
			}
		}
		return nil
	})
	return h
})

// unknownEpoch reports whether a leader whose epoch cache is c never held
// epoch, though it holds a later one: a follower asking about it wrote
// records in an epoch the leader never had.
func unknownEpoch(c storage.EpochCache, epoch int32) bool {
	latest, ok := c.Latest()
	if !ok || latest <= epoch {
		return false
	}
	return !slices.ContainsFunc(c.Entries(), func(e storage.EpochEntry) bool { return e.Epoch == epoch })
}

// zombie sees a broker answer a client about a partition it believes it
// leads in an epoch the controller has ended.
func (c *coverage) zombie(s *Sim, env broker.Envelope) {
	m, ok := env.Msg.(kafka.Partitioned)
	if !ok || (m.Kind() != (broker.ProduceResponse{}).Kind() && m.Kind() != (broker.FetchResponse{}).Kind()) {
		return
	}
	tp := m.Subject()
	n := s.nodes[env.From]
	if n.b == nil {
		return
	}
	r, ok := n.b.Replica(tp)
	p, known := s.controller().Partition(tp)
	if ok && known && r.Role() == partition.RoleLeader && r.LeaderEpoch() < p.LeaderEpoch {
		s.Reached(run.SitZombieAnswer)
	}
}

// acknowledged sees an idempotent batch acknowledged: a second answer to
// the same producer's batch is a retry deduplicated.
func (c *coverage) acknowledged(s *Sim, tp kafka.TopicPartition, p sentProduce) {
	if p.pid < 0 {
		return
	}
	k := writeKey{tp, p.pid, p.epoch, p.seq}
	if c.written[k] {
		s.Reached(run.SitDedupHit)
	}
	c.written[k] = true
}

// down sees broker n struck down: soon after it came back, that is a
// restart in a row.
func (c *coverage) down(s *Sim, n *node) {
	if at, ok := c.upAt[n.id]; ok && s.Now-at < s.Spec.Controller.SessionTimeoutMs {
		s.Reached(run.SitRestartInARow)
	}
}

// up sees broker n come back.
func (c *coverage) up(s *Sim, n *node) { c.upAt[n.id] = s.Now }

// refused sees broker from answer a produce with an error: if its log
// holds the batch, the error came after the append.
func (c *coverage) refused(s *Sim, from broker.NodeID, tp kafka.TopicPartition, p sentProduce) {
	n := s.nodes[from]
	if n.b == nil || p.first == nil {
		return
	}
	r, ok := n.b.Replica(tp)
	if !ok {
		return
	}
	log := r.Log()
	for i := len(log) - 1; i >= 0 && i >= len(log)-64; i-- {
		if v := firstValue(&log[i]); v != nil && bytes.Equal(v, p.first) {
			s.Reached(run.SitRefusedAfterAppend)
			return
		}
	}
}
