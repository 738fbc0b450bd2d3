package broker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pingcap/failpoint"

	"github.com/watermarkhq/watermark/impl/fpname"
)

// Failpoint names, relative to this package's import path (FailpointPath
// gives the full name that failpoint.Enable and GO_FAILPOINTS take). Each is
// documented in failpoints/README.md with what a crash there exercises; the
// names themselves are impl/fpname's.
const (
	FPLeaderBeforeAppend   = fpname.LeaderBeforeAppend
	FPLeaderAfterAppend    = fpname.LeaderAfterAppend
	FPBeforeProduceResp    = fpname.BeforeProduceResp
	FPFollowerBeforeAppend = fpname.FollowerBeforeAppend
	FPFollowerAfterAppend  = fpname.FollowerAfterAppend
	FPBeforeFsync          = fpname.BeforeFsync
	FPHWAdvance            = fpname.HWAdvance
	FPHWCheckpointWrite    = fpname.HWCheckpointWrite
	FPBeforeTruncate       = fpname.BeforeTruncate
	FPAfterTruncate        = fpname.AfterTruncate
	FPISRChange            = fpname.ISRChange
	FPBecomeLeader         = fpname.BecomeLeader
	FPBecomeFollower       = fpname.BecomeFollower
	// Producer state (the idempotent producer).
	FPProducerStateUpdate    = fpname.ProducerStateUpdate
	FPBeforeProducerSnapshot = fpname.BeforeProducerSnapshot
	FPAfterProducerSnapshot  = fpname.AfterProducerSnapshot
	// A clean shutdown (Shutdown): before the logs are flushed, and
	// before the clean-shutdown marker is written after them.
	FPShutdownBeforeFlush  = fpname.ShutdownBeforeFlush
	FPShutdownBeforeMarker = fpname.ShutdownBeforeMarker
)

// Failpoints lists every failpoint name of this package (fpname.All).
var Failpoints = fpname.All

// PackagePath is the import path that prefixes this package's failpoints.
const PackagePath = fpname.PackagePath

// FailpointPath is the full failpoint name for name.
func FailpointPath(name string) string { return fpname.Path(name) }

// Action is what a fired failpoint does to a node.
type Action string

// The actions a failpoint value can name. A value may target another node
// with a suffix: "crash:2" crashes broker 2 when this broker reaches the
// point, which is how a scenario makes one broker die at another's step.
const (
	ActionCrash     Action = "crash"     // the process dies; the page cache survives
	ActionPowerLoss Action = "powerloss" // the machine dies; unsynced writes are lost, the last may survive in part
	// ActionPowerLossWorst: the machine dies and nothing written since the
	// last sync survives, none of it in part: one exact outcome, for
	// scenarios that need it.
	ActionPowerLossWorst Action = "powerloss-worst"
	ActionPause          Action = "pause" // the process stops (SIGSTOP) for a while
)

// FailpointError reports a failpoint that fired: the node named (or, when
// Target is 0, the node that hit it) must take Action now. It is also how a
// storage failure takes a broker down. For a crash or power loss, the step
// stopped at the failpoint and its outbox must be dropped; for a pause, the
// step ran to its end and its outbox must be sent when the broker resumes.
type FailpointError struct {
	Name   string
	Action Action
	Target NodeID
	// ForMs, when > 0, is how long the target stays down or paused; 0
	// leaves it to the runner's default.
	ForMs int64
	Cause error
}

// Error describes the failpoint.
func (e *FailpointError) Error() string {
	s := fmt.Sprintf("failpoint %s: %s", e.Name, e.Action)
	if e.Target != 0 {
		s += fmt.Sprintf(" broker %d", e.Target)
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the storage error behind a storage failure.
func (e *FailpointError) Unwrap() error { return e.Cause }

// ParseAction reads one failpoint action: "crash", "powerloss" or "pause",
// optionally followed by ":<broker id>". A failpoint value may list several,
// separated by commas, and each may end with "@<ms>", how long its target
// stays down (see ParseActionFor).
func ParseAction(v string) (Action, NodeID, error) {
	a, target, _, err := ParseActionFor(v)
	return a, target, err
}

// ParseActionFor reads "action[:broker][@ms]".
func ParseActionFor(v string) (Action, NodeID, int64, error) {
	var forMs int64
	if head, ms, ok := strings.Cut(v, "@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n <= 0 {
			return "", 0, 0, fmt.Errorf("bad duration in failpoint action %q: want @<milliseconds>", v)
		}
		v, forMs = head, n
	}
	a, target, err := parseAction(v)
	return a, target, forMs, err
}

func parseAction(v string) (Action, NodeID, error) {
	name, target, hasTarget := strings.Cut(v, ":")
	var a Action
	switch Action(name) {
	case ActionCrash, ActionPowerLoss, ActionPowerLossWorst, ActionPause:
		a = Action(name)
	default:
		return "", 0, fmt.Errorf("unknown failpoint action %q: want crash, powerloss, powerloss-worst or pause, optionally with :<broker id>", v)
	}
	if !hasTarget {
		return a, 0, nil
	}
	id, err := strconv.ParseInt(target, 10, 32)
	if err != nil || id <= int64(ControllerID) || id >= int64(ClientIDBase) {
		return "", 0, fmt.Errorf("bad target in failpoint action %q: want a broker id, 1..%d", v, ClientIDBase-1)
	}
	return a, NodeID(id), nil
}

// failpoint is the one marker every boundary goes through. It is inert in a
// plain build; built with failpoint-toolexec it evaluates the failpoint
// named, and fires only where the broker's hook (fpctx) says it applies.
// A value that is not an action string (as an "off" term yields) does nothing.
func (b *Broker) failpoint(name string) (err error) {
	failpoint.InjectContext(b.fpctx, name, func(v failpoint.Value) {
		s, ok := v.(string)
		if !ok {
			return
		}
		err = b.failpointFired(name, s)
	})
	return err
}

// failpointFired carries out a failpoint value: a comma-separated list of
// actions ("crash,powerloss:2" crashes this broker and cuts broker 2's power
// at the same instant). Actions on other brokers are queued for the caller
// (TakeFaults); an action on this broker stops it here.
func (b *Broker) failpointFired(name, value string) error {
	var self *FailpointError
	for _, part := range strings.Split(value, ",") {
		a, target, forMs, err := ParseActionFor(strings.TrimSpace(part))
		if err != nil {
			return &FailpointError{Name: name, Action: ActionCrash, Target: b.cfg.ID, Cause: err}
		}
		fe := &FailpointError{Name: name, Action: a, Target: target, ForMs: forMs}
		if target != 0 && target != b.cfg.ID {
			b.faults = append(b.faults, fe)
			continue
		}
		fe.Target = b.cfg.ID
		if a == ActionPause {
			// A paused process goes on from this very point when it
			// resumes, so the step runs to its end and the pause is
			// reported after it (its messages wait for the resume).
			if b.pause == nil {
				b.pause = fe
			}
			continue
		}
		if self == nil {
			self = fe
		}
	}
	if self == nil {
		return nil
	}
	return self
}

// finish ends a Handle or Tick: a crash stops the step where it happened; a
// pause lets it finish and then stops the broker.
func (b *Broker) finish(err error) error {
	p := b.pause
	b.pause = nil
	if err != nil {
		return err
	}
	if p != nil {
		return p
	}
	return nil
}

// TakeFaults returns failpoints that fired here but target other nodes.
func (b *Broker) TakeFaults() []*FailpointError {
	f := b.faults
	b.faults = nil
	return f
}

// FailpointsCompiled reports whether this binary was built with the
// failpoint markers rewritten (failpoint-toolexec): fpname.Compiled, which
// probes a marker of its own, rewritten by the same build as this
// package's.
func FailpointsCompiled() bool { return fpname.Compiled() }
