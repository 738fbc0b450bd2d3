package run

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/impl/fpname"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// FaultKind names a fault.
type FaultKind string

// The faults a run can inject. Every runner takes the same kinds: each
// has one definition (Def, faultdefs.go) that says what it needs of a
// target and how it strikes; one a target cannot carry out is refused
// before the run (FaultDef.Available, Spec.Needs), never skipped silently.
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
	// FaultReplaceDisk: the broker's machine dies and comes back after
	// ForMs with an empty disk (a replaced drive): no log, no checkpoint.
	FaultReplaceDisk FaultKind = "replace-disk"
	// FaultPowerLossAll: every broker's machine loses power at once; each
	// comes back after ForMs. Only what was synced survives anywhere.
	FaultPowerLossAll FaultKind = "powerloss-all"
	// FaultMessages: for ForMs, the messages on the broker's links that
	// Messages selects are dropped, duplicated or delayed one by one.
	FaultMessages FaultKind = "messages"
	// FaultBounceLeader: leadership of Partition leaves its leader A and
	// comes back to it (A crashes, another replica B leads, B crashes),
	// while a follower C of A's epoch, holding A's last records that B
	// lacks, is cut off (isolated, or slowed by DelayMs when set) across
	// both elections and then follows A again in a newer epoch
	// (KAFKA-7164's schedule). ForMs is how long each leader stays down.
	FaultBounceLeader FaultKind = "bounce-leader"
	// FaultDamageLog: the broker's process dies (a crash) and, while it is
	// down, DamageBytes bytes (0: 8) in the middle of its log of Partition
	// (of every partition it holds, when Partition is unset) are flipped,
	// as a bad sector or a stray write would; it comes back after ForMs
	// and must find the damage as it recovers.
	FaultDamageLog FaultKind = "damage-log"
	// FaultStop: the broker is asked to stop, as SIGTERM asks a Kafka
	// broker: a controlled shutdown (its leaderships move away), then
	// every log flushed and a clean-shutdown marker written; it comes
	// back after ForMs. With PowerOff its machine then loses power while
	// it is down: what the stop did not sync is lost.
	FaultStop FaultKind = "stop"
	// FaultRollingStop: every broker in turn, by id, is stopped as stop
	// does and comes back after ForMs; the next one stops GapMs (0: 1000)
	// after the one before came back: a rolling restart of the cluster.
	FaultRollingStop FaultKind = "rolling-stop"
)

// FaultKinds lists every kind.
var FaultKinds = []FaultKind{FaultCrash, FaultPowerLoss, FaultPause, FaultIsolate, FaultSlow, FaultHeal,
	FaultRestartProducer, FaultCrashConsumer, FaultReplaceDisk, FaultPowerLossAll, FaultMessages, FaultBounceLeader,
	FaultDamageLog, FaultStop, FaultRollingStop}

// MessageFault selects messages on a broker's links and says what
// happens to each: with probability Drop it is lost, else with
// probability Duplicate it is delivered twice, and it waits up to DelayMs
// longer (uniform), and HoldMs more (the link keeps its order, so later
// messages wait too); with probability Reorder it leaves the link's order and may
// overtake or be overtaken (a request resent on a new connection). A
// duplicate's second copy comes right after the first, or, with
// CopyLateMs, up to that much later and out of the link's order: a resend
// that crossed the original, arriving after the state it was about has
// moved on.
type MessageFault struct {
	// Kinds are the message kinds it strikes (MessageKinds); empty: all.
	Kinds []string `yaml:"kinds"`
	// Peer is the other end: "" or "any", "controller", "clients",
	// "brokers", or a broker id.
	Peer string `yaml:"peer"`
	// Direction: "" (both), "in" (to the broker) or "out" (from it).
	Direction string  `yaml:"direction"`
	Drop      float64 `yaml:"drop"`
	Duplicate float64 `yaml:"duplicate"`
	Reorder   float64 `yaml:"reorder"`
	DelayMs   int64   `yaml:"delay_ms"`
	// HoldMs holds every message it selects exactly this much longer (on
	// top of DelayMs): a request stuck in a queue for a known time.
	HoldMs int64 `yaml:"hold_ms,omitempty"`
	// CopyLateMs: a duplicate's second copy waits up to this much longer
	// than the first (uniform); 0: right after it.
	CopyLateMs int64 `yaml:"copy_late_ms"`
}

// MessageKinds names the messages a MessageFault can select: requests
// and answers between brokers, the controller and clients.
var MessageKinds = []string{
	"register", "heartbeat", "heartbeat-answer", "not-controller", "state-update", "alter-partition", "alter-partition-response",
	"replica-log-info", "replica-log-info-response", // an unclean recovery's question and answer
	"replica-fetch", "replica-fetch-response", "epoch-end", "epoch-end-response",
	"produce", "produce-response", "fetch", "fetch-response", "init-producer-id", "init-producer-id-response",
	"list-offsets", "list-offsets-response", "offset-for-leader-epoch", "offset-for-leader-epoch-response",
	"metadata", "metadata-response", "group", "group-response",
	"offset-commit",                                 // a group request that commits offsets; "group" selects these too
	"find-coordinator", "find-coordinator-response", // "group" and "group-response" select these too
}

// Clone returns a copy that shares nothing with m (nil for nil).
func (m *MessageFault) Clone() *MessageFault {
	if m == nil {
		return nil
	}
	c := *m
	c.Kinds = slices.Clone(m.Kinds)
	return &c
}

func (m *MessageFault) validate(brokers int) error {
	for _, k := range m.Kinds {
		if !slices.Contains(MessageKinds, k) {
			return fmt.Errorf("unknown message kind %q: want one of %s", k, strings.Join(MessageKinds, ", "))
		}
	}
	switch m.Peer {
	case "", "any", "controller", "clients", "brokers":
	default:
		if id, err := strconv.Atoi(m.Peer); err != nil || id < 1 || id > brokers {
			return fmt.Errorf("peer %q: want any, controller, clients, brokers or a broker id 1..%d", m.Peer, brokers)
		}
	}
	if m.Direction != "" && m.Direction != "in" && m.Direction != "out" {
		return fmt.Errorf("direction %q: want in, out or nothing for both", m.Direction)
	}
	if m.Drop < 0 || m.Drop > 1 || m.Duplicate < 0 || m.Duplicate > 1 || m.Reorder < 0 || m.Reorder > 1 {
		return fmt.Errorf("drop, duplicate and reorder are probabilities: want 0..1")
	}
	if m.DelayMs < 0 || m.CopyLateMs < 0 || m.HoldMs < 0 {
		return fmt.Errorf("negative delay_ms, hold_ms or copy_late_ms")
	}
	if m.CopyLateMs > 0 && m.Duplicate == 0 {
		return fmt.Errorf("copy_late_ms without duplicate: it delays the second copy of a duplicated message; set duplicate > 0")
	}
	if m.Drop == 0 && m.Duplicate == 0 && m.Reorder == 0 && m.DelayMs == 0 && m.HoldMs == 0 {
		return fmt.Errorf("a messages fault that does nothing: set drop, duplicate, reorder, delay_ms or hold_ms")
	}
	return nil
}

// Values lists the names a FaultKind takes.
func (FaultKind) Values() []string {
	out := make([]string, len(FaultKinds))
	for i, k := range FaultKinds {
		out[i] = string(k)
	}
	return out
}

// UnmarshalText reads one of Values.
func (k *FaultKind) UnmarshalText(b []byte) error {
	if !slices.Contains(FaultKinds, FaultKind(b)) {
		return fmt.Errorf("unknown fault kind %q: want one of %s", b, strings.Join(FaultKind("").Values(), ", "))
	}
	*k = FaultKind(b)
	return nil
}

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

var roles = []Role{RoleAny, RoleLeader, RoleFollower, RoleCoordinator}

// String names the role as run files do ("any" for RoleAny).
func (r Role) String() string {
	if r == RoleAny {
		return "any"
	}
	return string(r)
}

// Values lists the names a Role takes.
func (Role) Values() []string { return []string{"any", "leader", "follower", "coordinator"} }

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads one of Values.
func (r *Role) UnmarshalText(b []byte) error {
	for _, x := range roles {
		if x.String() == string(b) {
			*r = x
			return nil
		}
	}
	return fmt.Errorf("unknown role %q: want one of %s", b, strings.Join(Role("").Values(), ", "))
}

// Trigger says when a scheduled fault or failpoint takes effect: at a time,
// or once a number of produces have been acknowledged. The zero Trigger is
// "at the start".
type Trigger struct {
	AtMs      int64 `yaml:"at_ms"`
	AfterAcks int   `yaml:"after_acks"`
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
	Kind FaultKind `yaml:"kind"`
	// Node is the broker when Role is RoleAny; the client's index for
	// restart-producer and crash-consumer; unused for heal.
	Node int `yaml:"node"`
	// Role, when set, picks the broker when the fault strikes: the leader
	// or a follower of Partition (default: the first topic's partition 0),
	// or the group's coordinator.
	Role      Role                  `yaml:"role"`
	Partition *kafka.TopicPartition `yaml:"partition,omitempty"`
	When      Trigger               `yaml:",inline"`
	// ForMs is how long the fault lasts: downtime for crash and power loss,
	// pause length, isolation or slowness length. 0 means RestartAfterMs,
	// except for isolate, where it means "until the final heal".
	ForMs int64 `yaml:"for_ms"`
	// DelayMs is the extra delay of a slow broker's messages.
	DelayMs int64 `yaml:"delay_ms"`
	// Messages says which messages a messages fault strikes and how.
	Messages *MessageFault `yaml:"messages,omitempty"`
	// Repeat strikes the same broker again this many times, each GapMs
	// (0: 200) after it came back: restarts in a row (crash, power loss
	// and replace-disk only).
	Repeat int   `yaml:"repeat"`
	GapMs  int64 `yaml:"gap_ms"`
	// DamageBytes is how many bytes a damage-log fault flips (0: 8).
	DamageBytes int `yaml:"damage_bytes"`
	// DamageAt is where in the synced part of a log a damage-log fault
	// flips them (DamageAt).
	DamageAt DamageAt `yaml:"damage_at,omitempty"`
	// Clean: a damage-log fault stops the broker cleanly (as stop does)
	// before the damage, instead of crashing it: after a clean stop every
	// cut recovery makes is lost data.
	Clean bool `yaml:"clean,omitempty"`
	// PowerOff: a stop's machine loses power once the broker is down.
	PowerOff bool `yaml:"power_off,omitempty"`
}

// DamagedBytes is how many bytes a damage-log fault flips.
func (f Fault) DamagedBytes() int {
	if f.DamageBytes > 0 {
		return f.DamageBytes
	}
	return 8
}

func (f Fault) validate(brokers int) error {
	if !slices.Contains(FaultKinds, f.Kind) {
		return fmt.Errorf("unknown kind %q: want one of %v", f.Kind, FaultKinds)
	}
	switch f.Role {
	case RoleAny:
		if f.Kind.OnBroker() && (f.Node < 1 || f.Node > brokers) {
			return fmt.Errorf("%s of broker %d: brokers are 1..%d", f.Kind, f.Node, brokers)
		}
	case RoleLeader, RoleFollower, RoleCoordinator:
	default:
		return fmt.Errorf("unknown role %q: want leader, follower or coordinator", f.Role)
	}
	if f.Kind == FaultSlow && f.DelayMs <= 0 {
		return fmt.Errorf("slow broker without a delay: set delay_ms > 0")
	}
	if f.Kind == FaultMessages {
		if f.Messages == nil {
			return fmt.Errorf("messages fault without a messages: section (kinds, peer, drop, duplicate, delay_ms)")
		}
		if err := f.Messages.validate(brokers); err != nil {
			return fmt.Errorf("messages: %v", err)
		}
	} else if f.Messages != nil {
		return fmt.Errorf("%s: messages: applies to kind messages only", f.Kind)
	}
	if f.Repeat != 0 && !f.Kind.Down() {
		return fmt.Errorf("%s: repeat applies to crash, powerloss, replace-disk, damage-log and stop only", f.Kind)
	}
	if (f.DamageAt != "" || f.Clean) && f.Kind != FaultDamageLog {
		return fmt.Errorf("%s: damage_at and clean apply to damage-log only", f.Kind)
	}
	if err := f.DamageAt.validate(); err != nil {
		return fmt.Errorf("%s: %v", f.Kind, err)
	}
	if f.PowerOff && f.Kind != FaultStop && f.Kind != FaultRollingStop {
		return fmt.Errorf("%s: power_off applies to stop and rolling-stop only", f.Kind)
	}
	if f.DamageBytes != 0 && (f.Kind != FaultDamageLog || f.DamageBytes < 0 || f.DamageBytes > 4096) {
		return fmt.Errorf("%s: damage_bytes %d: applies to damage-log only, 1..4096", f.Kind, f.DamageBytes)
	}
	if f.ForMs < 0 || f.When.AtMs < 0 || f.When.AfterAcks < 0 || f.Repeat < 0 || f.GapMs < 0 {
		return fmt.Errorf("%s: negative time or count", f.Kind)
	}
	return nil
}

// Failpoint switches on one of the broker's failpoints.
type Failpoint struct {
	// Name is one of impl/fpname.All (broker.Failpoints).
	Name string `yaml:"name" one_of:"failpoint"`
	// Term is a pingcap/failpoint term, e.g. `1*return("crash")` or
	// `return("crash:2")`. A leading "P%" is taken out of the term and drawn
	// from the run's seed, not from a global random source, so the run stays
	// reproducible.
	Term string `yaml:"term" one_of:"failpoint-term"`
	// Node is the broker it applies to; 0 for every broker.
	Node int     `yaml:"node"`
	When Trigger `yaml:",inline"`
	// DownMs is how long the broker it crashes, powers off or pauses stays
	// so; 0 means RestartAfterMs.
	DownMs int64 `yaml:"down_ms"`
}

func (fp Failpoint) validate(brokers int) error {
	if !slices.Contains(fpname.All, fp.Name) {
		return fmt.Errorf("unknown failpoint %q: want one of %s", fp.Name, strings.Join(fpname.All, ", "))
	}
	if fp.DownMs < 0 {
		return fmt.Errorf("failpoint %s: negative down time %d ms", fp.Name, fp.DownMs)
	}
	if fp.Node < 0 || fp.Node > brokers {
		return fmt.Errorf("failpoint %s on broker %d: brokers are 1..%d (0 = all)", fp.Name, fp.Node, brokers)
	}
	if err := checkTerm(fp.Term); err != nil {
		return fmt.Errorf("failpoint %s: %v", fp.Name, err)
	}
	return nil
}

// SplitPercent takes a leading "P%" off a failpoint term: the probability
// (1 without one) and the rest.
func SplitPercent(term string) (float64, string, error) {
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
	// Kinds are drawn uniformly; empty disables the nemesis.
	Kinds []FaultKind `yaml:"kinds"`
	// Role strikes leaders, followers or the coordinator only (RoleAny:
	// any broker).
	Role       Role  `yaml:"role"`
	IntervalMs int64 `yaml:"interval_ms"` // time between faults, uniform in [Interval/2, 3*Interval/2]
	FaultMs    int64 `yaml:"fault_ms"`    // how long each fault lasts
	DelayMs    int64 `yaml:"delay_ms"`    // extra delay for FaultSlow
	MaxFaulty  int   `yaml:"max_faulty"`  // at most this many brokers faulted at once (0: 1)
	// PowerLossOnlyInSync allows a power loss only while every partition's
	// ISR holds all its replicas and no broker is faulted. Without fsync, two
	// power losses in a row can erase a committed record legitimately (each
	// machine loses its copy in turn); the strong-consistency checks use
	// this to stay within what the recipe promises.
	PowerLossOnlyInSync bool `yaml:"power_loss_only_in_sync"`
	// Messages is what a drawn messages fault does (nil: drawn too).
	Messages *MessageFault `yaml:"messages,omitempty"`
	// Repeats: a drawn crash, power loss or replace-disk strikes its
	// broker again up to this many times in a row (drawn 0..Repeats).
	Repeats int `yaml:"repeats"`
}

func (n Nemesis) validate(brokers int) error {
	for _, k := range n.Kinds {
		if !slices.Contains(FaultKinds, k) {
			return fmt.Errorf("unknown kind %q: want one of %v", k, FaultKinds)
		}
	}
	if !slices.Contains(roles, n.Role) {
		return fmt.Errorf("unknown role %q: want leader, follower or coordinator", n.Role)
	}
	if n.IntervalMs < 0 || n.FaultMs < 0 || n.DelayMs < 0 || n.MaxFaulty < 0 || n.Repeats < 0 {
		return fmt.Errorf("negative time or count")
	}
	if n.Messages != nil {
		if err := n.Messages.validate(brokers); err != nil {
			return fmt.Errorf("messages: %v", err)
		}
	}
	return nil
}

// Kinds lists every fault kind s may inject: its schedule's and its
// nemesis's, each once, in the order first named.
func (s *Spec) Kinds() []FaultKind {
	var out []FaultKind
	add := func(k FaultKind) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, k := range s.Nemesis.Kinds {
		add(k)
	}
	for _, f := range s.Faults {
		add(f.Kind)
	}
	return out
}

// Duration is how long f lasts in s: its ForMs, else RestartAfterMs. An
// isolation without ForMs lasts until the final heal: 0.
func (s *Spec) Duration(f Fault) int64 {
	if f.ForMs > 0 || f.Kind == FaultIsolate {
		return f.ForMs
	}
	return s.RestartAfterMs
}
