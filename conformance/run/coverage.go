package run

// Situation names a protocol situation a run can reach: a state where a
// class of bugs bites. Runs record which they reached (Result.Reached), so
// a check shows what it exercised and what it never did, and random
// search prefers schedules that reach new ones.
type Situation string

// The situations the simulator recognises, each from what it sees on the
// network, on the disks and in the controller, not from what brokers say
// about themselves.
const (
	// SitStaleReplicaElection: a leader was elected while a replica
	// outside the ISR was alive (it must not be the one elected).
	SitStaleReplicaElection Situation = "election-with-stale-replica-alive"
	// SitLeaderReturned: a partition's leadership came back to a broker
	// that had led it before another one did (A -> B -> A).
	SitLeaderReturned Situation = "leader-returned"
	// SitNewLeaderHWBehind: an acting leader's HW was below the committed
	// HW (the highest any leader reached).
	SitNewLeaderHWBehind Situation = "new-leader-hw-behind"
	// SitExpandWhileHWBehind: a leader asked to add a follower to the ISR
	// while its HW was below the committed HW.
	SitExpandWhileHWBehind Situation = "isr-expand-while-hw-behind"
	// SitEpochTruncation: a follower truncated records off its log end
	// to where the leader said its epoch ended.
	SitEpochTruncation Situation = "truncation-by-epoch"
	// SitEpochUnknownToLeader: a follower asked where an epoch ended, or
	// fetched naming it as its last, that its leader's log never held (it
	// led in that epoch itself, and what it wrote then is in nobody
	// else's log).
	SitEpochUnknownToLeader Situation = "epoch-unknown-to-leader"
	// SitFencedFetch: a leader refused a fetch for its leader epoch
	// (FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH).
	SitFencedFetch Situation = "fetch-epoch-fenced"
	// SitZombieAnswer: a broker that still believed it led, in an epoch
	// the controller had ended, answered a client.
	SitZombieAnswer Situation = "zombie-leader-answered"
	// SitDedupHit: an idempotent retry of a batch already written was
	// answered with the first write's offset.
	SitDedupHit Situation = "dedup-hit"
	// SitRefusedAfterAppend: a broker answered a produce with an error
	// although it had appended the batch (it stepped down with the produce
	// parked, say): the write may yet commit, so the error must not say
	// it failed.
	SitRefusedAfterAppend Situation = "produce-error-after-append"
	// SitISRChangeRefused: the controller refused a leader's ISR change.
	SitISRChangeRefused Situation = "isr-change-refused"
	// SitTornTail: recovery after a power loss dropped a torn tail.
	SitTornTail Situation = "torn-tail-recovery"
	// SitRollPowerLoss: a broker lost power while one of its logs held
	// unsynced bytes in two segments or more: a segment had rolled since
	// the last sync, and recovery had to join what each kept.
	SitRollPowerLoss Situation = "power-loss-mid-roll"
	// SitRetention: retention deleted a log's oldest segments, moving its
	// log start offset.
	SitRetention Situation = "retention-deleted"
	// SitFetchBelowLogStart: a client's fetch was below the leader's log
	// start offset (OFFSET_OUT_OF_RANGE), so it moved to the log start.
	SitFetchBelowLogStart Situation = "fetch-below-log-start"
	// SitFollowerReset: a follower whose log ended below its leader's log
	// start offset emptied its log and began again there.
	SitFollowerReset Situation = "follower-below-log-start"
	// SitEmptyDiskReturn: a broker came back on an empty disk while its
	// partitions held records.
	SitEmptyDiskReturn Situation = "empty-disk-return"
	// SitClusterPowerLoss: every broker lost power at once.
	SitClusterPowerLoss Situation = "cluster-power-loss"
	// SitRestartInARow: a broker was struck down again soon (within a
	// session timeout) after it came back.
	SitRestartInARow Situation = "restart-in-a-row"
	// SitDuplicateMessage: a message between nodes was delivered twice.
	SitDuplicateMessage Situation = "message-duplicated"
	// SitZombieCommit: the coordinator refused a commit or heartbeat from
	// a member of an ended generation (ILLEGAL_GENERATION,
	// UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS or FENCED_INSTANCE_ID).
	SitZombieCommit Situation = "group-zombie-refused"
	// SitMemberDownPastSession: a group member died without leaving and
	// stayed down past its session timeout: only the coordinator's expiry
	// of its session can move its partitions.
	SitMemberDownPastSession Situation = "member-down-past-session"
	// SitDamagedLog: a broker's log was damaged (bytes flipped before its
	// end) while its process was down.
	SitDamagedLog Situation = "damaged-log"
	// SitDamagedLastISR: the log damaged was that of a partition's only
	// ISR member: the one replica a clean election could pick.
	SitDamagedLastISR Situation = "damaged-last-isr-member"
	// SitCleanStopThenDamage: a log was damaged while its broker was down
	// after a clean stop (every log flushed, a clean-shutdown marker):
	// whatever recovery cuts is lost data, not a torn write.
	SitCleanStopThenDamage Situation = "clean-stop-then-damage"
	// SitLeaderMovedByShutdown: the controller moved a leadership away
	// from a live broker that asked to stop (a controlled shutdown).
	SitLeaderMovedByShutdown Situation = "leader-moved-by-shutdown"
	// SitELRCleanRestart: a broker registered after a clean stop while it
	// was an eligible leader replica of a partition, and stayed one.
	SitELRCleanRestart Situation = "elr-member-clean-restart"
	// SitRecoveryChoice: an unclean recovery (controller.UncleanRecovery)
	// elected a leader from the log ends of two live replicas or more: a
	// choice it could get wrong.
	SitRecoveryChoice Situation = "unclean-recovery-choice"
	// SitLookupHWBehind: a leader answered a ListOffsets while its HW was
	// below its log end: "latest" must be the HW, not the log end.
	SitLookupHWBehind Situation = "list-offsets-hw-below-leo"
	// SitOffsetsAppendFailed: a group coordinator's write to its offsets
	// partition failed or timed out (too few in-sync replicas, a leader
	// change) while its group went on.
	SitOffsetsAppendFailed Situation = "offsets-append-failed"
	// SitStaleFetchAnswer: an answer to a follower's fetch reached it from
	// a broker no longer its leader, after the follower had truncated its
	// log since sending the fetch: it must be dropped, not appended.
	SitStaleFetchAnswer Situation = "stale-fetch-answer-after-truncation"
)

// Situations lists every situation, in the order reports show them.
var Situations = []Situation{
	SitStaleReplicaElection, SitLeaderReturned, SitNewLeaderHWBehind, SitExpandWhileHWBehind,
	SitEpochTruncation, SitEpochUnknownToLeader, SitFencedFetch, SitZombieAnswer, SitDedupHit, SitRefusedAfterAppend, SitISRChangeRefused,
	SitTornTail, SitRollPowerLoss, SitRetention, SitFetchBelowLogStart, SitFollowerReset, SitEmptyDiskReturn, SitClusterPowerLoss, SitRestartInARow, SitDuplicateMessage,
	SitZombieCommit, SitMemberDownPastSession, SitDamagedLog, SitDamagedLastISR,
	SitCleanStopThenDamage, SitLeaderMovedByShutdown, SitELRCleanRestart, SitRecoveryChoice,
	SitLookupHWBehind, SitOffsetsAppendFailed, SitStaleFetchAnswer,
}
