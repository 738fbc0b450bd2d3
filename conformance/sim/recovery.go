package sim

import (
	"fmt"
	"strings"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// recovered records an unclean recovery's election (controller
// recovery.go): an unclean election, noted with every answer it chose
// from and with what it may have cost. It also reads every live replica's
// log, as the controller cannot, to see whether the one elected was the
// longest of them (Stats.RecoveryNotLongest), which case unclean-recovery
// requires: of those that answered, and of those that could have (calm).
func (s *Sim) recovered(e controller.Event) {
	s.Stats.Elections++
	s.Stats.UncleanElections++
	s.Stats.RecoveryElections++
	st := e.State
	n := run.ElectionNote(st.TopicPartition, st.Leader, st.LeaderEpoch, true)
	var answers []string
	heard := map[int32]bool{}
	for _, a := range e.Ends {
		answers = append(answers, fmt.Sprintf("broker %d at %s", a.Broker, a.LogEnd))
		heard[a.Broker] = true
	}
	var unheard []int32
	for _, id := range st.Replicas {
		if !heard[id] {
			unheard = append(unheard, id)
		}
	}
	elected, ok := s.logEnd(st.Leader, st.TopicPartition)
	n.Text = fmt.Sprintf("%s: unclean recovery elected broker %d in epoch %d, its log ending at epoch/offset %s; answers: %s; records past that end on the others are lost",
		st.TopicPartition, st.Leader, st.LeaderEpoch, elected, strings.Join(answers, ", "))
	if len(unheard) > 0 {
		n.Text += fmt.Sprintf(", and what brokers %v, not heard from, held cannot be known", unheard)
	}
	since := s.Now - s.Spec.Controller.UncleanRecoveryTimeoutMs
	for _, id := range st.Replicas {
		other, live := s.logEnd(id, st.TopicPartition)
		if ok && live && other.Compare(elected) > 0 && (heard[id] || s.calm(id, since)) {
			s.Stats.RecoveryNotLongest++
			n.Text += fmt.Sprintf(" (broker %d, alive, held more: %s)", id, other)
			break
		}
	}
	s.Note(n)
	if len(e.Ends) >= 2 {
		s.Reached(run.SitRecoveryChoice)
	}
	if s.proto != nil {
		s.proto.leave("steps after an unclean recovery (the model elects the first live replica, not the longest)")
	}
}

// logEnd reads where broker id's log of tp ends, if its process runs,
// answers (not paused), and the controller holds it alive and not
// stopping: a replica an unclean recovery could have heard from.
func (s *Sim) logEnd(id int32, tp kafka.TopicPartition) (kafka.LogEnd, bool) {
	c := s.controller()
	if int(id) >= len(s.nodes) || id < 1 || !c.IsAlive(id) || c.ShuttingDown(id) {
		return kafka.LogEnd{}, false
	}
	node := s.nodes[id]
	if node.b == nil || node.paused {
		return kafka.LogEnd{}, false
	}
	end := kafka.LogEnd{LastEpoch: -1}
	r, ok := node.b.Replica(tp)
	if !ok {
		return end, true
	}
	end.Offset = r.LEO()
	cache := r.EpochCache()
	for _, e := range cache.Entries() {
		if e.StartOffset < end.Offset {
			end.LastEpoch = e.Epoch // the epoch of the last record
		}
	}
	return end, true
}

// calm reports whether broker id had no fault in force or ending since
// since (the recovery's wait for answers: its timeout before the
// decision), on a network that drops nothing: a replica the recovery
// would have heard from. A replica slowed, paused, isolated or with its
// messages dropped in that window may answer after the controller gave up
// waiting, and the controller decides on the answers it has (SEMANTICS,
// Unclean recovery).
func (s *Sim) calm(id int32, since int64) bool {
	n := s.nodes[id]
	if n.faulted > 0 || n.slowMs > 0 || s.Spec.Network.DropRate > 0 {
		return false
	}
	for i := len(s.Notes) - 1; i >= 0 && s.Notes[i].AtMs >= since; i-- {
		if k := s.Notes[i].Kind; s.Notes[i].Node == int(id) && (k == run.NoteHeal || k == run.NoteFault) {
			return false
		}
	}
	return true
}
