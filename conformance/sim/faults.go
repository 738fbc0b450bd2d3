package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// FaultKind names a fault.
type FaultKind string

// The faults the simulator can inject.
const (
	FaultCrash     FaultKind = "crash"     // process dies; page cache survives; restarts later
	FaultPowerLoss FaultKind = "powerloss" // machine dies; unsynced writes lost, last may tear
	FaultPause     FaultKind = "pause"     // process stops; messages wait for it
	FaultIsolate   FaultKind = "isolate"   // network partition: the broker alone on one side
	FaultSlow      FaultKind = "slow"      // every message to or from the broker takes DelayMs longer
	FaultHeal      FaultKind = "heal"      // end every network partition
	// FaultRestartProducer restarts producer client Node (0-based): what it
	// had in flight ends unknown, the new process gets a new producer id,
	// and the application sends its last unacknowledged record again.
	FaultRestartProducer FaultKind = "restart-producer"
	// FaultCrashConsumer kills group consumer Node (0-based): no
	// LeaveGroup, nothing more processed or committed; the coordinator
	// times the member out. A new process (a new member) starts after
	// ForMs (0: RestartAfterMs).
	FaultCrashConsumer FaultKind = "crash-consumer"
)

// FaultKinds lists every kind, for messages and flags.
var FaultKinds = []FaultKind{FaultCrash, FaultPowerLoss, FaultPause, FaultIsolate, FaultSlow, FaultHeal, FaultRestartProducer, FaultCrashConsumer}

// Role picks a fault's broker by what it does when the fault strikes.
type Role string

// Roles. RoleAny means Fault.Node names the broker.
const (
	RoleAny      Role = ""
	RoleLeader   Role = "leader"   // the current leader of a partition
	RoleFollower Role = "follower" // a follower of that partition, drawn from the seed
	// RoleCoordinator is the broker coordinating the workload's group:
	// the leader of its offsets-topic partition.
	RoleCoordinator Role = "coordinator"
)

// Trigger says when a scheduled fault or failpoint takes effect: at a time,
// or once a number of produces have been acknowledged. The zero Trigger is
// "at the start".
type Trigger struct {
	AtMs      int64
	AfterAcks int
}

// String renders the trigger for traces.
func (t Trigger) String() string {
	if t.AfterAcks > 0 {
		return fmt.Sprintf("after %d acks", t.AfterAcks)
	}
	return fmt.Sprintf("at %d ms", t.AtMs)
}

// Fault is one scheduled fault.
type Fault struct {
	When Trigger
	Kind FaultKind
	Node int // the broker when Role is RoleAny; unused for heal
	// Role, when set, picks the broker when the fault strikes: the leader
	// or a follower of Partition (default: the first topic's partition 0).
	Role      Role
	Partition *kafka.TopicPartition
	// ForMs is how long the fault lasts: downtime for crash and power loss,
	// pause length, isolation or slowness length. 0 means
	// Config.RestartAfterMs, except for isolate, where it means "until the
	// final heal".
	ForMs int64
	// DelayMs is the extra delay of a slow broker's messages.
	DelayMs int64
}

func (f Fault) validate(brokers int) error {
	if !slices.Contains(FaultKinds, f.Kind) {
		return fmt.Errorf("unknown kind %q: want one of %v", f.Kind, FaultKinds)
	}
	switch f.Role {
	case RoleAny:
		if f.Kind == FaultRestartProducer || f.Kind == FaultCrashConsumer {
			break // checked against the workload by Config.Validate
		}
		if f.Kind != FaultHeal && (f.Node < 1 || f.Node > brokers) {
			return fmt.Errorf("%s of broker %d: brokers are 1..%d", f.Kind, f.Node, brokers)
		}
	case RoleLeader, RoleFollower, RoleCoordinator:
	default:
		return fmt.Errorf("unknown role %q: want leader, follower or coordinator", f.Role)
	}
	if f.Kind == FaultSlow && f.DelayMs <= 0 {
		return fmt.Errorf("slow broker without a delay: set DelayMs > 0")
	}
	if f.ForMs < 0 || f.When.AtMs < 0 || f.When.AfterAcks < 0 {
		return fmt.Errorf("%s: negative time or count", f.Kind)
	}
	return nil
}

// Failpoint switches on one of the broker's failpoints.
type Failpoint struct {
	Name string // a name from broker.Failpoints
	// Term is a pingcap/failpoint term, e.g. `1*return("crash")` or
	// `return("crash:2")`. A leading "P%" is taken out of the term and drawn
	// from the run's seed, not from a global random source, so the run stays
	// reproducible.
	Term string
	Node int // the broker it applies to; 0 for every broker
	When Trigger
	// DownMs is how long the broker it crashes, powers off or pauses stays
	// so; 0 means Config.RestartAfterMs.
	DownMs int64
}

func (fp Failpoint) validate(brokers int) error {
	if !slices.Contains(broker.Failpoints, fp.Name) {
		return fmt.Errorf("unknown failpoint %q: want one of %s", fp.Name, strings.Join(broker.Failpoints, ", "))
	}
	if fp.DownMs < 0 {
		return fmt.Errorf("failpoint %s: negative down time %d ms", fp.Name, fp.DownMs)
	}
	if fp.Node < 0 || fp.Node > brokers {
		return fmt.Errorf("failpoint %s on broker %d: brokers are 1..%d (0 = all)", fp.Name, fp.Node, brokers)
	}
	if _, _, err := splitPercent(fp.Term); err != nil {
		return fmt.Errorf("failpoint %s: %v", fp.Name, err)
	}
	return nil
}

// splitPercent takes a leading "P%" off a term.
func splitPercent(term string) (float64, string, error) {
	term = strings.TrimSpace(term)
	if term == "" {
		return 0, "", fmt.Errorf("empty term: want e.g. 1*return(\"crash\")")
	}
	head, rest, ok := strings.Cut(term, "%")
	if !ok {
		return 1, term, nil
	}
	p, err := strconv.ParseFloat(head, 64)
	if err != nil || p < 0 || p > 100 {
		return 0, "", fmt.Errorf("bad percentage in term %q: want 0..100", term)
	}
	return p / 100, rest, nil
}

// Nemesis injects random faults while the workload runs.
type Nemesis struct {
	Kinds      []FaultKind // drawn uniformly; empty disables the nemesis
	Role       Role        // strike leaders or followers only (RoleAny: any broker)
	DelayMs    int64       // extra delay for FaultSlow
	IntervalMs int64       // time between faults, uniform in [Interval/2, 3*Interval/2]
	FaultMs    int64       // how long each fault lasts
	MaxFaulty  int         // at most this many brokers faulted at once (0: 1)
	// PowerLossOnlyInSync allows a power loss only while every partition's
	// ISR holds all its replicas and no broker is faulted. Without fsync, two
	// power losses in a row can erase a committed record legitimately (each
	// machine loses its copy in turn); the strong-consistency checks use
	// this to stay within what the recipe promises.
	PowerLossOnlyInSync bool
}
