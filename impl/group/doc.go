// Package group is Kafka's consumer-group coordinator (the classic
// JoinGroup/SyncGroup protocol) as a pure state machine.
//
// A broker hosts one Coordinator per partition of the internal offsets topic
// (Kafka's __consumer_offsets) that it leads; group g is served by partition
// PartitionFor(g, n). Like go.etcd.io/raft's RawNode, and like
// impl/partition and impl/controller, a Coordinator reads no clock, no
// random source and no network, and starts no goroutine: the caller passes
// logical time (`now`, in ms) into every call and collects the outcome
// with Ready, then calls Advance (kafka.Handover). Every pass over groups and members runs in sorted order, so
// the same calls give the same Ready, bit for bit. A Coordinator is not
// safe for concurrent use.
//
// # Driving it
//
// Requests carry a caller-chosen id. Each is answered in some Ready as an
// Answer with that id, at once or later: a JoinGroup waits for the other
// members, a SyncGroup for the leader's assignment to be persisted, an
// OffsetCommit for its records to be persisted. Durability comes from the
// offsets partition: Ready.Appends lists record batches to append there,
// and the broker calls AppendDone(id, err, now) once the batch is committed
// (HW passed it) or has failed. Nothing is answered as persisted before
// that: a committed offset becomes visible to OffsetFetch only then.
//
// On becoming the partition's leader the broker calls Load with the
// partition's records, in order; before that every request gets
// COORDINATOR_LOAD_IN_PROGRESS. On losing leadership it calls Unload:
// parked requests are answered NOT_COORDINATOR, and so is every request
// until the next Load. Tick(now) expires sessions and rebalance timeouts.
//
// # The group
//
// Empty -> PreparingRebalance (a member joins, rejoins with new protocols,
// the leader rejoins, a member leaves or expires) -> CompletingRebalance
// (every member rejoined, or the rebalance timeout passed and the others
// were removed; generation+1, a leader and a protocol chosen, JoinGroups
// answered) -> Stable (the leader's SyncGroup was persisted; SyncGroups
// answered with each member's assignment). A group left with no members
// goes Empty with its generation bumped, and that too is persisted so that
// a stale member is still refused after failover.
//
// # Rules worth knowing
//
//   - OffsetCommit from the current generation is accepted during
//     PreparingRebalance, as Kafka accepts it: the members still own their
//     partitions until the join completes, and eager consumers commit on
//     revocation just then. It is refused with ILLEGAL_GENERATION once the
//     generation moved on, so a stale generation's commit is never
//     accepted, and a current member's with REBALANCE_IN_PROGRESS in
//     CompletingRebalance: the member, then the generation, then the state,
//     in Kafka 4.x's order (ClassicGroup.validateOffsetCommit).
//   - A request waiting on an append that failed is answered as Kafka 4.x
//     answers it: COORDINATOR_NOT_AVAILABLE for a timeout or too few
//     in-sync replicas, NOT_COORDINATOR otherwise (writeError). An
//     OffsetCommit so answered may still commit, its record being in the
//     log; this coordinator forgot it when it answered, so the offset shows
//     only once a coordinator loads the partition again, where Kafka 4.x
//     shows it when the high watermark passes it.
//   - A JoinGroup, SyncGroup or OffsetCommit that is superseded or outlived
//     is always answered: a retried JoinGroup answers the parked one
//     REBALANCE_IN_PROGRESS, a removed member's parked requests get
//     UNKNOWN_MEMBER_ID, Unload answers everything NOT_COORDINATOR.
//   - Assignments are opaque bytes, as in Kafka; CheckInvariants decodes
//     them only for protocol type "consumer", to find double assignments.
//   - A group that loses its last member goes Empty at once, even with a
//     KIP-394 id outstanding (Kafka waits for the rebalance timeout).
//   - A commit naming an empty topic or a negative partition is refused for
//     that partition with UNKNOWN_TOPIC_OR_PARTITION, since its record
//     could not be read back; Load must never meet a record it refuses.
//
// # Where it simplifies Kafka
//
//   - No static membership (KIP-345, group.instance.id), no incremental
//     cooperative rebalancing (KIP-429; the coordinator does not care, it is
//     a client-side protocol, but no cooperative assignor is given), no
//     KIP-848 consumer protocol, no DescribeGroups/ListGroups/DeleteGroups,
//     no offset retention or expiry, no transactional offset commits.
//   - The protocol is the first, in the leader's order of preference, that
//     every member supports; Kafka holds a vote in which each member backs
//     its most preferred candidate. They agree when members list protocols
//     in the same order, as a consumer group's members do.
//   - The initial rebalance delay holds an Empty group's first join open
//     for InitialRebalanceDelayMs (capped by the rebalance timeout) but is
//     not extended by each new member as Kafka's is; it defaults to 0.
//   - A member waiting in JoinGroup or SyncGroup is never expired by its
//     session timer; the rebalance timeout bounds both waits instead
//     (members that have not sent SyncGroup a rebalance timeout after the
//     join completed are removed, as in Kafka 3.x).
//   - Member ids are "<client id>-<leader epoch>-<n>" instead of
//     "<client id>-<UUID>": deterministic, and unique across leadership
//     terms since Load takes the offsets partition's leader epoch.
//   - Records are JSON under a readable key (see records.go), not Kafka's
//     binary OffsetCommit/GroupMetadata schemas.
//
// The requests and responses themselves, with how each is refused and how
// long it may be held, are impl/groupmsg's (JoinRequest and the rest are
// aliases here), so that a client compiles them without the coordinator;
// the Coordinator takes each by its own method (groupmsg.Handler). The
// client side of the protocol is groupmsg's too: the Range and RoundRobin
// assignors as pure functions, and the codecs for the ConsumerProtocol
// subscription and assignment formats.
package group
