package run

import (
	"fmt"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// Result is what a run produced.
type Result struct {
	Spec Spec
	// Violations has the first failure of each invariant the simulator
	// checks (more than one only with Spec.ContinueAfterViolation).
	Violations []*Violation
	History    []linearizability.Op
	Notes      []Note
	Stats      Stats
	// TraceHash is a hash of every step: equal specs give equal hashes.
	TraceHash uint64
	// Live marks a run on real processes: real time, no invariants, and
	// statistics seen from outside through metadata.
	Live bool
	// Protocol is trace validation's verdict (Spec.ValidateProtocol).
	Protocol *ProtocolReport
	// Dir is where a run on real processes left their data and logs; ""
	// for the simulator.
	Dir string
	// Unapplied are settings the case gives its brokers that the target
	// could not (a cluster running with its own, which the user did not
	// say): a run that did not get to what the case is about may owe it
	// to them.
	Unapplied []Setting
	// BrokerIDShift is what the harness added to the cluster's own broker
	// ids (a cluster numbering its brokers from 0), 0 if nothing.
	BrokerIDShift int32
	// Reached counts the protocol situations the run reached (the
	// simulator's coverage; runs on real processes see fewer).
	Reached map[Situation]int `json:",omitempty"`
	// LossByFault says, per fault, why the run may have cost a correct
	// broker committed records though its settings are safe: a damage-log
	// fault that struck a partition's only ISR member where recovery
	// cannot tell damage from a torn write (TornLike). A case then allows
	// loss, as after an unclean election (cases.Case.LossAllowedIn).
	LossByFault []string `json:",omitempty"`
}

// Stats counts what a run did.
type Stats struct {
	Steps            int
	EndMs            int64
	Messages         int
	Dropped          int
	Duplicated       int // messages delivered twice (messages faults)
	Reordered        int // messages that left their link's order (messages faults)
	Produced         int
	Faults           int
	Crashes          int
	PowerLosses      int
	DiskReplacements int
	DamagedLogs      int // logs a damage-log fault flipped bytes in
	Stops            int // clean stops asked for (stop, rolling-stop, a clean damage-log)
	CleanStops       int // stops that ended clean: flushed, marker written
	FailpointsFired  int
	StepLimitHit     bool
	FinalReadDone    bool // the final read covered every partition
	// OfflineAtEnd names the partitions that had no leader when the run
	// ended (the simulator sees it in the controller): a final read that
	// did not finish there was refused, not slow.
	OfflineAtEnd []string `json:",omitempty"`
	// OutOfISRAtEnd names, as "partition/broker", the live replicas
	// (alive to the controller) outside their partition's ISR when the
	// run ended: followers that never caught up again. Simulator only.
	OutOfISRAtEnd    []string `json:",omitempty"`
	Elections        int
	UncleanElections int // elections from outside the ISR, unclean recoveries' included
	// RecoveryElections counts the unclean recoveries' elections
	// (controller.ElectionRecovery); RecoveryNotLongest those of them
	// whose leader's log, as the simulator read it, ended before that of
	// another live replica's (kafka.LogEnd.Compare). Simulator only.
	RecoveryElections  int `json:",omitempty"`
	RecoveryNotLongest int `json:",omitempty"`
	ProducerRestarts   int
	Resends            int
	ISRShrinks         int
	ISRExpands         int
	// Group consumers.
	ConsumerCrashes int
	Rebalances      int // joins: a member entering a generation
	ConsumerFetches int
	Commits         int // accepted
	Seeks           int
}

// NoteKind says what a Note records.
type NoteKind string

// The kinds of note.
const (
	NoteFault     NoteKind = "fault"     // a fault struck: Fault, on broker (or client) Node
	NoteHeal      NoteKind = "heal"      // a fault ended, or a broker or client came back
	NoteFailpoint NoteKind = "failpoint" // a failpoint was switched on, or fired
	NoteElection  NoteKind = "election"  // Partition has a new Leader in leader epoch Epoch
	NoteISR       NoteKind = "isr"       // Partition's ISR went from OldISR to ISR (partition epoch Epoch)
	NoteInvariant NoteKind = "invariant" // a protocol invariant failed
	NoteHarness   NoteKind = "harness"   // the harness itself: the final read, a fault it skipped
	NoteBroker    NoteKind = "broker"    // the controller registered broker Node, declared it dead, or revived it
)

// Note is an event of a run at a point in time, for reports: its Text for
// a person, its fields for timelines and case requirements.
type Note struct {
	AtMs int64
	Kind NoteKind
	Text string
	// Fault is the kind of a NoteFault; Node the broker it struck (the
	// client's index for client faults).
	Fault FaultKind
	Node  int
	// Member is the member id of a group consumer a crash-consumer struck.
	Member string
	// Partition, Leader, Epoch, Unclean, OldISR and ISR describe a
	// NoteElection or NoteISR. Epoch is -1 when not known (an ISR change
	// seen from outside).
	Partition kafka.TopicPartition
	Leader    int32
	Epoch     int32
	Unclean   bool
	OldISR    []int32
	ISR       []int32
}

// Violation is the first failure of a protocol invariant, with the steps
// before it.
type Violation struct {
	Invariant string
	Detail    string
	AtMs      int64
	Step      int
	Trace     []string
}

// Error renders the violation on one line.
func (v *Violation) Error() string {
	return fmt.Sprintf("%s violated at %d ms (step %d): %s", v.Invariant, v.AtMs, v.Step, v.Detail)
}

// The protocol invariants the simulator checks on the cluster's global
// state (spec/SEMANTICS.md, Protocol invariants), by the names reports and
// run files use.
// Those the model checks too have the model's names.
const (
	InvStrongISR          = protocol.StrongISR
	InvLeaderCompleteness = protocol.LeaderCompleteness
	InvLogMatching        = protocol.LogMatching
	InvTrueHWMonotonic    = protocol.TrueHWNeverDecreases
	InvLeaderInISR        = protocol.LeaderInISR
	// InvEpochsIncrease: a partition's published leader epoch never goes
	// down, and no replica process goes back to an older partition state.
	InvEpochsIncrease = "EpochsIncrease"
	// InvAckedIsCommitted: an acks=all success leaves a leader only for a
	// batch below its HW that every live ISR member holds.
	InvAckedIsCommitted = "AckedIsCommitted"
	// InvHWWithinLog: no replica's HW is past its own log end.
	InvHWWithinLog = "HwWithinLog"
	// InvSyncedSurvives: recovery after a power loss keeps every byte of
	// the log that was synced before it.
	InvSyncedSurvives = "SyncedSurvivesPowerLoss"
	// InvStaleEpochFenced: a fetch that names a leader epoch other than
	// the replica's is refused, never served.
	InvStaleEpochFenced = "StaleEpochFenced"
	// InvHWOnMinISR: a leader's HW advances only while its ISR has at
	// least min.insync.replicas members (KIP-966).
	InvHWOnMinISR = "HwOnMinIsr"
	// InvISRAlive: an ISR of more than one member holds only brokers the
	// controller holds alive (KIP-841: a fenced broker leaves every ISR
	// it is not the last member of, and none may join).
	InvISRAlive = "IsrMembersAlive"
	// InvOffsetLookup: a leader answers ListOffsets latest with its HW,
	// never its log end, and earliest with its log start offset.
	InvOffsetLookup = "OffsetLookup"
	// InvController: the controller's own invariants hold after every
	// step (controller.CheckInvariants: epochs, ISRs, who may lead, the
	// eligible leader replicas).
	InvController = "ControllerInvariants"
)

// Invariants lists every invariant the simulator checks.
var Invariants = []string{InvStrongISR, InvLeaderCompleteness, InvLogMatching, InvTrueHWMonotonic, InvLeaderInISR, InvEpochsIncrease,
	InvAckedIsCommitted, InvHWWithinLog, InvSyncedSurvives, InvStaleEpochFenced, InvHWOnMinISR, InvISRAlive, InvOffsetLookup, InvController}

// ProtocolReport is trace validation's verdict on a run: how many of its
// replication steps were checked against spec/protocol's model and the
// first one the model does not allow.
type ProtocolReport struct {
	Checked map[string]int // steps checked, by model action
	Skipped map[string]int // steps not checked, by reason
	// Failure is the first step the model does not allow, with the
	// states around it; "" when every checked step was allowed.
	Failure string
	AtMs    int64
	Step    int
}

// ElectionNote records that leader leads tp in leader epoch epoch.
func ElectionNote(tp kafka.TopicPartition, leader, epoch int32, unclean bool) Note {
	n := Note{Kind: NoteElection, Partition: tp, Leader: leader, Epoch: epoch, Unclean: unclean, Node: int(leader)}
	if unclean {
		n.Text = fmt.Sprintf("%s: unclean election of broker %d in epoch %d", tp, leader, epoch)
	} else {
		n.Text = fmt.Sprintf("%s: broker %d leads in epoch %d", tp, leader, epoch)
	}
	return n
}

// ISRNote records that tp's ISR went from old to isr in partition epoch
// epoch (-1 when not known).
func ISRNote(tp kafka.TopicPartition, old, isr []int32, epoch int32) Note {
	n := Note{Kind: NoteISR, Partition: tp, OldISR: old, ISR: isr, Epoch: epoch}
	n.Text = fmt.Sprintf("%s: ISR %v -> %v", tp, old, isr)
	if epoch >= 0 {
		n.Text += fmt.Sprintf(" (partition epoch %d)", epoch)
	}
	return n
}
