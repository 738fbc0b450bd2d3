package cases

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/fpname"
	"github.com/watermarkhq/watermark/linearizability"
)

// shutdownCases stop brokers the way operators do (SIGTERM: a controlled
// shutdown, a flush, a clean-shutdown marker) and restart them
// (spec/SEMANTICS.md, Replication, "Controlled shutdown and clean
// restarts").
var shutdownCases = []Case{
	{
		Name: "rolling-restart",
		Summary: "every broker in turn is stopped with SIGTERM and started again, twice over, under acks=all load: " +
			"each stop moves its leaderships first, so nothing is lost, no send fails, and none stalls for longer than a leader move (p99 under a second)",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Topics = []run.Topic{{Name: "t", Partitions: 3, ReplicationFactor: 3}}
			// Two rounds; each broker is down a second, and the next
			// stops two seconds after it is back (caught up and in the
			// ISR again, as an operator waits for).
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultRollingStop, ForMs: 1000, GapMs: 2000},
				{When: run.Trigger{AtMs: 16000}, Kind: run.FaultRollingStop, ForMs: 1000, GapMs: 2000},
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			if err := requireNoStalls(r, 1000); err != nil {
				return err
			}
			if r.Stats.CleanStops < 2*r.Spec.Brokers {
				return fmt.Errorf("%d of %d brokers stopped cleanly: want every stop clean", r.Stats.CleanStops, 2*r.Spec.Brokers)
			}
			return reached(run.SitLeaderMovedByShutdown)(r)
		},
	},
	{
		Name: "clean-stop-damage",
		Summary: "RF 3, min ISR 2: brokers 2 and 3 are stopped with SIGTERM one after the other; 15 s later broker 1, alone in every ISR, is stopped too, and its logs are damaged (a batch anywhere: first, middle, last, or the only one); " +
			"broker 1 comes back first, then 2 and 3: the damaged replica leads nothing it lost, the one that left the ISR last (an eligible leader replica, back after a clean stop) leads, and every acknowledged record is read",
		Spec: cleanStopDamage,
		Require: func(r *run.Result) error {
			if err := reached(run.SitCleanStopThenDamage, run.SitDamagedLastISR)(r); err != nil {
				return err
			}
			return requireLedAfter(r, cleanStopDamageBack)
		},
	},
	{
		Name: "cluster-stop-power-loss",
		Summary: "every broker is stopped with SIGTERM, one after the other, and each machine then loses power (a data centre shut down); all come back: " +
			"a clean stop flushed every log before its marker, so nothing is lost, and every partition is led again",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Topics = []run.Topic{{Name: "t", Partitions: 3, ReplicationFactor: 3}}
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultStop, Node: 3, ForMs: 9000, PowerOff: true},
				{When: run.Trigger{AtMs: 3500}, Kind: run.FaultStop, Node: 2, ForMs: 8500, PowerOff: true},
				{When: run.Trigger{AtMs: 4000}, Kind: run.FaultStop, Node: 1, ForMs: 7000, PowerOff: true},
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.CleanStops < 3 || r.Stats.PowerLosses < 3 {
				return fmt.Errorf("%d clean stops and %d power losses: want every broker stopped cleanly and its machine powered off", r.Stats.CleanStops, r.Stats.PowerLosses)
			}
			return requireLedAfter(r, 12000)
		},
	},
	{
		Name: "elr-stop-power-cut",
		Summary: "RF 3, min ISR 2, logs synced every 300 ms: broker 3 crashes; broker 2 is stopped with SIGTERM, leaves the ISR as an eligible leader replica, and its machine loses power as the stop begins (before any flush); the leader crashes before broker 2 is back: " +
			"with no clean-shutdown marker, broker 2's restart is unclean and it may not lead from the ELR; the partition waits for the leader",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			cfg.Broker.FlushIntervalMs = 300
			cfg.Broker.HWCheckpointIntervalMs = 5000
			cfg.DurationMs = 24000
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 2000}, Kind: run.FaultCrash, Node: 3, ForMs: 18000},
				{When: run.Trigger{AtMs: 4000}, Kind: run.FaultStop, Node: 2, ForMs: 5000},
				{When: run.Trigger{AtMs: 8000}, Kind: run.FaultCrash, Node: 1, ForMs: 10000},
			}
			// Everything written since the last sync is lost, none of it in
			// part: the log looks whole, as a clean stop's would.
			cfg.Failpoints = []run.Failpoint{
				// Broker 2 comes back after the leader crashed: as the
				// partition's one eligible leader replica, if it may.
				{Name: fpname.ShutdownBeforeFlush, Term: `1*return("powerloss-worst")`, Node: 2, When: run.Trigger{AtMs: 3900}, DownMs: 5000},
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			fired := false
			for _, n := range r.Notes {
				switch {
				case n.Kind == run.NoteFailpoint && strings.Contains(n.Text, fpname.ShutdownBeforeFlush):
					fired = true
				case n.Kind == run.NoteElection && n.AtMs > 8000 && n.AtMs < 18000 && n.Leader == 2:
					return fmt.Errorf("broker 2 led at %d ms: its stop never flushed, and it came back without a clean-shutdown marker", n.AtMs)
				}
			}
			if !fired {
				return fmt.Errorf("broker 2's power was not cut as it stopped")
			}
			return nil
		},
	},
	{
		Name: "stale-checkpoint-damage",
		Summary: "RF 3, min ISR 2, every append synced, HW checkpoints on Kafka's 5 s timer: broker 3 crashes, broker 2 is stopped with SIGTERM (the ISR shrinks to the leader), and 800 ms later the leader crashes with its last batch damaged and comes back first: " +
			"the HW it checkpointed as its ISR shrank shows the batch it lost, so it does not lead; broker 2, the eligible leader replica, does once back",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			cfg.Broker.FlushEveryAppend = true
			cfg.Broker.HWCheckpointIntervalMs = 5000
			cfg.DurationMs = 20000
			// Sparse writes: as the ISR shrinks, the leader's last batch
			// is nearly always committed, so its loss is a committed one.
			cfg.Workload.ProduceIntervalMs = 200
			// The timer writes at 5 s and 10 s; the ISR shrinks at 5.3 s
			// and the leader dies at 6.1 s, between the two.
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 2000}, Kind: run.FaultCrash, Node: 3, ForMs: 12000},
				{When: run.Trigger{AtMs: 5300}, Kind: run.FaultStop, Node: 2, ForMs: 6000},
				{When: run.Trigger{AtMs: 6100}, Kind: run.FaultDamageLog, Node: 1, ForMs: 1000, DamageAt: run.DamageLast},
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			if err := reached(run.SitDamagedLastISR)(r); err != nil {
				return err
			}
			return electedAfter(r, 6100)
		},
	},
}

// cleanStopDamageBack is when brokers 2 and 3 return in clean-stop-damage.
const cleanStopDamageBack = 28000

// cleanStopDamage is an operator's schedule that once lost every record, on three
// partitions whose preferred leaders are 1, 2 and 3: broker 1 follows two
// of them until the others stop, then leads them alone for 15 s. Where the
// damage lands follows the seed, so that ten seeds strike the first, the
// middle, the last and any batch.
func cleanStopDamage(seed uint64) run.Spec {
	cfg := base(seed)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 3, ReplicationFactor: 3}}
	cfg.DurationMs = 36000
	at := damageAtFor(seed)
	cfg.Faults = []run.Fault{
		{When: run.Trigger{AtMs: 3000}, Kind: run.FaultStop, Node: 2, ForMs: cleanStopDamageBack - 3000},
		{When: run.Trigger{AtMs: 4000}, Kind: run.FaultStop, Node: 3, ForMs: cleanStopDamageBack - 4000},
		{When: run.Trigger{AtMs: 19000}, Kind: run.FaultDamageLog, Node: 1, Clean: true, DamageAt: at,
			ForMs: cleanStopDamageBack - 6000 - 19000},
	}
	return cfg
}

// damageAtFor is where a case's damage lands for seed: ten seeds strike
// the middle, the first, the last and any batch, and seeds 1 to 3 (make
// mutate's) the first, the last and any.
func damageAtFor(seed uint64) run.DamageAt {
	return []run.DamageAt{run.DamageMiddle, run.DamageFirst, run.DamageLast, run.DamageAny}[seed%4]
}

// requireLedAfter: every partition of the run had a leader again after
// atMs, when replicas holding its committed records were back; one that
// stayed offline broke the promise.
func requireLedAfter(r *run.Result, atMs int64) error {
	if len(r.Stats.OfflineAtEnd) > 0 {
		return Broken(PromiseLedAgain, "partitions %s had no leader at the end, though replicas holding every committed record came back at %d ms", strings.Join(r.Stats.OfflineAtEnd, ", "), atMs)
	}
	return nil
}

// requireNoStalls: every send succeeded, and 99 in 100 were answered
// within limitMs: a stop that moves its leaderships first stalls a
// partition no longer than a leader move.
func requireNoStalls(r *run.Result, limitMs int64) error {
	var took []int64
	failed := 0
	var first []string
	for _, op := range r.History {
		if op.Kind != linearizability.KindProduce {
			continue
		}
		if op.Outcome != linearizability.OutcomeOK {
			if failed++; failed <= 3 {
				first = append(first, fmt.Sprintf("op %d (%s, called at %d ms) ended %s: %s", op.ID, op.TP(), op.Call, op.Outcome, op.Error))
			}
			continue
		}
		took = append(took, op.Return-op.Call)
	}
	if failed > 0 {
		return Broken(PromiseSendsSucceed, "brokers stopped cleanly, one at a time: %d of %d sends did not succeed: %s", failed, len(took)+failed, strings.Join(first, "; "))
	}
	if len(took) == 0 {
		return fmt.Errorf("nothing was produced")
	}
	slices.Sort(took)
	p99 := took[(len(took)*99)/100]
	if p99 > limitMs {
		return Broken(PromiseNoStall, "brokers stopped cleanly, one at a time: the 99th percentile of %d sends took %d ms (the slowest %d ms): want at most %d ms, a leader move", len(took), p99, took[len(took)-1], limitMs)
	}
	return nil
}
