package search

import (
	"math/rand/v2"
	"slices"

	"github.com/watermarkhq/watermark/conformance/nemesis"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// moreKinds adds to a RandomSchedule what ScheduleOptions.AllKinds asks
// for, within the same limits: a replaced disk loses everything its broker
// held, so it counts as the run's one power loss (only where pinned says
// which two brokers the faults may touch); losing power everywhere at once
// is safe only over logs synced before each acknowledgement. A run with a
// power loss or a replaced disk loses no single message: the third
// replica, never struck, must stay in the ISR, and lost fetches or
// answers can push it out (then the struck two are the whole ISR, and the
// controller elects the one that lost its log: random search found that).
// Damage to a log counts as that one fault too; clean stops (one broker,
// in a row, or every broker in turn, with the machine powered off after
// or not) lose nothing, and strike anywhere.
func moreKinds(cfg *run.Spec, rng *rand.Rand, pinned []int, powerLosses int, latest int64) {
	cfg.Topics[0].Partitions = int32(1 + rng.IntN(3))
	if rng.IntN(4) == 0 {
		cfg.Network.DropRate = 0.01
	}
	synced := rng.IntN(4) == 0
	if synced {
		cfg.Broker.FlushEveryAppend = true
	}
	node := func() int {
		if pinned != nil {
			return pick(rng, pinned)
		}
		return 1 + rng.IntN(cfg.Brokers)
	}
	at := func(lo, hi int64) run.Trigger { return run.Trigger{AtMs: lo + rng.Int64N(max(hi-lo, 1))} }
	for range 1 + rng.IntN(3) {
		var f run.Fault
		switch rng.IntN(7) {
		case 0, 1:
			f = run.Fault{When: at(1000, latest), Kind: run.FaultMessages, ForMs: 500 + rng.Int64N(4000), Messages: nemesis.DrawMessages(rng)}
			if pinned != nil || rng.IntN(2) == 0 {
				f.Node = node()
			} else {
				f.Role = pick(rng, []run.Role{run.RoleLeader, run.RoleFollower})
			}
		case 2:
			// A bounce takes 7 s and two downtimes: it starts early.
			if pinned != nil || cfg.Brokers < 3 || cfg.Topics[0].ReplicationFactor < 3 {
				continue
			}
			f = run.Fault{When: at(1000, 2500), Kind: run.FaultBounceLeader, ForMs: 400 + rng.Int64N(600)}
			if rng.IntN(2) == 0 {
				f.DelayMs = 1000 + rng.Int64N(1500)
			}
			p := kafka.TopicPartition{Topic: cfg.Topics[0].Name, Partition: rng.Int32N(cfg.Topics[0].Partitions)}
			f.Partition = &p
		case 3:
			f = run.Fault{When: at(1000, latest-2000), Kind: run.FaultCrash, Node: node(), ForMs: 300 + rng.Int64N(900),
				Repeat: 1 + rng.IntN(2), GapMs: 100 + rng.Int64N(500)}
		case 4:
			switch {
			case synced && pinned == nil && rng.IntN(2) == 0:
				f = run.Fault{When: at(2000, latest), Kind: run.FaultPowerLossAll, ForMs: 500 + rng.Int64N(2000)}
			case pinned != nil && powerLosses == 0:
				powerLosses++
				f = run.Fault{When: at(1000, latest), Kind: run.FaultReplaceDisk, Node: node(), ForMs: 500 + rng.Int64N(2500)}
			default:
				continue
			}
		case 5:
			// A clean stop loses nothing, even with the machine powered
			// off after it: stops strike anywhere, in rows too.
			f = run.Fault{When: at(1000, latest-2000), Kind: run.FaultStop, Node: node(), ForMs: 300 + rng.Int64N(2500),
				PowerOff: rng.IntN(3) == 0}
			if rng.IntN(3) == 0 {
				f.Repeat, f.GapMs = 1, 200+rng.Int64N(800)
			}
		case 6:
			switch {
			case rng.IntN(2) == 0:
				f = run.Fault{When: at(1000, 3000), Kind: run.FaultRollingStop, ForMs: 300 + rng.Int64N(1200),
					GapMs: 200 + rng.Int64N(1500), PowerOff: rng.IntN(3) == 0}
			case pinned != nil && powerLosses == 0:
				// Damage costs the broker what it cuts, as a replaced
				// disk does: the run's one such fault, on a pinned broker.
				powerLosses++
				f = run.Fault{When: at(1000, latest), Kind: run.FaultDamageLog, Node: node(), ForMs: 500 + rng.Int64N(2500),
					DamageAt: nemesis.DrawDamageAt(rng), Clean: rng.IntN(2) == 0}
			default:
				continue
			}
		}
		cfg.Faults = append(cfg.Faults, f)
	}
	powerLosses = moreWorkloads(cfg, rng, pinned, powerLosses, latest)
	if pinned != nil && powerLosses > 0 {
		// The third replica must stay in the ISR: no lost messages, and
		// no rolling stop, whose controlled shutdown takes it out too.
		cfg.Network.DropRate = 0
		cfg.Faults = slices.DeleteFunc(cfg.Faults, func(f run.Fault) bool {
			return f.Kind == run.FaultMessages || f.Kind == run.FaultRollingStop
		})
	}
	if pinned == nil && powerLosses == 0 && cfg.Brokers == 3 && cfg.Topics[0].ReplicationFactor == 3 {
		lastReplicaStanding(cfg, rng)
	}
}

// lastReplicaStanding draws, one time in two, one of the schedules that
// leave a partition (t-0) with one live replica and then strike it, which
// independent draws almost never line up: its followers go down one after
// the other, so that the ISR shrinks to the leader, and then
//   - with every append synced and min ISR 2, the leader's log is damaged
//     while it is down (damaged-last-isr-member): the follower that left
//     the ISR last is an eligible leader replica with every committed
//     record; it must lead, and nothing committed may be lost;
//   - or, with min ISR 1 and KIP-966's unclean recovery on, the leader dies
//     for good (aggressive) or comes back on an empty disk (balanced): the
//     controller asks the followers as they return and elects the longer
//     (unclean-recovery-choice). Loss is allowed by design in such a run
//     (run.Spec.LossByDesign); the choice is judged (RecoveredLongest).
//
// Only in runs with no power loss or damage of their own (the first one
// needs every other copy intact) on three brokers, RF 3.
func lastReplicaStanding(cfg *run.Spec, rng *rand.Rand) {
	t1 := 1000 + rng.Int64N(500)
	t2 := t1 + searchSessionMs + 500 + rng.Int64N(500) // after the controller took the first out
	t3 := t2 + searchSessionMs + 500 + rng.Int64N(500)
	switch rng.IntN(4) {
	case 0:
		cfg.Broker.FlushEveryAppend, cfg.Broker.MinInsyncReplicas = true, 2
		// Damage below the recovery point (in a rolled segment) is found
		// by the read that meets it, after the replica may have led
		// (SEMANTICS, Damage below the recovery point): a start that
		// reads every segment finds it first.
		cfg.Broker.LogVerifyOnStart = true
		downMs := 500 + rng.Int64N(1000)
		back := t3 + downMs + 500 + rng.Int64N(1500) // the followers return after the damaged leader
		cfg.Faults = append(cfg.Faults,
			run.Fault{When: run.Trigger{AtMs: t1}, Kind: run.FaultCrash, Role: run.RoleFollower, ForMs: back - t1},
			run.Fault{When: run.Trigger{AtMs: t2}, Kind: run.FaultCrash, Role: run.RoleFollower, ForMs: back - t2 + rng.Int64N(500)},
			run.Fault{When: run.Trigger{AtMs: t3}, Kind: run.FaultDamageLog, Role: run.RoleLeader, ForMs: downMs,
				DamageAt: nemesis.DrawDamageAt(rng), Clean: rng.IntN(2) == 0})
	case 1:
		// The loss this allows stays on the data path: no group, whose
		// offsets topic would lose commits and generations with it.
		cfg.Broker.MinInsyncReplicas = 1
		cfg.Workload.GroupConsumers, cfg.Workload.Group, cfg.Workload.SeekBackEveryMs = 0, "", 0
		cfg.Faults = slices.DeleteFunc(cfg.Faults, func(f run.Fault) bool { return f.Kind == run.FaultCrashConsumer })
		back := t3 + 300 + rng.Int64N(1200) // the followers return while the leader is down
		leader := run.Fault{When: run.Trigger{AtMs: t3}, Kind: run.FaultCrash, Role: run.RoleLeader, ForMs: searchDuration - 500 - t3}
		cfg.Controller.UncleanRecovery = controller.RecoveryAggressive
		if rng.IntN(2) == 0 {
			cfg.Controller.UncleanRecovery = controller.RecoveryBalanced
			leader.Kind, leader.ForMs = run.FaultReplaceDisk, back-t3+500+rng.Int64N(2000)
		}
		cfg.Faults = append(cfg.Faults,
			run.Fault{When: run.Trigger{AtMs: t1}, Kind: run.FaultIsolate, Role: run.RoleFollower, ForMs: back - t1},
			run.Fault{When: run.Trigger{AtMs: t2}, Kind: run.FaultIsolate, Role: run.RoleFollower, ForMs: back - t2},
			leader)
	}
}

// moreWorkloads draws the workloads the cases use besides steady produce
// and consume, after every fault so that the faults' draws stay those of
// the schedule without them: small segments that roll (and, half the
// time, retention that deletes them while readers and followers are
// behind), consumers that look offsets up between fetches, and a consumer
// group whose members crash, for a moment or past their session, while the
// coordinator's offsets topic lives through the run's broker faults;
// sometimes its members seek back to read again.
func moreWorkloads(cfg *run.Spec, rng *rand.Rand, pinned []int, powerLosses int, latest int64) int {
	if rng.IntN(2) == 0 {
		cfg.Broker.LogSegmentBytes = pick(rng, []int64{512, 1024, 4096})
		if rng.IntN(2) == 0 {
			cfg.Broker.LogRetentionBytes = pick(rng, []int64{1024, 2048})
			cfg.Broker.LogRetentionCheckIntervalMs = 200
		}
		if pinned != nil && powerLosses == 0 && rng.IntN(2) == 0 {
			// Segments that roll faster than logs sync, and rolled ones
			// synced only with the checkpoints: a power loss then often
			// finds two segments unsynced (segment-roll-power-loss).
			powerLosses++
			cfg.Broker.FlushIntervalMs, cfg.Broker.HWCheckpointIntervalMs = 1000, 5000
			cfg.Broker.LogSegmentBytes = 512
			cfg.Workload.ProduceIntervalMs = min(cfg.Workload.ProduceIntervalMs, 50)
			cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: 2000 + rng.Int64N(max(latest-2000, 1))},
				Kind: run.FaultPowerLoss, Node: pick(rng, pinned), ForMs: 500 + rng.Int64N(2000)})
		}
	}
	if rng.IntN(2) == 0 {
		// Consumers look offsets up between fetches: answers while HWs
		// lag log ends and retention moves log starts.
		cfg.Workload.ListOffsetsEveryMs = pick(rng, []int64{200, 1000})
	}
	if cfg.Brokers < 3 || rng.IntN(2) == 0 {
		return powerLosses
	}
	w := &cfg.Workload
	w.GroupConsumers, w.Group = 2+rng.IntN(2), "g"
	w.CommitMode = pick(rng, []run.CommitMode{run.CommitAfterProcess, run.CommitBeforeProcess})
	w.ConsumerSessionTimeoutMs, w.ProcessPerTick = 1500, 2
	// Offsets writes that time out while a follower of the offsets
	// partition is down or slow, not only past Kafka's 5 s.
	cfg.Broker.OffsetsCommitTimeoutMs = pick(rng, []int64{500, 1500, 5000})
	if rng.IntN(4) == 0 {
		w.SeekBackEveryMs = 2000
	}
	for range rng.IntN(3) {
		down := pick(rng, []int64{300 + rng.Int64N(700), 2500 + rng.Int64N(2500)}) // back within its session, or past it
		cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: 1000 + rng.Int64N(max(latest-1000, 1))},
			Kind: run.FaultCrashConsumer, Node: rng.IntN(w.GroupConsumers), ForMs: down})
	}
	return powerLosses
}

// workloadAllows is what a random schedule's workload tolerates by design:
// an at-least-once group (commits after processing, or consumers that
// seek back) processes records again, an at-most-once one may skip them.
func workloadAllows(spec run.Spec) []string {
	w := spec.Workload
	if w.GroupConsumers == 0 {
		return nil
	}
	if w.CommitMode == run.CommitBeforeProcess && w.SeekBackEveryMs == 0 {
		return []string{linearizability.AnomalyUnprocessed}
	}
	if w.CommitMode == run.CommitBeforeProcess {
		return []string{linearizability.AnomalyUnprocessed, linearizability.AnomalyReprocessed}
	}
	return []string{linearizability.AnomalyReprocessed}
}
