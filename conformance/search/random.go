package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/conformance/variant"
)

// RandomOptions shape the standing random check (Random).
type RandomOptions struct {
	// Runs is how many schedules to run; FirstSeed the first one's seed.
	Runs      int
	FirstSeed uint64
	// Workers run that many schedules at once (0: 1). The result does not
	// depend on it.
	Workers      int
	CheckTimeout time.Duration
	NoFailpoints bool
	Context      context.Context
	// Variant, when its Name is set, runs every schedule on it instead of
	// the safe settings (with its era): to show the check finds its bug.
	Variant variant.Variant
	// Progress, when set, hears of each run as it is judged, from one
	// goroutine at a time.
	Progress func(done, total int, r *judge.RunResult)
	// Target, when set, runs the schedules instead of the simulator, one
	// at a time (a fresh local cluster of real processes each, say); they
	// are drawn for real processes (ForLive). Its Name labels the runs.
	Target Runner
}

// Runner carries out a run on a target other than the simulator.
type Runner interface {
	Name() string
	Run(ctx context.Context, spec run.Spec) (*run.Result, error)
}

// RandomCase is the case the standing random check judges every run by:
// the strong guarantees on the safe settings, nothing allowed.
func RandomCase() *cases.Case {
	c := Case(variant.Safe)
	c.AllowedFor = workloadAllows
	c.Hunt = false // the standing check: a run that tested nothing is no pass
	c.Name = "random"
	c.Require = cases.RecoveredLongest // runs drawn with unclean recovery (lastReplicaStanding)
	c.Summary = "random schedules of every fault kind and cluster shape on the safe settings, coverage-guided"
	return c
}

// round is how many schedules are drawn before the corpus learns from
// them: fixed, so that the runs do not depend on Workers.
const round = 4

// Random runs opts.Runs random schedules on the safe settings and judges
// each by RandomCase. It is guided by coverage, as coverage-guided fuzzers
// are: a schedule whose run reached a protocol situation no earlier run
// reached joins the corpus, and half of the later schedules are mutations
// of a corpus entry (fault times and lengths moved, a fault added or
// taken away) rather than fresh draws. Everything comes from FirstSeed:
// the same options give the same runs. A run's Spec is the whole run, so
// its run file replays it exactly, mutated or not.
func Random(opts RandomOptions) (*judge.Report, error) {
	if opts.Runs <= 0 {
		return nil, fmt.Errorf("random: %d runs: want at least 1", opts.Runs)
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	c := RandomCase()
	cr := judge.NewCaseResult(c)
	rep := &judge.Report{Cases: []*judge.CaseResult{cr}, Planned: opts.Runs}
	start := time.Now()
	rng := rand.New(rand.NewPCG(opts.FirstSeed, 0x5eed))
	seen := map[run.Situation]bool{}
	var corpus []run.Spec
	schedOpts := ScheduleOptions{AllKinds: true, NoFailpoints: opts.NoFailpoints || opts.Target != nil}
	for next := 0; next < opts.Runs; {
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		var specs []run.Spec
		for len(specs) < round && next+len(specs) < opts.Runs {
			seed := opts.FirstSeed + uint64(next+len(specs))
			var s run.Spec
			// On real processes every schedule is a fresh draw, so that
			// `--random 1 --seed N` replays any of them (a run's timing is
			// its own there, a corpus's mutations no exact replay).
			if len(corpus) > 0 && opts.Target == nil && rng.IntN(2) == 0 {
				s = Mutate(corpus[rng.IntN(len(corpus))], seed)
			} else {
				s = RandomSchedule(seed, schedOpts)
				if v := opts.Variant; v.Name != "" {
					v.Apply(&s)
					if v.Hunt.Era != nil {
						v.Hunt.Era(&s)
					}
				}
			}
			if opts.Target != nil {
				ForLive(&s)
			}
			specs = append(specs, s)
		}
		results, err := runAll(specs, c, opts)
		if err != nil {
			return nil, err
		}
		for i, r := range results {
			next++
			rep.Runs++
			cr.Add(r, r.Run != nil && c.LossAllowedIn(r.Run))
			if opts.Progress != nil {
				opts.Progress(next, opts.Runs, r)
			}
			fresh := false
			for sit := range r.Run.Reached {
				if !seen[sit] {
					seen[sit], fresh = true, true
				}
			}
			if fresh {
				corpus = append(corpus, specs[i])
			}
		}
	}
	rep.Elapsed = time.Since(start)
	rep.Finish()
	return rep, nil
}

// runAll runs specs on the simulator, opts.Workers at a time, and judges
// each by c; results come back in the order of specs.
func runAll(specs []run.Spec, c *cases.Case, opts RandomOptions) ([]*judge.RunResult, error) {
	if opts.Target != nil {
		return runOn(specs, c, opts)
	}
	out := make([]*judge.RunResult, len(specs))
	errs := make([]error, len(specs))
	sem := make(chan struct{}, max(opts.Workers, 1))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			t := time.Now()
			res, err := sim.Run(spec)
			if err != nil {
				errs[i] = fmt.Errorf("random seed %d: %w", spec.Seed, err)
				return
			}
			r := judge.Judge(c, res, opts.CheckTimeout)
			r.Elapsed, r.Target = time.Since(t), "sim"
			out[i] = r
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Mutate derives a new schedule from spec for seed: the run's own seed
// becomes seed, every fault and failpoint moves by up to a second and
// lasts up to half as long again or half as long, and now and then a
// crash, pause or isolation is added or a fault taken away. Power losses
// and replaced disks are only moved, never added: where they may strike
// is what keeps a schedule within what the recipe promises.
func Mutate(spec run.Spec, seed uint64) run.Spec {
	rng := rand.New(rand.NewPCG(seed, 0x6d757461))
	s := spec.Clone()
	s.Seed = seed
	latest := s.DurationMs - 500
	move := func(t *run.Trigger, forMs *int64) {
		if t.AfterAcks > 0 {
			t.AfterAcks = max(1, t.AfterAcks+rng.IntN(11)-5)
		} else {
			t.AtMs = max(0, t.AtMs+rng.Int64N(2001)-1000)
		}
		if *forMs > 0 {
			*forMs = max(100, *forMs/2+rng.Int64N(*forMs+1))
		}
		if end := t.AtMs + *forMs; t.AfterAcks == 0 && end > latest {
			t.AtMs = max(0, latest-*forMs)
		}
	}
	for i := range s.Faults {
		if s.Faults[i].Kind == run.FaultBounceLeader {
			continue // it needs its whole length before the workload ends
		}
		move(&s.Faults[i].When, &s.Faults[i].ForMs)
	}
	for i := range s.Failpoints {
		move(&s.Failpoints[i].When, &s.Failpoints[i].DownMs)
	}
	switch rng.IntN(4) {
	case 0:
		if i := rng.IntN(len(s.Faults) + 1); i < len(s.Faults) && len(s.Faults) > 1 {
			s.Faults = slices.Delete(s.Faults, i, i+1)
		}
	case 1:
		if touchesOnly(s) == nil {
			f := run.Fault{When: run.Trigger{AtMs: 1000 + rng.Int64N(max(latest-4000, 1))}, ForMs: 200 + rng.Int64N(3000),
				Kind: pick(rng, []run.FaultKind{run.FaultCrash, run.FaultPause, run.FaultIsolate}),
				Role: pick(rng, []run.Role{run.RoleLeader, run.RoleFollower})}
			s.Faults = append(s.Faults, f)
		}
	}
	return s
}

// touchesOnly is the set of brokers a schedule with a power loss or a
// replaced disk confines its faults to; nil when it has none (any broker
// may be struck).
func touchesOnly(s run.Spec) []int {
	risky := false
	var nodes []int
	for _, f := range s.Faults {
		if f.Kind == run.FaultPowerLoss || f.Kind == run.FaultReplaceDisk || f.Kind == run.FaultDamageLog {
			risky = true
		}
		if f.Node > 0 && !slices.Contains(nodes, f.Node) {
			nodes = append(nodes, f.Node)
		}
	}
	for _, fp := range s.Failpoints {
		if strings.Contains(fp.Term, "powerloss") {
			risky = true
		}
	}
	if !risky {
		return nil
	}
	return nodes
}
