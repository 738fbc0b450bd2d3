// Package search hunts a variant's bug down with no handwritten schedule:
// from each seed it draws a whole run (RandomSchedule: cluster shape,
// faults, failpoint activations), runs it on the simulator with the
// variant's settings, and stops at the first run that breaks the strong
// guarantees. The same schedules hold on the safe settings (see the
// tests), so what a search finds is the variant's doing, not the
// generator's.
package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/judge"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/sim"
	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/linearizability"
)

// ScheduleOptions restrict what RandomSchedule draws.
type ScheduleOptions struct {
	// NoFailpoints draws no failpoint activations (for binaries built
	// without them).
	NoFailpoints bool
	// FastFailover draws more faults, most of them on the current leader
	// with short downtimes, so leadership changes hands several times in
	// quick succession: the schedules epoch-truncation bugs need.
	FastFailover bool
	// AllKinds also draws every other fault kind (messages faults,
	// leadership bounces, restarts in a row, a replaced disk, power loss
	// of the whole cluster over fsynced logs) and more cluster shapes (up
	// to three partitions, lossy networks): the standing random check.
	// The schedule drawn without it is a prefix of the one drawn with it.
	AllKinds bool
}

// The generator's limits.
const (
	searchSessionMs = 1500 // the controller's session timeout
	searchDuration  = 12000
	searchSettle    = 10000
)

// RandomSchedule draws a whole run from seed, on the safe reference
// settings: a cluster of 2 or 3 brokers (RF 2 or 3, min ISR 1 or 2), a
// workload, one to four faults (crash, power loss, pause, isolate, slow; of
// a numbered broker, or of the leader or a follower when they strike) at
// random times or after a random number of acknowledgements, and zero to
// three failpoints with single-shot terms. Down times are sometimes shorter
// than the controller's session timeout, so a restarted broker keeps its
// place where KeepISROnRestart allows it. Every random choice comes from a
// PCG seeded with seed; the run's own seed is seed too.
//
// Two limits keep the schedules within what the recipe promises, so that
// the safe settings find nothing:
//   - Power loss only on the strong recipe's RF 3 with min ISR 2, at most
//     once per run (fault or failpoint), and in such a run every fault and
//     failpoint touches only two brokers (by number, no roles, no "every
//     broker"): the third replica is never faulted and stays in the ISR.
//     Without fsync an acknowledged record may be durable nowhere, and the
//     controller re-elects the last ISR member after it lost power (Kafka
//     before KIP-966 does too), so these lose acknowledged records
//     legitimately: two power losses in a row; one on an ISR of one (min
//     ISR 1); with RF 2, one replica losing power while the other crashes
//     and restarts (the restarted one leaves the ISR, the one that lost its
//     log leads when it returns); with RF 3, the ISR shrunk to one broker
//     by two other faults, then that broker losing power. Random search
//     found each of these on the safe settings before the limit; this is
//     also why run.Nemesis has PowerLossOnlyInSync.
//   - Every fault ends before the workload does, so the final read can
//     judge every acknowledged write.
func RandomSchedule(seed uint64, opts ScheduleOptions) (cfg run.Spec) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg = run.DefaultSpec(seed)
	cfg.ContinueAfterViolation = true
	cfg.Controller.SessionTimeoutMs = searchSessionMs
	cfg.DurationMs = searchDuration
	cfg.SettleMs = searchSettle

	cfg.Brokers = 2 + rng.IntN(2)
	rf := 2 + rng.IntN(cfg.Brokers-1)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: rf}}
	cfg.Broker.MinInsyncReplicas = 1 + rng.IntN(2)
	cfg.Broker.HWCheckpointIntervalMs = pick(rng, []int64{0, 1000, 5000})
	cfg.Broker.FlushIntervalMs = pick(rng, []int64{0, 1000, 3000})

	cfg.Workload.Producers = 1 + rng.IntN(2)
	cfg.Workload.MaxInFlight = pick(rng, []int{1, 5})
	cfg.Workload.ProduceIntervalMs = pick(rng, []int64{20, 50, 100, 200})

	// pinned, when set, are the only brokers this run's faults touch: it
	// may have one power loss.
	var pinned []int
	if rf >= 3 && cfg.Broker.MinInsyncReplicas >= 2 && rng.IntN(2) == 0 {
		pinned = rng.Perm(cfg.Brokers)[:2]
		pinned[0]++
		pinned[1]++
	}
	powerLosses := 0
	node := func() int {
		if pinned != nil {
			return pick(rng, pinned)
		}
		return 1 + rng.IntN(cfg.Brokers)
	}
	// latest is the last moment a fault may start: it, and its longest
	// down time, end before the workload does.
	const longest = 6000
	latest := cfg.DurationMs - longest - 500

	downMs := func() int64 {
		if rng.IntN(2) == 0 {
			return 200 + rng.Int64N(searchSessionMs-400) // back within its session
		}
		return 2000 + rng.Int64N(longest-2000)
	}
	when := func() run.Trigger {
		if rng.IntN(3) == 0 {
			return run.Trigger{AfterAcks: 1 + rng.IntN(40)}
		}
		return run.Trigger{AtMs: 1000 + rng.Int64N(latest-1000)}
	}

	kinds := []run.FaultKind{run.FaultCrash, run.FaultPowerLoss, run.FaultPause, run.FaultIsolate, run.FaultSlow}
	faults := 1 + rng.IntN(4)
	if opts.FastFailover {
		faults = 6 + rng.IntN(7)
	}
	for range faults {
		f := run.Fault{When: when(), Kind: pick(rng, kinds), ForMs: downMs()}
		if opts.FastFailover && pinned == nil && rng.IntN(4) > 0 {
			if rng.IntN(3) > 0 {
				// The leader goes, for a short while: the next election,
				// and the one after, come quickly.
				f = run.Fault{When: when(), Kind: pick(rng, []run.FaultKind{run.FaultCrash, run.FaultIsolate}),
					Role: run.RoleLeader, ForMs: 200 + rng.Int64N(2*searchSessionMs)}
			} else {
				// A follower lags a little, or misses an epoch or two.
				f = run.Fault{When: when(), Kind: run.FaultIsolate, Role: run.RoleFollower,
					ForMs: pick(rng, []int64{300 + rng.Int64N(700), 1000 + rng.Int64N(longest-1000)})}
			}
			cfg.Faults = append(cfg.Faults, f)
			continue
		}
		if f.Kind == run.FaultPowerLoss {
			if pinned == nil || powerLosses > 0 {
				f.Kind = run.FaultCrash
			} else {
				powerLosses++
			}
		}
		if f.Kind == run.FaultSlow {
			f.DelayMs = 50 + rng.Int64N(1000)
		}
		switch r := rng.IntN(3); {
		case pinned != nil || r == 2:
			f.Node = node()
		case r == 0:
			f.Role = run.RoleLeader
		default:
			f.Role = run.RoleFollower
		}
		cfg.Faults = append(cfg.Faults, f)
	}

	if opts.AllKinds {
		// Drawn last, so that the draws above stay those of the schedule
		// without AllKinds.
		defer func() { moreKinds(&cfg, rng, pinned, powerLosses, latest) }()
	}
	if opts.NoFailpoints {
		return cfg
	}
	names := append([]string(nil), broker.Failpoints...)
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, name := range names[:rng.IntN(4)] {
		action := pick(rng, []string{"crash", "crash", "pause", "powerloss", "powerloss-worst"})
		if strings.HasPrefix(action, "powerloss") {
			if pinned == nil || powerLosses > 0 {
				action = "crash"
			} else {
				powerLosses++
			}
		}
		if rng.IntN(3) == 0 {
			// Another broker goes down when this one reaches the point.
			action += fmt.Sprintf(":%d", node())
		}
		fp := run.Failpoint{Name: name, Term: fmt.Sprintf("1*return(%q)", action), When: when(), DownMs: downMs()}
		if pinned != nil || rng.IntN(2) == 0 {
			fp.Node = node()
		}
		cfg.Failpoints = append(cfg.Failpoints, fp)
	}
	return cfg
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// Case is the strict case random search judges variant v by: no anomaly
// is allowed, no loss, no duplicates; every protocol invariant counts
// (unless the variant's Hunt loosens it).
func Case(v variant.Variant) *cases.Case {
	c := &cases.Case{
		Name:    "search-" + v.Name,
		Summary: "random search on " + v.Name + ": " + v.Summary,
		Spec: func(seed uint64) run.Spec {
			return Schedule(v, seed, ScheduleOptions{})
		},
		Hunt: true,
	}
	if v.Hunt.DivergenceOnly {
		divergenceOnly(c)
	}
	return c
}

// Schedule is the run search tries for seed on v: a RandomSchedule (with
// the variant's fast failovers, if it hunts with them) under the variant's
// settings and era.
func Schedule(v variant.Variant, seed uint64, opts ScheduleOptions) run.Spec {
	opts.FastFailover = opts.FastFailover || v.Hunt.FastFailover
	cfg := RandomSchedule(seed, opts)
	v.Apply(&cfg)
	if v.Hunt.Era != nil {
		v.Hunt.Era(&cfg)
	}
	return cfg
}

// Options say which schedules Search tries.
type Options struct {
	// FirstSeed is the first schedule's seed; the next tries take the
	// seeds after it.
	FirstSeed uint64
	// Tries is how many schedules to try at most (0: 100).
	Tries int
	// CheckTimeout is porcupine's time limit per run (0: no limit).
	CheckTimeout time.Duration
	Schedule     ScheduleOptions
	// Progress, when set, is called after each try.
	Progress func(try int, r *judge.RunResult)
}

// Search runs random schedules on variant v, seed after seed, until one
// violates the strong guarantees (Case), and returns that run and how
// many schedules it tried. found is nil when none of opts.Tries schedules
// did. A run whose verdict is unknown is not a find.
func Search(v variant.Variant, opts Options) (found *judge.RunResult, tries int, err error) {
	if v.Apply == nil {
		return nil, 0, fmt.Errorf("variant %s exists only in spec/protocol's model: explore it with `watermark explore --variant %s`", v.Name, v.Name)
	}
	if opts.Tries <= 0 {
		opts.Tries = 100
	}
	c := Case(v)
	for tries < opts.Tries {
		seed := opts.FirstSeed + uint64(tries)
		tries++
		cfg := Schedule(v, seed, opts.Schedule)
		start := time.Now()
		res, err := sim.Run(cfg)
		if err != nil {
			return nil, tries, fmt.Errorf("search %s seed %d: %w", v.Name, seed, err)
		}
		r := judge.Judge(c, res, opts.CheckTimeout)
		r.Elapsed = time.Since(start)
		if opts.Progress != nil {
			opts.Progress(tries, r)
		}
		if r.Verdict == judge.Violated {
			return r, tries, nil
		}
	}
	return nil, tries, nil
}

// divergenceOnly judges a variant whose scenario runs with unclean
// election: the loss unclean election causes by design is allowed (with
// the producer state it loses: duplicates, dedup failures), but replicas
// must never diverge (LogMatching), which is what the epoch bugs do.
func divergenceOnly(c *cases.Case) {
	c.LossAllowed = true
	c.DuplicatesAllowed = true
	c.Allowed = append(slices.Clone(cases.LossAnomalies), linearizability.AnomalyDuplicate, linearizability.AnomalyDedupFailure)
	c.MustHold = []string{run.InvLogMatching}
}
