package conformance

import (
	"context"
	"fmt"
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

// Capabilities are the broker faults a target can inject
// (run.Capabilities: crash, pause, isolate, slow, replace-disk, stop,
// power loss, single messages, failpoints, trace). Faults on the client
// side (lost answers, crashed consumers, restarted producers) need none:
// the harness does them itself.
type Capabilities = run.Capabilities

// AllCapabilities is every capability: what the simulator offers.
var AllCapabilities = run.AllCapabilities

// missing names the capabilities cfg needs (its faults' definitions and
// its failpoints, run.Spec.Needs) and have does not offer, with how to
// get each where that helps; "" when none is missing.
func missing(cfg run.Spec, have Capabilities) string {
	need := cfg.Needs().Lacking(have)
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
