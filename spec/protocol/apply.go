package protocol

import "slices"

// apply carries out an enabled action on s.
func (m Model) apply(s *State, a Action) {
	switch a.Kind {
	case Produce:
		r := &s.Replicas[a.R]
		v := s.Ghost.Next
		s.Ghost.Next++
		r.appendEntry(Entry{Value: v, Epoch: r.Epoch})
		s.Ghost.Pending = append(s.Ghost.Pending, Pending{Value: v, R: a.R, Inc: r.Inc, Epoch: r.Epoch})
		m.maybeAdvanceHW(s, a.R)
	case Deliver:
		s.Net = removeMsg(s.Net, &a.Msg)
		m.deliver(s, a.Msg, a.K)
	case Lose:
		s.Net = removeMsg(s.Net, &a.Msg)
	case Resend:
		r := &s.Replicas[a.R]
		if r.Await == AwaitEpoch {
			m.sendEpochQuery(s, a.R, r.Query)
		} else {
			m.sendFetch(s, a.R)
		}
	case Learn:
		m.learn(s, a.R)
	case LearnISR:
		s.Replicas[a.R].ISR = s.Ctrl.ISR
		m.maybeAdvanceHW(s, a.R)
	case ShrinkISR:
		s.Ctrl.ISR &^= 1 << uint(a.F)
		s.Replicas[a.R].ISR = s.Ctrl.ISR
		m.maybeAdvanceHW(s, a.R)
	case ExpandISR:
		s.Ctrl.ISR |= 1 << uint(a.F)
		s.Replicas[a.R].ISR = s.Ctrl.ISR
	case Crash, PowerLoss:
		r := &s.Replicas[a.R]
		if a.Kind == PowerLoss {
			r.truncate(a.K)
			s.Ghost.PowerLosses++
		} else {
			s.Ghost.Crashes++
		}
		*r = Replica{Inc: r.Inc, Log: r.Log, Epochs: r.Epochs, HW: r.HW, Leader: None}
		dropPending(s, a.R)
	case Restart:
		r := &s.Replicas[a.R]
		r.Up = true
		r.Inc++
		r.HW = a.HW
		_ = m.register(&s.Ctrl, a.R, r.Inc, a.Elect)
	case Fence:
		if s.Replicas[a.R].Up {
			s.Ghost.Pauses++
		}
		_ = m.fence(&s.Ctrl, a.R, a.Elect)
	case Unfence:
		_ = m.unfence(&s.Ctrl, a.R, a.Elect)
	case Reelect:
		s.Ctrl.Leader = a.Elect
		s.Ctrl.Epoch++
		s.Ghost.Reelections++
	}
	m.extendCommitted(s)
}

// learn makes r act on the controller's current state: lead, follow, or
// wait when the partition has no leader.
func (m Model) learn(s *State, id int32) {
	c := &s.Ctrl
	dropPending(s, id) // produces parked in the old epoch fail with NOT_LEADER
	switch c.Leader {
	case id:
		m.becomeLeader(s, id, c.Epoch)
	case None:
		r := &s.Replicas[id]
		r.Epoch, r.Leader, r.Await, r.ISR, r.Known = c.Epoch, None, AwaitNothing, 0, [MaxReplicas]Known{}
	default:
		m.becomeFollower(s, id, c.Epoch, c.Leader)
	}
}

func (m Model) becomeLeader(s *State, id, epoch int32) {
	r := &s.Replicas[id]
	r.Epoch, r.Leader, r.Await, r.ISR = epoch, id, AwaitNothing, s.Ctrl.ISR
	// ISR members have not reported in this epoch: HW waits for them.
	r.Known = [MaxReplicas]Known{}
	for i := range s.N() {
		r.Known[i] = Known{LEO: -1}
	}
	r.assignEpoch(epoch, r.LEO())
	m.maybeAdvanceHW(s, id)
}

// becomeFollower resolves where r's log may diverge from the new leader's,
// by the variant's rule, then fetches.
func (m Model) becomeFollower(s *State, id, epoch, leader int32) {
	r := &s.Replicas[id]
	if m.Variant.Truncation == TruncateEpochNoBump && r.Leader == leader && r.Leader != id && r.Leader != None {
		// Before KAFKA-7164's fix: the same leader in a newer epoch, so the
		// follower goes on fetching without truncating.
		r.Epoch = epoch
		m.sendFetch(s, id)
		return
	}
	r.Epoch, r.Leader, r.ISR, r.Known = epoch, leader, 0, [MaxReplicas]Known{}
	switch {
	case m.Variant.Truncation == TruncateHW:
		r.truncate(r.HW)
		m.sendFetch(s, id)
	case r.latestEpoch() < 0 || m.Variant.Truncation.onFetch():
		// On the fetch path the fetch itself finds any divergence.
		m.sendFetch(s, id)
	default:
		m.sendEpochQuery(s, id, r.latestEpoch())
	}
}

func (m Model) sendFetch(s *State, id int32) {
	r := &s.Replicas[id]
	r.Await = AwaitFetch
	s.Net = append(s.Net, Msg{Kind: FetchRequest, From: id, To: r.Leader, Inc: r.Inc, Epoch: r.Epoch, Offset: r.LEO(),
		Query: m.lastFetched(r)})
}

// lastFetched is the epoch r's fetches name: its latest cached epoch on
// the fetch path, -1 otherwise (and when its cache is empty).
func (m Model) lastFetched(r *Replica) int32 {
	if !m.Variant.Truncation.onFetch() {
		return -1
	}
	return r.latestEpoch()
}

func (m Model) sendEpochQuery(s *State, id, epoch int32) {
	r := &s.Replicas[id]
	r.Await, r.Query = AwaitEpoch, epoch
	s.Net = append(s.Net, Msg{Kind: EpochRequest, From: id, To: r.Leader, Inc: r.Inc, Epoch: r.Epoch, Query: epoch})
}

// deliver has msg.To handle msg. A request a leader refuses (not leading,
// another epoch under KIP-320, a stale incarnation) gets an error answer in
// Kafka, after which the follower backs off and asks again: here it is
// consumed, and the follower's Resend does the rest.
func (m Model) deliver(s *State, msg Msg, k int32) {
	to := &s.Replicas[msg.To]
	switch msg.Kind {
	case FetchRequest, EpochRequest:
		if !to.leads(msg.To) || (m.Variant.fences() && msg.Epoch != to.Epoch) {
			return
		}
		answer := Msg{From: msg.To, To: msg.From, Inc: msg.Inc, Epoch: msg.Epoch}
		if msg.Kind == EpochRequest {
			answer.Kind, answer.Asked = EpochAnswer, msg.Query
			if m.Variant.Truncation == TruncateEpochKIP101 {
				answer.Query, answer.End = -1, to.endOffsetKIP101(msg.Query)
			} else {
				answer.Query, answer.End = to.endOffsetFor(msg.Query)
			}
			s.Net = append(s.Net, answer)
			return
		}
		known := &to.Known[msg.From]
		switch {
		case msg.Inc < known.Inc:
			return // from the follower's previous process: no longer true
		case msg.Inc > known.Inc:
			*known = Known{LEO: -1, Inc: msg.Inc}
		}
		answer.Kind, answer.Offset, answer.End, answer.Asked = FetchAnswer, msg.Offset, to.LEO(), msg.Query
		if msg.Query >= 0 {
			// The leader checks the follower's last epoch (Kafka's
			// Partition.fetchRecords): no end for it is out of range; a
			// smaller epoch, or an end below the offset, a divergence,
			// answered with no records and noted as no progress.
			e, end := to.endOffsetFor(msg.Query)
			switch {
			case e < 0:
				answer.OutOfRange = true
				s.Net = append(s.Net, answer)
				return
			case e < msg.Query || end < msg.Offset:
				answer.Diverging, answer.Query, answer.End, answer.HW = true, e, end, to.HW
				s.Net = append(s.Net, answer)
				return
			}
		}
		if msg.Offset > to.LEO() {
			answer.OutOfRange = true
			s.Net = append(s.Net, answer)
			return
		}
		known.LEO = msg.Offset
		m.maybeAdvanceHW(s, msg.To)
		answer.Entries = to.Log[msg.Offset:to.LEO():to.LEO()]
		answer.HW = to.HW
		s.Net = append(s.Net, answer)
	case FetchAnswer:
		if !m.answers(to, &msg, AwaitFetch) || (!msg.OutOfRange && msg.Offset != to.LEO()) || msg.Asked != m.lastFetched(to) {
			return
		}
		if msg.OutOfRange {
			// Our log runs past the leader's, or on the fetch path the
			// leader knows no end for our last epoch.
			switch {
			case m.Variant.Truncation == TruncateHW:
				to.truncate(msg.End)
				m.sendFetch(s, msg.To)
			case to.latestEpoch() >= 0 && !m.Variant.Truncation.onFetch():
				m.sendEpochQuery(s, msg.To, to.latestEpoch())
			default:
				to.truncate(0)
				m.sendFetch(s, msg.To)
			}
			return
		}
		if msg.Diverging {
			truncateOnDivergence(to, msg.Query, msg.End)
			m.sendFetch(s, msg.To)
			return
		}
		n := int32(len(msg.Entries))
		if k >= 0 {
			n = k
		}
		for _, e := range msg.Entries[:n] {
			to.appendEntry(e)
		}
		to.HW = min(msg.HW, to.LEO())
		m.sendFetch(s, msg.To)
	case EpochAnswer:
		if !m.answers(to, &msg, AwaitEpoch) || msg.Asked != to.Query {
			return
		}
		m.truncateByAnswer(s, msg.To, msg)
	}
}

// answers reports whether msg answers what follower r waits for now.
func (m Model) answers(r *Replica, msg *Msg, want AwaitKind) bool {
	return r.Await == want && msg.Inc == r.Inc && msg.Epoch == r.Epoch && msg.From == r.Leader
}

// truncateByAnswer truncates follower id by the leader's
// OffsetsForLeaderEpoch answer, or asks about an older epoch.
func (m Model) truncateByAnswer(s *State, id int32, msg Msg) {
	r := &s.Replicas[id]
	if m.Variant.Truncation == TruncateEpochKIP101 {
		// Kafka 0.11: trust the end offset; with none, fall back to HW.
		if msg.End < 0 {
			r.truncate(r.HW)
		} else {
			r.truncate(min(msg.End, r.LEO()))
		}
		m.sendFetch(s, id)
		return
	}
	if msg.Query < 0 {
		// The leader holds no epoch at or below ours: none of our records
		// can be in its log.
		r.truncate(0)
		m.sendFetch(s, id)
		return
	}
	mine, myEnd := r.endOffsetFor(msg.Query)
	switch {
	case mine == msg.Query:
		r.truncate(min(msg.End, myEnd))
		m.sendFetch(s, id)
	case mine < 0:
		r.truncate(0)
		m.sendFetch(s, id)
	default:
		m.sendEpochQuery(s, id, mine)
	}
}

// truncateOnDivergence truncates follower r by a diverging fetch answer
// (epoch, end) by KIP-279's rule: to the smaller of the two ends of epoch
// if r holds it, else to the end of its largest epoch below it; with no
// epoch at or below it, to the leader's end. The cache is cut at the
// target even where the log ends below it: an epoch r led without
// appending would otherwise be named by every fetch.
func truncateOnDivergence(r *Replica, epoch, end int32) {
	mine, myEnd := r.endOffsetFor(epoch)
	to := myEnd
	switch {
	case mine < 0:
		to = end
	case mine == epoch:
		to = min(end, myEnd)
	}
	to = max(min(to, r.LEO()), 0)
	r.truncate(to)
	r.truncateEpochs(to)
}

// maybeAdvanceHW sets leader id's HW to the smallest LEO over the ISR it
// believes in, once every member reported in this epoch, never lower than
// it was; and answers the acks=all produces it passes.
func (m Model) maybeAdvanceHW(s *State, id int32) {
	r := &s.Replicas[id]
	if !r.leads(id) || (!m.Variant.HWBelowMinISR && count(r.ISR) < m.Variant.MinISR) {
		return
	}
	hw := r.LEO()
	for f := range int32(s.N()) {
		if f == id || !has(r.ISR, f) {
			continue
		}
		if r.Known[f].LEO < 0 {
			return
		}
		hw = min(hw, r.Known[f].LEO)
	}
	if hw <= r.HW {
		return
	}
	r.HW = hw
	kept := s.Ghost.Pending[:0]
	for _, p := range s.Ghost.Pending {
		if p.R == id && p.Inc == r.Inc && p.Epoch == r.Epoch && offsetOf(r.Log, p.Value) < hw {
			s.Ghost.Acked = insertSorted(s.Ghost.Acked, p.Value)
			continue
		}
		kept = append(kept, p)
	}
	s.Ghost.Pending = kept
}

// extendCommitted records what the acting leader exposes below its HW, if
// its log holds what was committed before (otherwise an invariant fails).
func (m Model) extendCommitted(s *State) {
	a := s.acting()
	if a == None || m.noGhost {
		return
	}
	r := &s.Replicas[a]
	c := s.Ghost.Committed
	if int(r.HW) <= len(c) || !slices.Equal(r.Log[:len(c)], c) {
		return
	}
	s.Ghost.Committed = append(c[:len(c):len(c)], r.Log[len(c):r.HW]...)
}

func offsetOf(log []Entry, v int32) int32 {
	for i, e := range log {
		if e.Value == v {
			return int32(i)
		}
	}
	return int32(len(log))
}

func insertSorted(xs []int32, v int32) []int32 {
	i, found := slices.BinarySearch(xs, v)
	if found {
		return xs
	}
	return slices.Insert(xs, i, v)
}

func dropPending(s *State, id int32) {
	s.Ghost.Pending = slices.DeleteFunc(s.Ghost.Pending, func(p Pending) bool { return p.R == id })
}

func removeMsg(net []Msg, m *Msg) []Msg {
	i := findMsg(net, m)
	return slices.Delete(net, i, i+1)
}
