package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/conformance/run"
)

// Target is a system the cases run against: it carries out one run's
// configuration and reports what the clients saw.
type Target interface {
	// Name names the target in reports and replay commands.
	Name() string
	// Run carries out spec. A run the target cannot do returns a
	// *SkipError saying why: it is reported as skipped, never as passed.
	Run(ctx context.Context, spec run.Spec) (*run.Result, error)
	// Parallel reports whether runs may overlap.
	Parallel() bool
	// Capabilities are the faults the target can inject. A case that
	// needs one it lacks is skipped, with the reason, before it runs.
	Capabilities() Capabilities
}

// Capabilities are the broker faults a target can inject. Faults on the
// client side (lost answers, crashed consumers, restarted producers) need
// none: the harness does them itself.
type Capabilities struct {
	Crash   bool // kill a broker and restart it on its data
	Pause   bool // stop a broker and let it go on (SIGSTOP/SIGCONT)
	Isolate bool // cut a broker off from the other brokers and the clients, and heal
	Slow    bool // add latency to a broker's links
	// ReplaceDisk: kill a broker, empty its data directory, and restart it.
	ReplaceDisk bool
	// Stop: stop a broker as an operator does (SIGTERM: a controlled
	// shutdown, a flush, a clean-shutdown marker) and restart it.
	Stop bool
	// Failpoints: switch the reference broker's failpoints at exact
	// protocol steps, across brokers. Only the simulator can: it runs
	// every broker in one process and steps them one message at a time.
	Failpoints bool
	// Trace: the run exposes every replication step, for trace
	// validation (Options.ValidateProtocol). Only the simulator does.
	Trace bool
}

// AllCapabilities is every capability: what the simulator offers.
var AllCapabilities = Capabilities{Crash: true, Pause: true, Isolate: true, Slow: true, ReplaceDisk: true, Stop: true, Failpoints: true, Trace: true}

// missing names the capabilities cfg's faults need and have does not
// offer, with how to get each where that helps; "" when none is missing.
func missing(cfg run.Spec, have Capabilities) string {
	var need []string
	add := func(ok bool, what string) {
		if !ok && !slices.Contains(need, what) {
			need = append(need, what)
		}
	}
	for _, f := range cfg.Faults {
		if f.Kind == run.FaultDamageLog && f.Clean {
			add(have.Stop, "stopping brokers cleanly (--stop-cmd and --restart-cmd, or a Stopper)")
		}
	}
	for _, k := range cfg.Kinds() {
		switch k {
		case run.FaultCrash:
			add(have.Crash, "crashing brokers (--kill-cmd and --restart-cmd, or a Crasher)")
		case run.FaultReplaceDisk, run.FaultDamageLog:
			add(have.ReplaceDisk, "replacing or damaging a broker's disk (a Cluster that owns its data directories: --target cluster or the simulator)")
		case run.FaultStop, run.FaultRollingStop:
			add(have.Stop, "stopping brokers cleanly (--stop-cmd and --restart-cmd, or a Stopper)")
		case run.FaultBounceLeader:
			add(have.Crash, "crashing brokers (--kill-cmd and --restart-cmd, or a Crasher)")
			add(have.Isolate, "isolating brokers (--isolate-cmd and --heal-cmd, or an Isolator)")
		case run.FaultPause:
			add(have.Pause, "pausing brokers (--pause-cmd and --resume-cmd, or a Pauser)")
		case run.FaultIsolate, run.FaultHeal:
			add(have.Isolate, "isolating brokers (--isolate-cmd and --heal-cmd, or an Isolator)")
		case run.FaultSlow:
			add(have.Slow, "slowing brokers' links")
		}
	}
	if len(cfg.Failpoints) > 0 {
		add(have.Failpoints, "switching failpoints at exact protocol steps (only the simulator can: --target sim)")
	}
	if len(need) == 0 {
		return ""
	}
	return "needs " + strings.Join(need, ", ") + ", which this target does not offer"
}

// SkipError is a run a target cannot carry out, and why.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// DurationArgs are the --duration and --settle flags that give another
// check the times given (a target's ReplayArgs).
func DurationArgs(durationMs, settleMs int64) []string {
	var args []string
	if durationMs > 0 {
		args = append(args, fmt.Sprintf("--duration=%dms", durationMs))
	}
	if settleMs > 0 {
		args = append(args, fmt.Sprintf("--settle=%dms", settleMs))
	}
	return args
}
