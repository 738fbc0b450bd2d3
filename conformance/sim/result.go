package sim

import (
	"fmt"
	"slices"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

func (s *Sim) result() *run.Result {
	for i := range s.History {
		if s.History[i].Return < 0 {
			// Still open when the run ended: the client never learnt.
			s.History[i].Outcome = linearizability.OutcomeUnknown
		}
	}
	ctrl := s.controller()
	for _, p := range ctrl.Metadata() {
		if p.Leader < 0 {
			s.Stats.OfflineAtEnd = append(s.Stats.OfflineAtEnd, p.TopicPartition.String())
		}
		for _, b := range p.Replicas {
			if ctrl.IsAlive(b) && !slices.Contains(p.ISR, b) {
				s.Stats.OutOfISRAtEnd = append(s.Stats.OutOfISRAtEnd, fmt.Sprintf("%s/%d", p.TopicPartition, b))
			}
		}
	}
	r := &run.Result{
		Spec:        s.Spec,
		Violations:  s.inv.violations,
		History:     s.History,
		Notes:       s.Notes,
		Stats:       s.Stats,
		TraceHash:   s.trace.sum(),
		Reached:     s.Situations,
		LossByFault: s.LossByFault,
	}
	if s.proto != nil {
		r.Protocol = &s.proto.report
	}
	return r
}
