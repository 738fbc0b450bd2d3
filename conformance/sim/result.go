package sim

import "github.com/watermarkhq/watermark/linearizability"

// Stats counts what a run did.
type Stats struct {
	Steps            int
	EndMs            int64
	Messages         int
	Dropped          int
	Produced         int
	Faults           int
	Crashes          int
	PowerLosses      int
	FailpointsFired  int
	StepLimitHit     bool
	FinalReadDone    bool // the final read covered every partition
	Elections        int
	UncleanElections int
	ProducerRestarts int
	Resends          int
	ISRShrinks       int
	ISRExpands       int
	// Group consumers.
	ConsumerCrashes int
	Rebalances      int // joins: a member entering a generation
	ConsumerFetches int
	Commits         int // accepted
	Seeks           int
}

// Note is a fault, failpoint or heal at a point in time, for annotating
// histories and reports.
type Note struct {
	AtMs int64
	Text string
}

// Result is what a run produced.
type Result struct {
	Config Config
	// Violation is the first invariant that failed, nil if none did;
	// Violations has the first failure of each (more than one only with
	// ContinueAfterViolation).
	Violation  *Violation
	Violations []*Violation
	History    []linearizability.Op
	Notes      []Note
	Stats      Stats
	// TraceHash is a hash of every step: equal configs give equal hashes.
	TraceHash uint64
	// Live marks a run on real processes (RunLive): real time, no
	// invariants, and statistics seen from outside through metadata.
	Live bool
	// Protocol is trace validation's verdict (Config.ValidateProtocol).
	Protocol *ProtocolReport
}

func (s *Sim) result() *Result {
	for i := range s.history {
		if s.history[i].Return < 0 {
			// Still open when the run ended: the client never learnt.
			s.history[i].Outcome = linearizability.OutcomeUnknown
		}
	}
	var first *Violation
	if len(s.inv.violations) > 0 {
		first = s.inv.violations[0]
	}
	r := &Result{
		Config:     s.cfg,
		Violation:  first,
		Violations: s.inv.violations,
		History:    s.history,
		Notes:      s.notes,
		Stats:      s.stats,
		TraceHash:  s.trace.sum(),
	}
	if s.proto != nil {
		r.Protocol = &s.proto.report
	}
	return r
}
