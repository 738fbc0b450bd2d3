package protocol

import (
	"fmt"
	"slices"
)

// The invariants, by the names spec/SEMANTICS.md and the simulator's reports use.
const (
	StrongISR            = "StrongIsr"
	LeaderCompleteness   = "LeaderCompleteness"
	LogMatching          = "LogMatching"
	TrueHWNeverDecreases = "TrueHWNeverDecreases"
	LeaderInISR          = "LeaderInIsr"
	AckedWriteKept       = "AckedWriteKept"
)

// Invariants lists them in the order they are checked.
var Invariants = []string{LeaderInISR, TrueHWNeverDecreases, LeaderCompleteness, AckedWriteKept, StrongISR, LogMatching}

// Broken is an invariant that fails in a state, and how.
type Broken struct {
	Invariant string
	Detail    string
}

func (b *Broken) Error() string { return b.Invariant + ": " + b.Detail }

// Check returns the first invariant s breaks, or nil.
//
// Committed records are what an acting leader (see State.acting) exposed
// below its HW; the ghost keeps them, and they only grow.
//   - LeaderInIsr: the controller's leader is in its ISR.
//   - TrueHWNeverDecreases: the acting leader's log reaches every committed
//     offset.
//   - LeaderCompleteness: and holds the committed records there.
//   - AckedWriteKept: every write acknowledged to an acks=all producer is in
//     the acting leader's log.
//   - StrongIsr: every ISR member the controller could elect (alive, in the
//     process it knows) holds the acting leader's log below its HW.
//   - LogMatching: replicas that act in the controller's current epoch on a
//     resolved log (a leader, or a follower that has truncated and fetches)
//     agree up to the smaller of their HWs.
func Check(s *State) *Broken { return CheckOnly(s, nil) }

// CheckOnly is Check restricted to the named invariants (all when names is
// empty).
func CheckOnly(s *State, names []string) *Broken {
	for _, inv := range checks {
		if len(names) > 0 && !slices.Contains(names, inv.name) {
			continue
		}
		if detail := inv.check(s); detail != "" {
			return &Broken{inv.name, detail}
		}
	}
	return nil
}

var checks = []struct {
	name  string
	check func(*State) string
}{
	{LeaderInISR, checkLeaderInISR},
	{TrueHWNeverDecreases, checkTrueHW},
	{LeaderCompleteness, checkLeaderCompleteness},
	{AckedWriteKept, checkAckedWriteKept},
	{StrongISR, checkStrongISR},
	{LogMatching, checkLogMatching},
}

func checkLeaderInISR(s *State) string {
	if c := &s.Ctrl; c.Leader != None && !has(c.ISR, c.Leader) {
		return fmt.Sprintf("leader %d is not in the ISR %s", c.Leader, setString(c.ISR))
	}
	return ""
}

func checkTrueHW(s *State) string {
	a := s.acting()
	if a == None {
		return ""
	}
	if l := &s.Replicas[a]; int(l.LEO()) < len(s.Ghost.Committed) {
		return fmt.Sprintf("records were committed up to offset %d, but leader %d (epoch %d) ends at %d",
			len(s.Ghost.Committed), a, l.Epoch, l.LEO())
	}
	return ""
}

func checkLeaderCompleteness(s *State) string {
	a := s.acting()
	if a == None {
		return ""
	}
	l := &s.Replicas[a]
	committed := s.Ghost.Committed
	if i := firstDiff(l.Log, committed, int32(len(committed))); i >= 0 {
		return fmt.Sprintf("committed %s at offset %d is not in leader %d's log %s",
			entries(committed[i:i+1]), i, a, entries(l.Log))
	}
	return ""
}

func checkAckedWriteKept(s *State) string {
	a := s.acting()
	if a == None {
		return ""
	}
	l := &s.Replicas[a]
	for _, v := range s.Ghost.Acked {
		if offsetOf(l.Log, v) == l.LEO() {
			return fmt.Sprintf("m%d was acknowledged to an acks=all producer, but leader %d's log is %s", v, a, entries(l.Log))
		}
	}
	return ""
}

func checkStrongISR(s *State) string {
	a := s.acting()
	if a == None {
		return ""
	}
	c := &s.Ctrl
	l := &s.Replicas[a]
	for _, id := range members(c.ISR) {
		m := &s.Replicas[id]
		if id == a || !m.Up || !has(c.Alive, id) || m.Inc != c.Inc[id] {
			continue
		}
		if m.LEO() < l.HW {
			return fmt.Sprintf("ISR member %d ends at %d, below leader %d's HW %d", id, m.LEO(), a, l.HW)
		}
		if i := firstDiff(m.Log, l.Log, l.HW); i >= 0 {
			return fmt.Sprintf("ISR member %d holds %s at offset %d, leader %d holds %s, below its HW %d",
				id, entries(m.Log[i:i+1]), i, a, entries(l.Log[i:i+1]), l.HW)
		}
	}
	return ""
}

func checkLogMatching(s *State) string {
	epoch := s.Ctrl.Epoch
	for i := range s.Replicas {
		a := &s.Replicas[i]
		if !resolved(a, int32(i), epoch) {
			continue
		}
		for j := i + 1; j < len(s.Replicas); j++ {
			b := &s.Replicas[j]
			if !resolved(b, int32(j), epoch) {
				continue
			}
			if k := firstDiff(a.Log, b.Log, min(a.HW, b.HW)); k >= 0 {
				return fmt.Sprintf("replicas %d (HW %d) and %d (HW %d) hold %s and %s at offset %d",
					i, a.HW, j, b.HW, entries(a.Log[k:k+1]), entries(b.Log[k:k+1]), k)
			}
		}
	}
	return ""
}

// resolved reports whether r acts in epoch on a log it has resolved against
// its leader's.
func resolved(r *Replica, id, epoch int32) bool {
	return r.Up && r.Epoch == epoch && (r.Leader == id || r.Await == AwaitFetch)
}

// firstDiff is the first offset below upTo where a and b differ (one ending
// counts as a difference), or -1.
func firstDiff(a, b []Entry, upTo int32) int {
	n := int(upTo)
	if n <= len(a) && n <= len(b) && (n == 0 || &a[0] == &b[0]) {
		return -1 // one array: trace validation's logs share theirs
	}
	if len(a) < n || len(b) < n {
		n = min(len(a), len(b))
		if i := firstDiff(a, b, int32(n)); i >= 0 {
			return i
		}
		return n
	}
	if slices.Equal(a[:n], b[:n]) {
		return -1
	}
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
