package protocol

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// None stands for "no replica" where a replica id is expected.
const None int32 = -1

// MaxReplicas bounds N: replica sets are bitmasks.
const MaxReplicas = 8

// Entry is one record in a log: the value a producer wrote (unique per
// write) and the leader epoch of the leader that appended it.
type Entry struct {
	Value int32
	Epoch int32
}

// EpochStart is one entry of the leader-epoch cache (KIP-101): epoch Epoch
// starts at offset Start.
type EpochStart struct {
	Epoch int32
	Start int32
}

// AwaitKind is what a follower waits for.
type AwaitKind uint8

const (
	// AwaitNothing: the replica leads, is down, or knows no leader.
	AwaitNothing AwaitKind = iota
	// AwaitEpoch: the follower asked its leader where an epoch ended
	// (OffsetsForLeaderEpoch) and fetches nothing until it has truncated.
	AwaitEpoch
	// AwaitFetch: the follower has resolved its log against the leader's
	// and fetches from its LEO.
	AwaitFetch
)

// Known is what a leader knows of one follower from its fetches in this
// leader epoch.
type Known struct {
	LEO int32 // the last fetch offset; -1: not heard from in this epoch
	Inc int32 // the incarnation that fetch came from
}

// Replica is one broker's replica of the partition.
//
// Invariants:
//  1. !Up => Epoch == 0, Leader == None, Await == AwaitNothing, ISR == 0,
//     Known is zero: a process that is not running holds only its disk.
//  2. HW <= len(Log).
//  3. Epochs are strictly increasing in both Epoch and Start, and every
//     Start <= len(Log).
//  4. Leader == own id <=> the replica acts as leader in Epoch; then Known
//     has an entry per replica and ISR is the ISR it believes in.
//     Otherwise ISR and Known are zero.
type Replica struct {
	Up     bool
	Inc    int32 // the process incarnation: 1 at first, +1 at every restart
	Log    []Entry
	Epochs []EpochStart
	HW     int32
	Epoch  int32 // the leader epoch it acts in; 0 before it heard one
	Leader int32 // the leader it believes in for Epoch (itself when leading)
	Await  AwaitKind
	Query  int32 // the epoch asked about while Await == AwaitEpoch
	ISR    uint32
	Known  [MaxReplicas]Known
}

// LEO is the log end offset.
func (r *Replica) LEO() int32 { return int32(len(r.Log)) }

// leads reports whether r acts as leader (in its own belief).
func (r *Replica) leads(id int32) bool { return r.Up && r.Leader == id }

// latestEpoch is the last epoch in r's cache, or -1.
func (r *Replica) latestEpoch() int32 {
	if len(r.Epochs) == 0 {
		return -1
	}
	return r.Epochs[len(r.Epochs)-1].Epoch
}

// assignEpoch records that epoch starts at start, if it is newer than every
// epoch in the cache; entries starting at or after start give way, since
// they hold no records below start.
func (r *Replica) assignEpoch(epoch, start int32) {
	if epoch <= r.latestEpoch() {
		return
	}
	r.truncateEpochs(start)
	r.Epochs = append(r.Epochs, EpochStart{Epoch: epoch, Start: start})
}

// truncateEpochs drops cache entries that start at or after offset.
func (r *Replica) truncateEpochs(offset int32) {
	i := len(r.Epochs)
	for i > 0 && r.Epochs[i-1].Start >= offset {
		i--
	}
	r.Epochs = r.Epochs[:i:i]
}

// truncate drops the log from offset on, with the epochs that start there,
// and clamps HW.
func (r *Replica) truncate(offset int32) {
	if offset < 0 {
		offset = 0
	}
	if offset >= r.LEO() {
		return
	}
	r.Log = r.Log[:offset:offset]
	r.truncateEpochs(offset)
	r.HW = min(r.HW, offset)
}

// appendEntry appends e at the LEO, starting a cache entry for a new epoch.
func (r *Replica) appendEntry(e Entry) {
	r.assignEpoch(e.Epoch, r.LEO())
	r.Log = append(r.Log[:len(r.Log):len(r.Log)], e)
}

// endOffsetFor answers OffsetsForLeaderEpoch by KIP-279's rule: the largest
// epoch <= asked in the cache, and the offset where it ended (the start of
// the next epoch, or the LEO for the latest). An epoch newer than the latest
// has no answer (-1, -1); one older than every entry is answered with
// itself and the first entry's start.
func (r *Replica) endOffsetFor(asked int32) (epoch, end int32) {
	if asked < 0 || len(r.Epochs) == 0 {
		return -1, -1
	}
	if asked == r.latestEpoch() {
		return asked, r.LEO()
	}
	next := r.firstAfter(asked)
	switch {
	case next == len(r.Epochs):
		return -1, -1
	case next == 0:
		return asked, r.Epochs[0].Start
	}
	return r.Epochs[next-1].Epoch, r.Epochs[next].Start
}

// firstAfter is the index of the first cache entry of an epoch newer than
// asked (len(Epochs) if none).
func (r *Replica) firstAfter(asked int32) int {
	next := 0
	for next < len(r.Epochs) && r.Epochs[next].Epoch <= asked {
		next++
	}
	return next
}

// endOffsetKIP101 answers OffsetsForLeaderEpoch as Kafka 0.11 did, before
// KIP-279: the start of the first epoch after the one asked (the LEO for the
// latest), with no epoch to check it against; -1 when there is none.
func (r *Replica) endOffsetKIP101(asked int32) int32 {
	if len(r.Epochs) > 0 && asked == r.latestEpoch() {
		return r.LEO()
	}
	next := r.firstAfter(asked)
	if next == len(r.Epochs) || next == 0 {
		return -1
	}
	return r.Epochs[next].Start
}

// Controller is the controller's record of the partition and the brokers.
//
// Invariants:
//  1. ISR != 0; Leader == None or Leader is in ISR (LeaderInIsr, checked).
//  2. Epoch grows by one at every change of Leader.
type Controller struct {
	Leader int32
	Epoch  int32
	ISR    uint32
	Alive  uint32             // brokers it believes alive
	Inc    [MaxReplicas]int32 // each broker's registered incarnation
	N      int32              // the number of replicas
}

// MsgKind says what a message is.
type MsgKind uint8

// Message kinds. Requests go from a follower to the leader it believes in;
// answers go back.
const (
	FetchRequest MsgKind = iota
	FetchAnswer
	EpochRequest
	EpochAnswer
)

var msgKindNames = [...]string{"fetch", "fetch-answer", "epoch-query", "epoch-answer"}

func (k MsgKind) String() string { return msgKindNames[k] }

// Msg is a message in flight.
//
// Fields by kind:
//   - FetchRequest: Offset is the follower's LEO (it acknowledges what is
//     below unless the answer diverges), Epoch the follower's current
//     leader epoch, Query its latest cached epoch on the fetch path
//     (LastFetchedEpoch; -1 when it has none, and on the other paths).
//   - FetchAnswer: Asked echoes the request's Query. Entries start at
//     Offset; HW is the leader's HW; End is the leader's LEO; OutOfRange
//     says Offset was past it. Diverging says the leader does not hold
//     Asked up to Offset: Query is its largest epoch at or below Asked and
//     End where that epoch ends, and Entries is empty.
//   - EpochRequest: Query is the epoch asked about.
//   - EpochAnswer: Asked echoes the epoch asked; Query is the epoch found
//     (-1 none) and End where it ended.
//
// Inc is the follower's incarnation and Epoch its leader epoch, echoed in
// answers so that the follower takes only answers to what it asked.
type Msg struct {
	Kind       MsgKind
	From, To   int32
	Inc        int32
	Epoch      int32
	Offset     int32
	Query      int32
	Asked      int32
	End        int32
	HW         int32
	OutOfRange bool
	Diverging  bool
	Entries    []Entry
}

// follower is the replica a message concerns: the sender of a request, the
// receiver of an answer.
func (m *Msg) follower() int32 {
	if m.Kind == FetchRequest || m.Kind == EpochRequest {
		return m.From
	}
	return m.To
}

func (m *Msg) String() string {
	switch m.Kind {
	case FetchRequest:
		if m.Query >= 0 {
			return fmt.Sprintf("fetch %d->%d offset %d last epoch %d epoch %d inc %d", m.From, m.To, m.Offset, m.Query, m.Epoch, m.Inc)
		}
		return fmt.Sprintf("fetch %d->%d offset %d epoch %d inc %d", m.From, m.To, m.Offset, m.Epoch, m.Inc)
	case FetchAnswer:
		if m.Diverging {
			return fmt.Sprintf("fetch-answer %d->%d offset %d diverging: epoch %d ends at %d (asked %d) hw %d epoch %d",
				m.From, m.To, m.Offset, m.Query, m.End, m.Asked, m.HW, m.Epoch)
		}
		if m.OutOfRange {
			return fmt.Sprintf("fetch-answer %d->%d offset %d out of range (leader LEO %d) epoch %d", m.From, m.To, m.Offset, m.End, m.Epoch)
		}
		return fmt.Sprintf("fetch-answer %d->%d offset %d entries %s hw %d epoch %d", m.From, m.To, m.Offset, entries(m.Entries), m.HW, m.Epoch)
	case EpochRequest:
		return fmt.Sprintf("epoch-query %d->%d epoch %d? (current %d)", m.From, m.To, m.Query, m.Epoch)
	}
	return fmt.Sprintf("epoch-answer %d->%d epoch %d ends at %d (current %d)", m.From, m.To, m.Query, m.End, m.Epoch)
}

// Ghost is history the invariants need and no process holds.
type Ghost struct {
	Next        int32     // the value the next produce writes (values are 1, 2, ...)
	Pending     []Pending // acks=all produces waiting on a leader for HW to pass them
	Acked       []int32   // values acknowledged to an acks=all producer, sorted
	Committed   []Entry   // what acting leaders exposed below their HW; only grows
	Crashes     int32     // faults used, against the Bounds
	PowerLosses int32
	Pauses      int32
	Reelections int32
}

// Pending is an acks=all produce parked on the leader process that
// appended it, in the epoch it appended it in. It is answered when that
// process's HW passes it, and fails if the process stops leading or dies.
type Pending struct {
	Value, R, Inc, Epoch int32
}

// State is the whole system.
type State struct {
	Replicas []Replica
	Ctrl     Controller
	Net      []Msg // a multiset, kept sorted so equal bags are equal slices
	Ghost    Ghost
}

// Clone returns a deep copy: steps modify the copy.
func (s *State) Clone() *State {
	// Logs and caches are only ever re-sliced to full capacity before an
	// append, so sharing their backing arrays between states is safe.
	c := &State{Replicas: slices.Clone(s.Replicas), Ctrl: s.Ctrl, Ghost: s.Ghost}
	c.Net = append([]Msg(nil), s.Net...)
	c.Ghost.Acked = append([]int32(nil), s.Ghost.Acked...)
	c.Ghost.Pending = append([]Pending(nil), s.Ghost.Pending...)
	c.Ghost.Committed = s.Ghost.Committed[:len(s.Ghost.Committed):len(s.Ghost.Committed)]
	return c
}

// N is the number of replicas.
func (s *State) N() int { return len(s.Replicas) }

// acting returns the replica that leads in the controller's current epoch
// and knows it, in the process the controller knows: the one whose HW
// commits records. None when there is no such replica.
func (s *State) acting() int32 {
	l := s.Ctrl.Leader
	if l == None {
		return None
	}
	r := &s.Replicas[l]
	if r.leads(l) && r.Epoch == s.Ctrl.Epoch && r.Inc == s.Ctrl.Inc[l] {
		return l
	}
	return None
}

func has(set uint32, id int32) bool { return set&(1<<uint(id)) != 0 }

func members(set uint32) []int32 {
	var out []int32
	for set != 0 {
		i := bits.TrailingZeros32(set)
		out = append(out, int32(i))
		set &^= 1 << uint(i)
	}
	return out
}

func setString(set uint32) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members(set) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, m)
	}
	b.WriteByte('}')
	return b.String()
}

// entries renders a log; a long one (from trace validation) shows its
// length and last entries only.
func entries(es []Entry) string {
	var b strings.Builder
	b.WriteByte('[')
	from := 0
	if len(es) > 8 {
		from = len(es) - 4
		fmt.Fprintf(&b, "%d entries: ... ", len(es))
	}
	for i, e := range es[from:] {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "m%d/e%d", e.Value, e.Epoch)
	}
	b.WriteByte(']')
	return b.String()
}

// String renders the state on a few lines, for counterexamples.
func (s *State) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "controller: leader %d epoch %d isr %s alive %s\n", s.Ctrl.Leader, s.Ctrl.Epoch, setString(s.Ctrl.ISR), setString(s.Ctrl.Alive))
	for i := range s.Replicas {
		r := &s.Replicas[i]
		if !r.Up {
			fmt.Fprintf(&b, "  %d: DOWN log %s hw %d\n", i, entries(r.Log), r.HW)
			continue
		}
		role := "follower"
		switch {
		case r.Leader == int32(i):
			role = fmt.Sprintf("LEADER isr %s", setString(r.ISR))
		case r.Leader == None:
			role = "no leader"
		case r.Await == AwaitEpoch:
			role = fmt.Sprintf("follower of %d, asking where epoch %d ended", r.Leader, r.Query)
		default:
			role = fmt.Sprintf("follower of %d", r.Leader)
		}
		fmt.Fprintf(&b, "  %d: log %s hw %d epoch %d %s\n", i, entries(r.Log), r.HW, r.Epoch, role)
	}
	if len(s.Ghost.Acked) > 0 {
		fmt.Fprintf(&b, "  acknowledged: %v\n", s.Ghost.Acked)
	}
	for i := range s.Net {
		fmt.Fprintf(&b, "  in flight: %s\n", &s.Net[i])
	}
	return strings.TrimRight(b.String(), "\n")
}
