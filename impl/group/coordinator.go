package group

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// loadState says whether the coordinator serves requests.
type loadState int8

const (
	notLoaded loadState = iota // after New: COORDINATOR_LOAD_IN_PROGRESS
	loaded                     // after Load: serving
	unloaded                   // after Unload: NOT_COORDINATOR
)

// member is one member of a group.
//
// Invariants:
//  1. join != 0 only while the group is PreparingRebalance.
//  2. sync != 0 only while the group is CompletingRebalance.
//  3. len(protocols) > 0.
type member struct {
	id                 string
	clientID           string
	sessionTimeoutMs   int64
	rebalanceTimeoutMs int64
	protocols          []Protocol
	// assignment is nil until the group is Stable in this member's
	// generation; the leader may hand out an empty, non-nil one.
	assignment []byte
	lastHeard  int64
	joinSeq    uint64 // order of joining the group; the leader is chosen by it
	join       uint64 // request id of the parked JoinGroup, 0 if none
	sync       uint64 // request id of the parked SyncGroup, 0 if none
	// synced says the member has sent SyncGroup in the current generation.
	synced bool
}

// metadataFor returns the member's metadata for protocol name.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// group is one consumer group.
//
// Invariants:
//  1. state == Empty iff len(members) == 0 (between calls).
//  2. leader == "" iff len(members) == 0; otherwise leader is a member.
//  3. generation never decreases while the coordinator stays loaded.
//  4. In Stable every member has a non-nil assignment.
//  5. storing != 0 only in CompletingRebalance, and then proposal holds the
//     leader's assignment being persisted.
//  6. protocol != "" iff state is CompletingRebalance or Stable.
type group struct {
	name         string
	state        State
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	// pending holds KIP-394 member ids handed out with MEMBER_ID_REQUIRED
	// and not yet used, with the time they expire.
	pending map[string]int64
	// joinDeadline ends PreparingRebalance: members that have not rejoined
	// by then are removed. joinEarliest is the initial rebalance delay.
	joinDeadline int64
	joinEarliest int64
	// syncDeadline ends CompletingRebalance and Stable's grace for SyncGroup:
	// members that have not sent SyncGroup by then are removed.
	syncDeadline int64
	storing      uint64
	proposal     map[string][]byte
}

func (g *group) memberIDs() []string { return slices.Sorted(maps.Keys(g.members)) }

// pendingAppend is an Append whose outcome has not arrived yet.
type pendingAppend struct {
	group string
	// For an OffsetCommit: the request to answer and the offsets to apply.
	request uint64
	offsets []OffsetToCommit
	errs    []error // per offset: nil to commit, else its refusal
	commit  bool
	// For group metadata: the generation it stored.
	generation int32
}

// Coordinator is the group coordinator for one partition of the offsets
// topic. Create it with New; it serves requests once Load is called.
type Coordinator struct {
	cfg   Config
	state loadState
	// epoch is the offsets partition's leader epoch given to Load; it makes
	// member ids unique across leadership terms.
	epoch int32

	groups  map[string]*group
	offsets map[string]map[kafka.TopicPartition]OffsetValue

	nextMember uint64
	nextJoin   uint64
	nextAppend uint64
	appends    map[uint64]*pendingAppend
	// written are the commits whose appends failed after they were
	// written (writtenError), by append id: they take effect when a later
	// append of this term commits (applyWritten).
	written []writtenCommit

	// highGen is the largest generation CheckInvariants has seen per group
	// in this leadership term: it remembers so as to check invariant 3.
	highGen map[string]int32

	ready    Ready
	handover kafka.Handover
}

// New returns a coordinator that answers COORDINATOR_LOAD_IN_PROGRESS until
// Load is called.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg}
	c.reset()
	return c, nil
}

func (c *Coordinator) reset() {
	c.groups = make(map[string]*group)
	c.offsets = make(map[string]map[kafka.TopicPartition]OffsetValue)
	c.appends = make(map[uint64]*pendingAppend)
	c.written = nil
	c.highGen = make(map[string]int32)
	c.nextMember = 0
	c.nextJoin = 0
}

// Config returns the coordinator's configuration.
func (c *Coordinator) Config() Config { return c.cfg }

// Loaded reports whether the coordinator serves requests.
func (c *Coordinator) Loaded() bool { return c.state == loaded }

// Load rebuilds groups and committed offsets from the offsets partition's
// records, in log order, when this broker becomes the partition's leader.
// epoch is the partition's leader epoch. Restored groups with members are
// Stable, and their members' session timers start at now. On a malformed
// record Load changes nothing and returns an error wrapping ErrBadRecord.
func (c *Coordinator) Load(epoch int32, records []Record, now int64) error {
	groups := make(map[string]*GroupMetadata)
	offsets := make(map[string]map[kafka.TopicPartition]OffsetValue)
	for i, r := range records {
		e, err := Decode(r)
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		switch {
		case e.IsGroup() && e.GroupValue == nil:
			delete(groups, e.Group)
		case e.IsGroup():
			groups[e.Group] = e.GroupValue
		case e.Offset == nil:
			delete(offsets[e.Group], e.TopicPartition)
		default:
			if offsets[e.Group] == nil {
				offsets[e.Group] = make(map[kafka.TopicPartition]OffsetValue)
			}
			offsets[e.Group][e.TopicPartition] = *e.Offset
		}
	}
	c.answerAllParked(kafka.ErrNotCoordinator)
	c.reset()
	c.state = loaded
	c.epoch = epoch
	c.offsets = offsets
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		c.groups[name] = c.restore(name, groups[name], now)
	}
	return nil
}

// restore turns persisted metadata into a live group.
func (c *Coordinator) restore(name string, gm *GroupMetadata, now int64) *group {
	g := &group{name: name, generation: gm.Generation, protocolType: gm.ProtocolType,
		members: make(map[string]*member), pending: make(map[string]int64)}
	for _, mm := range gm.Members {
		c.nextJoin++
		asg := mm.Assignment
		if asg == nil {
			asg = []byte{}
		}
		g.members[mm.MemberID] = &member{id: mm.MemberID, clientID: mm.ClientID,
			sessionTimeoutMs: mm.SessionTimeoutMs, rebalanceTimeoutMs: mm.RebalanceTimeoutMs,
			protocols:  []Protocol{{Name: gm.Protocol, Metadata: mm.Metadata}},
			assignment: asg, lastHeard: now, joinSeq: c.nextJoin, synced: true}
	}
	if len(g.members) > 0 {
		g.state = Stable
		g.protocol = gm.Protocol
		g.leader = gm.Leader
		if _, ok := g.members[g.leader]; !ok {
			g.leader = c.firstJoined(g)
		}
	}
	return g
}

// Unload is called when this broker stops leading the offsets partition:
// every parked request is answered NOT_COORDINATOR, appends in flight are
// forgotten (their AppendDone is ignored), and later requests get
// NOT_COORDINATOR until the next Load.
func (c *Coordinator) Unload() {
	c.answerAllParked(kafka.ErrNotCoordinator)
	c.reset()
	c.state = unloaded
}

// answerAllParked answers every parked request with e.
func (c *Coordinator) answerAllParked(e error) {
	for _, name := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[name]
		for _, id := range g.memberIDs() {
			m := g.members[id]
			if m.join != 0 {
				c.answer(m.join, joinError(e, m.id))
				m.join = 0
			}
			if m.sync != 0 {
				c.answer(m.sync, SyncResponse{Err: e})
				m.sync = 0
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.appends)) {
		if a := c.appends[id]; a.commit {
			c.answer(a.request, commitAnswer(a.offsets, a.errs, e))
		}
	}
}

// HasReady reports whether Ready would return something.
func (c *Coordinator) HasReady() bool { return !c.ready.IsEmpty() }

// Ready hands over what was decided since the previous call
// (kafka.Handover): appends to write, then answers; then call Advance.
// An append's outcome comes back by AppendDone, once it is durable.
func (c *Coordinator) Ready() Ready {
	c.handover.Take("group coordinator")
	rd := c.ready
	c.ready = Ready{}
	return rd
}

// Advance tells the coordinator its last Ready was carried out.
func (c *Coordinator) Advance() { c.handover.Done("group coordinator") }

func (c *Coordinator) answer(id uint64, msg Response) {
	c.ready.Answers = append(c.ready.Answers, Answer{ID: id, Msg: msg})
}

func (c *Coordinator) emit(e Event) { c.ready.Events = append(c.ready.Events, e) }

// appendRecords queues an Append and remembers what its outcome completes.
func (c *Coordinator) appendRecords(p *pendingAppend, records []Record) uint64 {
	c.nextAppend++
	c.appends[c.nextAppend] = p
	c.ready.Appends = append(c.ready.Appends, Append{ID: c.nextAppend, Records: records})
	return c.nextAppend
}

// AppendDone reports the fate of Append id: err == nil once it is
// committed, non-nil if it failed or timed out. An OffsetCommit waiting on
// it is answered (on failure with writeError(err)) and its offsets become
// visible; a group waiting on it becomes Stable, or on failure answers its
// parked SyncGroups writeError(err) and rebalances, as Kafka does. Unknown
// ids (from before an Unload) are ignored.
func (c *Coordinator) AppendDone(id uint64, err error, now int64) {
	a, ok := c.appends[id]
	if !ok {
		return
	}
	delete(c.appends, id)
	if err == nil {
		c.applyWritten(id)
	}
	if err != nil {
		gen := a.generation
		if g, ok := c.groups[a.group]; ok {
			gen = g.generation
		}
		c.emit(Event{Kind: AppendFailed, Now: now, Group: a.group, Generation: gen, Reason: err.Error()})
	}
	if a.commit {
		if err != nil {
			c.answer(a.request, commitAnswer(a.offsets, a.errs, writeError(err)))
			if writtenError(err) {
				c.written = append(c.written, writtenCommit{id: id, a: a})
			}
			return
		}
		c.applyCommit(a)
		c.answer(a.request, commitAnswer(a.offsets, a.errs, nil))
		return
	}
	g, ok := c.groups[a.group]
	if !ok || g.storing != id {
		return // the group moved on; its parked requests were answered then
	}
	c.groupStored(g, err, now)
}

// writeError is what a request waiting on a failed append is answered, as
// Kafka 4.x's coordinator maps the append's error
// (CoordinatorOperationExceptionHelper.handleOperationException for
// OffsetCommit, GroupMetadataManager.appendGroupMetadataErrorToResponseError
// for SyncGroup): a timeout or too few in-sync replicas is
// COORDINATOR_NOT_AVAILABLE; a lost leadership (not the leader, or a leader
// change while the append waited) or a storage error NOT_COORDINATOR, and
// so is anything else, which Kafka passes on as it is but the offsets
// partition does not answer here. NOT_ENOUGH_REPLICAS_AFTER_APPEND, which
// Kafka 4.x's acks=1 writes never meet and this coordinator's acks=all ones
// do, is COORDINATOR_NOT_AVAILABLE as in Kafka 3.x
// (GroupMetadataManager.storeOffsets). Either way the client looks the
// coordinator up again. An OffsetCommit so answered may have been written
// and commit later, which is why clients take either answer as an unknown
// outcome (kafka.CommitOutcomeUnknown).
func writeError(err error) error {
	switch {
	case errors.Is(err, kafka.ErrRequestTimedOut), errors.Is(err, kafka.ErrNotEnoughReplicas),
		errors.Is(err, kafka.ErrNotEnoughReplicasAfterAppend), errors.Is(err, kafka.ErrUnknownTopicOrPartition):
		return kafka.ErrCoordinatorNotAvailable
	default:
		return kafka.ErrNotCoordinator
	}
}

// Tick advances logical time: expires silent members and unused KIP-394
// member ids, ends rebalances whose timeout passed, and completes joins
// held by the initial rebalance delay.
func (c *Coordinator) Tick(now int64) {
	if c.state != loaded {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(c.groups)) {
		c.tickGroup(c.groups[name], now)
	}
}

// PartitionFor returns the offsets-topic partition that serves group among
// n partitions, as Kafka maps a group id (kafka.OffsetsPartition). n must
// be positive.
func PartitionFor(group string, n int32) int32 { return kafka.OffsetsPartition(group, n) }
