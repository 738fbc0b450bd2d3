package spec

// This file is the sequential specification of a consumer group's committed
// offset for one partition, with generation fencing, as the group's members
// may observe it. The state (GroupOffset) is the group's current generation
// and the partition's committed offset. Each client operation takes effect at
// one instant between its call and its return:
//
//   - a JoinGroup or SyncGroup answer, at the instant the coordinator gave it:
//     it shows which generation was current then (ObserveGeneration);
//   - an OffsetCommit, at the instant the coordinator accepted or refused it
//     (CommitOffset);
//   - an OffsetFetch, at the instant the coordinator read the committed
//     offset (FetchOffset).
//
// Reference: spec/SEMANTICS.md, Consumer and groups ("generation +1" on each
// JoinGroup round; "OffsetCommit from a stale generation is refused with
// ILLEGAL_GENERATION"; "Committed offset = the next offset to read").

// NoGeneration is the generation of a group no member was seen joining, and
// the generation a simple commit (one made outside group membership, by
// assign() rather than subscribe()) carries.
const NoGeneration int32 = -1

// GroupOffset is the state of one partition's committed offset in one group.
//
// Invariants:
//  1. Generation >= NoGeneration, and it never decreases from one state to
//     the next.
//  2. Offset >= NoOffset; NoOffset means nothing was committed.
type GroupOffset struct {
	// Generation is the newest generation the coordinator is known to have
	// stored in its offsets topic, as far as the operations taken effect
	// so far show it: one a SyncGroup answer or an accepted commit named.
	// The coordinator's current generation is never below it; it may be
	// above it, by generations only decided (ObserveGeneration).
	Generation int32
	// Offset is the offset of the last accepted commit: the next offset a
	// member resuming the partition reads.
	Offset int64
}

// NewGroupOffset is the state before anything happened: no generation, no
// committed offset.
func NewGroupOffset() GroupOffset {
	return GroupOffset{Generation: NoGeneration, Offset: NoOffset}
}

// Commit is one OffsetCommit of one partition, with what its client learnt.
type Commit struct {
	// Generation and Member are the ones the committing member sent;
	// NoGeneration and "" for a simple commit.
	Generation int32
	Member     string
	Offset     int64
	Outcome    Outcome
}

// Simple reports whether c is a simple commit, made outside group
// membership.
func (c Commit) Simple() bool { return c.Generation == NoGeneration }

// ObserveGeneration returns the state once a member learnt that generation
// gen of the group is current; stored says the answer shows gen stored in
// the offsets topic (a SyncGroup answer, an accepted commit), not only
// decided (a JoinGroup answer). False if no state can follow s.
//
// Rule: each rebalance is "generation +1", and an answer names the
// generation current when it was given, so gen >= s.Generation; a stored
// gen becomes s.Generation. Generations nobody observed may have come and
// gone in between: a rebalance whose answers the history does not hold.
// A decided generation leaves the state as it was: the coordinator decides
// a generation in memory and answers its JoinGroups before storing it
// (Kafka 4.x's GroupMetadataManager.completeClassicGroupJoin answers the
// joins with no record; the group's metadata is written at the leader's
// SyncGroup, and the SyncGroup answers wait for that write), and a
// coordinator that fails over in between loads the generation it stored
// last, and answers a known member's JoinGroup with it: a generation learnt
// from a JoinGroup answer can be lost, and its number used again. Reference:
// spec/SEMANTICS.md, Consumer and groups ("Generations across coordinator
// failover").
func ObserveGeneration(s GroupOffset, gen int32, stored bool) (GroupOffset, bool) {
	if gen < s.Generation {
		return s, false
	}
	if stored {
		s.Generation = gen
	}
	return s, true
}

// accepts reports whether the coordinator may accept c in state s, and the
// state it leaves if it does.
func accepts(s GroupOffset, c Commit) (GroupOffset, bool) {
	if c.Simple() {
		s.Offset = c.Offset
		return s, true
	}
	if c.Member == "" || c.Generation < NoGeneration {
		return s, false
	}
	next, ok := ObserveGeneration(s, c.Generation, true)
	if !ok {
		return s, false
	}
	next.Offset = c.Offset
	return next, true
}

// CommitOffset returns every state that may follow s once c has taken effect;
// none if c cannot take effect on s at all.
//
// Rules:
//
//  1. A definite failure leaves the state as it was: {s}. The coordinator
//     refuses commits for reasons the history does not show
//     (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, a coordinator still
//     loading), so a refusal is always allowed. Reference: FORMAT.md ("fail: the operation
//     certainly did not take effect").
//
//  2. Generation fencing: a member's commit (Generation >= 0) is accepted
//     only if its generation is the current one, and only in a Stable
//     group, whose generation is stored. Accepting it at generation g
//     therefore shows g current and stored: g >= s.Generation is required
//     (a generation older than a stored one is ILLEGAL_GENERATION; one
//     older than a generation only decided may be current again after a
//     coordinator failover, see ObserveGeneration), and g becomes the
//     stored generation (a newer generation than any observed one was
//     current although no member's answer in the history showed it yet).
//     A member commit without a member id is UNKNOWN_MEMBER_ID and is
//     never accepted. Accepted, the committed offset becomes c.Offset. Reference: spec/SEMANTICS.md, Consumer
//     and groups ("OffsetCommit from a stale generation is refused with
//     ILLEGAL_GENERATION, from an unknown member with UNKNOWN_MEMBER_ID").
//
//  3. A simple commit (NoGeneration, no member) is accepted in any state, and
//     leaves the generation as it was. Kafka accepts one only while the
//     group is Empty (no members) and refuses it otherwise; a group whose
//     members all left is Empty again, and the history format records no
//     LeaveGroup or session expiry, so the spec cannot tell when the group
//     had members, and refusing would accuse correct brokers.
//
//  4. acknowledged: the commit was accepted, so it must be acceptable: {the
//     state it leaves} or {}. Unknown: it may or may not have been
//     accepted: {s} and, if it is acceptable, the state it leaves. That
//     includes a commit answered COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
//     REQUEST_TIMED_OUT or NOT_ENOUGH_REPLICAS_AFTER_APPEND: Kafka 4.x
//     answers a commit whose write timed out COORDINATOR_NOT_AVAILABLE, and
//     the write may commit all the same. Reference: spec/SEMANTICS.md,
//     Committed offsets and coordinator failover; FORMAT.md, commit.
//
// Commits to one partition overwrite each other: the committed offset may
// go backwards, but only by a later commit.
func CommitOffset(s GroupOffset, c Commit) []GroupOffset {
	if c.Outcome == Failed {
		return []GroupOffset{s}
	}
	next, ok := accepts(s, c)
	switch {
	case c.Outcome == Acknowledged && ok:
		return []GroupOffset{next}
	case c.Outcome == Acknowledged:
		return nil
	case ok && next != s:
		return []GroupOffset{s, next}
	default:
		return []GroupOffset{s}
	}
}

// FetchOffset reports whether an OffsetFetch answered offset (NoOffset for
// none) is allowed in state s.
//
// Rule: the answer is the offset of the last accepted commit, or NoOffset
// when no commit was accepted: offset == s.Offset. A fetch thus sees every
// commit accepted before it and never a value no accepted commit wrote.
// Offsets expire (offsets.retention.minutes) only long after a group
// empties, which the histories this spec judges do not reach.
// Reference: spec/SEMANTICS.md, Consumer and groups ("Committed offset = the
// next offset to read").
func FetchOffset(s GroupOffset, offset int64) bool {
	return offset == s.Offset
}
