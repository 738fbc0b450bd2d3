package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/variant"
)

// Options shape a check: what every case runs with, and on what.
type Options struct {
	// Variant, when its Name is set, changes every case's run into the
	// variant's (variant.Variant.Apply).
	Variant variant.Variant
	// Set overrides fields of every case's run after the variant, as
	// KEY=VALUE with run-file keys (broker.min_insync_replicas=1).
	Set []string
	// Target is what the cases run against: required
	// (conformance/targets.Simulator is the reference's simulator).
	Target Target
	// Context cancels a check: the runs not started are abandoned, and
	// runs on targets that take real time are stopped.
	Context context.Context
	// ValidateProtocol checks every replication step of each run against
	// spec/protocol's model (run.Spec.ValidateProtocol); a step the model
	// does not allow violates the run. Only the simulator can do it.
	ValidateProtocol bool
	// CheckTimeout is porcupine's time limit per run (0: none).
	CheckTimeout time.Duration
	// Workers is how many runs go at once on a target that allows it (0: 1).
	Workers int
	// Program names watermark in replay commands ("watermark" if empty):
	// the CLI gives how it was invoked, so that they run as printed.
	Program string
	// Progress, when set, hears of every run's start, judging and end,
	// from one goroutine at a time.
	Progress func(Progress)
	// Shard, when set, runs only its slice of the (case, seed) pairs; the
	// report then holds only the cases with a pair in it.
	Shard Shard
}

// Progress is one step of a check.
type Progress struct {
	Phase Phase
	Case  string
	Seed  uint64
	// Done and Total count the check's runs.
	Done, Total int
	// Result is the judged run, at PhaseDone.
	Result *RunResult
}

// Phase is where a run is.
type Phase string

// The phases of a run.
const (
	PhaseStart Phase = "running"
	PhaseJudge Phase = "judging"
	PhaseDone  Phase = "done"
)

// ErrValidateNeedsSimulator is returned for trace validation on a target
// without Capabilities.Trace: only the simulator exposes every
// replication step.
var ErrValidateNeedsSimulator = errors.New("trace validation needs the simulator (--target sim)")

// ErrNoTarget is returned when Options names no target.
var ErrNoTarget = errors.New("no target: set Options.Target (conformance/targets.Simulator is the reference's)")

// DefaultTargetName is the target `watermark check` runs without --target:
// a replay command on it needs no --target flag.
const DefaultTargetName = "sim"

func (o Options) target() Target { return o.Target }

// Spec is the run of case c for seed under o.
func (o Options) Spec(c *cases.Case, seed uint64) (run.Spec, error) {
	s := c.Spec(seed)
	if o.Variant.Name != "" {
		if o.Variant.Apply == nil {
			return s, fmt.Errorf("variant %s exists only in spec/protocol's model", o.Variant.Name)
		}
		o.Variant.Apply(&s)
	}
	for _, kv := range o.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return s, fmt.Errorf("--set %q: want KEY=VALUE, e.g. broker.min_insync_replicas=1", kv)
		}
		if err := s.Set(k, v); err != nil {
			return s, fmt.Errorf("--set %s: %w", kv, err)
		}
	}
	s.ContinueAfterViolation = true
	// A failpoint that crashes a broker in the middle of handling a
	// message is no single model step: validation skips (and counts) that
	// step, and checks the rest of the run.
	if o.ValidateProtocol {
		s.ValidateProtocol = true
		// A leader that holds a fetch answers it later with what it has
		// then; the model answers at once, so validation runs without holds.
		s.Broker.ReplicaFetchWaitMaxMs = 0
	}
	return s, nil
}

// RunOne runs case c with one seed on opts.Target (the simulated
// reference when nil) and judges it.
func RunOne(c *cases.Case, seed uint64, opts Options) (*RunResult, error) {
	return runOne(c, seed, opts, func(Phase) {})
}

func runOne(c *cases.Case, seed uint64, opts Options, phase func(Phase)) (*RunResult, error) {
	start := time.Now()
	target := opts.target()
	if target == nil {
		return nil, ErrNoTarget
	}
	if opts.ValidateProtocol && !target.Capabilities().Trace {
		return nil, fmt.Errorf("case %s on %s: %w", c.Name, target.Name(), ErrValidateNeedsSimulator)
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	spec, err := opts.Spec(c, seed)
	if err != nil {
		return nil, err
	}
	var res *run.Result
	if why := missing(spec, target.Capabilities()); why != "" {
		err = &SkipError{Reason: why}
	} else {
		res, err = target.Run(ctx, spec)
	}
	replay := opts.replay(c, seed, target)
	var skip *SkipError
	if errors.As(err, &skip) {
		return &judge.RunResult{Case: c.Name, Seed: seed, Verdict: Skipped, Reasons: []string{skip.Reason},
			Elapsed: time.Since(start), Target: target.Name(), Replay: replay}, nil
	}
	var broken *ViolationError
	if errors.As(err, &broken) {
		return &judge.RunResult{Case: c.Name, Seed: seed, Verdict: Violated, Reasons: []string{broken.Reason},
			Elapsed: time.Since(start), Target: target.Name(), Replay: replay}, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // stopped: not a result
		}
		// The run could not be carried out: its own verdict, and the
		// check goes on to the next.
		return &judge.RunResult{Case: c.Name, Seed: seed, Verdict: Error,
			Reasons: []string{fmt.Sprintf("the run could not be carried out on %s: %v", target.Name(), err)},
			Elapsed: time.Since(start), Target: target.Name(), Replay: replay}, nil
	}
	phase(PhaseJudge)
	r := judge.Judge(c, res, opts.CheckTimeout)
	r.Elapsed = time.Since(start)
	r.Target = target.Name()
	r.Replay = replay
	if res.Dir != "" && r.Verdict == Holds {
		_ = os.RemoveAll(res.Dir)
	}
	return r, nil
}

// replay is the command that runs case c's seed again as opts ran it.
func (o Options) replay(c *cases.Case, seed uint64, target Target) string {
	prog := o.Program
	if prog == "" {
		prog = "watermark"
	}
	args := []string{shellQuote(prog), "check", "--case", shellQuote(c.Name), "--seed", fmt.Sprint(seed)}
	if o.Variant.Name != "" {
		args = append(args, "--variant", o.Variant.Name)
	}
	for _, kv := range o.Set {
		args = append(args, "--set", shellQuote(kv))
	}
	if o.ValidateProtocol {
		args = append(args, "--validate-protocol")
	}
	if target.Name() != DefaultTargetName {
		args = append(args, "--target", target.Name())
		if r, ok := target.(interface{ ReplayArgs() []string }); ok {
			for _, a := range r.ReplayArgs() {
				args = append(args, shellQuote(a))
			}
		}
	}
	return strings.Join(args, " ")
}

// Check runs every case with every seed, opts.Workers at a time, and sums
// them up. When opts.Context ends, the runs not yet started are abandoned
// and the report holds what was done (Report.Interrupted).
func Check(list []Case, seeds []uint64, opts Options) (*Report, error) {
	if opts.Target == nil {
		return nil, ErrNoTarget
	}
	start := time.Now()
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
		opts.Context = ctx
	}
	type job struct {
		c    int
		seed uint64
	}
	type event struct {
		c     int
		seed  uint64
		phase Phase
		r     *RunResult
		err   error
	}
	jobs := make(chan job)
	events := make(chan event)
	var wg sync.WaitGroup
	workers := max(opts.Workers, 1)
	if !opts.target().Parallel() {
		workers = 1
	}
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					continue // interrupted: a run not started is abandoned
				}
				events <- event{c: j.c, seed: j.seed, phase: PhaseStart}
				r, err := runOne(&list[j.c], j.seed, opts, func(p Phase) {
					events <- event{c: j.c, seed: j.seed, phase: p}
				})
				events <- event{c: j.c, seed: j.seed, phase: PhaseDone, r: r, err: err}
			}
		})
	}
	// The shard's pairs, and where each of its cases sits in the report.
	var pairs []job
	slot := map[int]int{}
	rep := &Report{}
	for i := range list {
		for k, s := range seeds {
			if !opts.Shard.Has(i*len(seeds) + k) {
				continue
			}
			if _, ok := slot[i]; !ok {
				slot[i] = len(rep.Cases)
				rep.Cases = append(rep.Cases, judge.NewCaseResult(&list[i]))
			}
			pairs = append(pairs, job{c: i, seed: s})
		}
	}
	rep.Planned = len(pairs)
	go func() {
		defer func() {
			close(jobs)
			wg.Wait()
			close(events)
		}()
		for _, j := range pairs {
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	var firstErr error
	for e := range events {
		p := Progress{Phase: e.phase, Case: list[e.c].Name, Seed: e.seed, Done: rep.Runs, Total: rep.Planned}
		if e.phase == PhaseDone {
			switch {
			case e.err != nil && ctx.Err() != nil:
				continue // stopped by the interruption: not a result
			case e.err != nil:
				if firstErr == nil {
					firstErr = e.err
				}
				continue
			}
			rep.Runs++
			lossAllowed := list[e.c].LossAllowed
			if e.r.Run != nil {
				lossAllowed = list[e.c].LossAllowedIn(e.r.Run)
			}
			rep.Cases[slot[e.c]].Add(e.r, lossAllowed)
			p.Done, p.Result = rep.Runs, e.r
		}
		if opts.Progress != nil {
			opts.Progress(p)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	rep.Interrupted = rep.Runs < rep.Planned && ctx.Err() != nil
	rep.Finish()
	rep.Elapsed = time.Since(start)
	return rep, nil
}
