package cases

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

// The rare-state cases drive the cluster into the states where
// replication bugs bite and that plain crashes seldom reach: leadership
// that leaves and comes back while a follower is cut off, brokers that
// pause past their session and wake up as zombies, messages lost,
// duplicated and reordered one by one, power lost everywhere at once,
// tails that really tear, disks that come back empty, restarts in a
// row, and group members whose requests arrive a generation late. Each
// requires the situation it is about (run.Situation): a run that never
// got there does not hold.
var rareCases = []Case{
	{
		Name:    "leader-bounce",
		Summary: "leadership leaves a leader and comes back to it (A -> B -> A) while a follower of A's first epoch is cut off, then speaks with its old epoch",
		Spec: func(seed uint64) run.Spec {
			return bounces(base(seed), 0)
		},
		Require: reached(run.SitLeaderReturned),
	},
	{
		Name:    "leader-bounce-slow-follower",
		Summary: "the same bounce, with the follower's messages held back 2 s instead of cut, and consumers' fetches to the first leader up to 8 s: they arrive from epochs that ended",
		Spec: func(seed uint64) run.Spec {
			cfg := bounces(base(seed), 2000)
			cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: 1400}, Kind: run.FaultMessages, Role: run.RoleLeader, ForMs: 9000,
				Messages: &run.MessageFault{Kinds: []string{"fetch"}, Peer: "clients", Direction: "in", DelayMs: 8000}})
			return cfg
		},
		Require: reached(run.SitLeaderReturned, run.SitFencedFetch),
	},
	{
		Name:    "zombie-leader",
		Summary: "a leader pauses for three sessions, is replaced, and wakes up still believing it leads: it may answer only with refusals",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultPause}, Role: run.RoleLeader, IntervalMs: 7000,
				FaultMs: 3 * cfg.Controller.SessionTimeoutMs, MaxFaulty: 1}
			return cfg
		},
		Require: reached(run.SitZombieAnswer),
	},
	{
		Name:    "leader-moves-no-retries",
		Summary: "the preferred leader crashes and, back in the ISR, takes its leadership back (auto.leader.rebalance), with producers that send once: a live leader that steps down must not call failed a write it appended and a reader then sees",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			cfg.Controller.AutoLeaderRebalance = true
			cfg.Network.MaxDelayMs = 40
			cfg.Workload.Idempotent, cfg.Workload.Retries = false, false
			// Broker 1 leads partition 0 and is its preferred leader: down
			// long enough for the producers to move to the broker that
			// takes over, and back in the ISR, it takes its leadership
			// back from that live broker, whose parked produces end.
			// A short request timeout moves the producers on from the
			// dead leader quickly.
			cfg.Workload.RequestTimeoutMs = 800
			// Broker 3's links are slow throughout, so a leader holds each
			// acks=all produce until 3 has fetched it: when leadership
			// moves back to broker 1 (fast, so it rejoins the ISR at once),
			// the broker stepping down holds produces that 1 has copied.
			// On a simulated network or on loopback, where replication
			// otherwise takes microseconds.
			cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 500}, Kind: run.FaultSlow, Node: 3, ForMs: cfg.DurationMs, DelayMs: 20}}
			for at := int64(3000); at < 18000; at += 5000 {
				cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: at}, Kind: run.FaultCrash, Node: 1, ForMs: 3500})
			}
			return cfg
		},
		Require: reached(run.SitRefusedAfterAppend),
	},
	{
		Name:    "slow-replication-no-retries",
		Summary: "followers slowed by 600 ms stay in the ISR, so produces wait past their timeout at the leader, with producers that send once: a produce that timed out after its append must end unknown, not failed",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Workload.Idempotent, cfg.Workload.Retries = false, false
			cfg.Workload.RequestTimeoutMs = 500
			for _, id := range []int{2, 3} {
				cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: 3000}, Kind: run.FaultSlow, Node: id, ForMs: 9000, DelayMs: 600})
			}
			return cfg
		},
		Require: reached(run.SitRefusedAfterAppend),
	},
	{
		Name:    "broker-messages",
		Summary: "messages between brokers and the controller lost, duplicated, reordered and held back one by one, around leader crashes",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultMessages, run.FaultCrash}, Role: run.RoleLeader,
				IntervalMs: 1500, FaultMs: 2000, MaxFaulty: 2,
				Messages: &run.MessageFault{Kinds: []string{"replica-fetch", "replica-fetch-response", "epoch-end", "epoch-end-response",
					"alter-partition", "alter-partition-response", "state-update", "heartbeat"},
					Drop: 0.2, Duplicate: 0.3, Reorder: 0.3, DelayMs: 300}}
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.Duplicated == 0 || r.Stats.Reordered == 0 || r.Stats.Crashes == 0 {
				return fmt.Errorf("%d messages duplicated, %d reordered and %d crashes: want all three", r.Stats.Duplicated, r.Stats.Reordered, r.Stats.Crashes)
			}
			return nil
		},
	},
	{
		Name:    "isr-churn-messages",
		Summary: "followers stop fetching (still alive) and come back, so leaders shrink and grow their ISRs, while state updates and ISR requests and answers are duplicated, reordered and held back",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			churn := &run.MessageFault{Kinds: []string{"state-update", "alter-partition", "alter-partition-response"},
				Duplicate: 0.4, Reorder: 0.5, DelayMs: 1500}
			cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 1000}, Kind: run.FaultMessages, Role: run.RoleLeader, ForMs: 18000, Messages: churn}}
			// Followers also die just after they caught up, while the
			// leader's request to add them back is held back.
			cfg.Nemesis = crashes(run.RoleFollower, 4000, 2500)
			for at := int64(2000); at < 16000; at += 6000 {
				cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: at}, Kind: run.FaultMessages, Role: run.RoleFollower, ForMs: 4000,
					Messages: stopFetching()})
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.ISRShrinks == 0 || r.Stats.ISRExpands == 0 || r.Stats.Duplicated == 0 || r.Stats.Reordered == 0 {
				return fmt.Errorf("ISR shrank %d and grew %d times, %d messages duplicated and %d reordered: want all four",
					r.Stats.ISRShrinks, r.Stats.ISRExpands, r.Stats.Duplicated, r.Stats.Reordered)
			}
			return nil
		},
	},
	{
		Name:    "isr-late-copies",
		Summary: "followers stop fetching and come back, die and come back on empty disks, or are stopped cleanly, so leaders shrink and grow their ISRs, while every ISR request and answer is held up to 3 s and arrives a second time up to 6 s later, after the partition has moved on",
		Spec: func(seed uint64) run.Spec {
			// Every ISR request and answer arrives twice, out of order with
			// the other messages of its link (so heartbeats are not held
			// behind it).
			return followersChurn(isrChurn(seed, run.MessageFault{Kinds: []string{"alter-partition", "alter-partition-response"},
				Duplicate: 1, Reorder: 1, DelayMs: 3000, CopyLateMs: 6000}))
		},
		Require: requireISRChurn(run.SitDuplicateMessage, run.SitISRChangeRefused),
	},
	{
		Name:    "isr-stale-state-updates",
		Summary: "followers stop fetching and come back, die and come back on empty disks, or are stopped cleanly, so the controller and the leaders change ISRs, while the controller's state updates are held up to 2 s, out of order: a leader learns newer ISRs from its answers first and must ignore the older states that arrive after",
		Spec: func(seed uint64) run.Spec {
			// Every state update is held, out of order with the other
			// messages of its link (so heartbeats are not held behind it).
			return followersChurn(isrChurn(seed, run.MessageFault{Kinds: []string{"state-update"}, Direction: "in", Reorder: 1, DelayMs: 2000}))
		},
		Require: requireISRChurn(run.SitISRChangeRefused),
	},
	{
		Name:    "isr-rejoin-new-disk",
		Summary: "a follower leaves the ISR, then loses its disk again and again, each time soon after it caught up and its leader asked (held up to 1.5 s) to add the process that is now gone back to the ISR",
		Spec: func(seed uint64) run.Spec {
			cfg := isrChurn(seed, run.MessageFault{Kinds: []string{"alter-partition", "alter-partition-response"}, Reorder: 1, DelayMs: 1500})
			// Broker 3 stops fetching for 1.5 s (it leaves the ISRs it
			// was in), fetches again, and loses its disk 100 ms later, and
			// again 400 ms after each return, three times; every 4 s.
			for at := int64(2000); at < 27000; at += 4000 {
				cfg.Faults = append(cfg.Faults,
					run.Fault{When: run.Trigger{AtMs: at}, Kind: run.FaultMessages, Node: 3, ForMs: 1500, Messages: stopFetching()},
					run.Fault{When: run.Trigger{AtMs: at + 1600}, Kind: run.FaultReplaceDisk, Node: 3, ForMs: 300, Repeat: 2, GapMs: 400})
			}
			return cfg
		},
		Require: requireISRChurn(),
	},
	{
		Name:    "producer-messages",
		Summary: "idempotent produce requests reach leaders duplicated, reordered and held back (resent on new connections), while leaders crash: the broker keeps each producer's order and writes each batch once",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultMessages, run.FaultCrash}, Role: run.RoleLeader,
				IntervalMs: 1500, FaultMs: 2500, MaxFaulty: 2,
				Messages: &run.MessageFault{Kinds: []string{"produce"}, Peer: "clients", Direction: "in", Duplicate: 0.2, Reorder: 0.3, DelayMs: 60}}
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.Duplicated == 0 || r.Stats.Reordered == 0 {
				return fmt.Errorf("%d produce requests duplicated and %d reordered: want both", r.Stats.Duplicated, r.Stats.Reordered)
			}
			return nil
		},
	},
	{
		Name:    "cluster-power-loss",
		Summary: "every broker loses power at once, twice; with an fsync before each acknowledgement (log.flush.interval.messages=1) nothing acknowledged is lost",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Broker.FlushEveryAppend = true
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 5000}, Kind: run.FaultPowerLossAll, ForMs: 1500},
				{When: run.Trigger{AtMs: 12000}, Kind: run.FaultPowerLossAll, ForMs: 800},
			}
			return cfg
		},
		Require: reached(run.SitClusterPowerLoss),
	},
	{
		Name:    "isr-rejoin-in-hw-gap",
		Summary: "a follower catching up batch by batch when its leader dies: the new leader's HW lags the committed one, and the follower must not rejoin the ISR in that gap",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			// One batch per fetch: the follower's log end climbs through
			// every offset, so it crosses the new leader's HW before the
			// committed one. Forty writes a second keep a follower's HW a
			// batch behind its leader's and let a follower that fell
			// behind catch up (tuned on 200 seeds: all reach the gap).
			cfg.Broker.ReplicaFetchMaxBytes = 1
			cfg.Workload.Producers = 2
			cfg.Workload.ProduceIntervalMs = 50
			// Partition 0's replicas are [1 2 3], led by broker 1. Three
			// times a follower falls out of the ISR, comes back far behind,
			// and the leader dies while it catches up: 1 leads, then 2,
			// then 3, then 1 again.
			cfg.DurationMs = 29000
			for i, r := range [][2]int{{3, 1}, {1, 2}, {2, 3}} {
				at := 2000 + int64(i)*9000
				cfg.Faults = append(cfg.Faults,
					run.Fault{When: run.Trigger{AtMs: at}, Kind: run.FaultIsolate, Node: r[0], ForMs: 2500},
					run.Fault{When: run.Trigger{AtMs: at + 3000}, Kind: run.FaultCrash, Node: r[1], ForMs: 3000})
			}
			return cfg
		},
		Require: reached(run.SitNewLeaderHWBehind, run.SitExpandWhileHWBehind),
	},
	{
		Name:    "epoch-unknown-to-leader",
		Summary: "broker 2 falls behind, leads briefly while broker 3 copies nothing from it, and dies; broker 3, which holds more of the epoch before, leads: 2 comes back with an epoch its leader never had and must truncate where the logs diverge (KIP-279, KAFKA-6361), from a log it reloaded",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			// Partition 0's replicas are [1 2 3], led by broker 1. Broker 2
			// stops fetching for 800 ms (broker 3 copies what it misses),
			// then broker 1 dies: 2, first in the ISR, leads epoch 1 and
			// writes records, while broker 3's fetches are lost for 4 s;
			// then 2 dies too, 3 leads epoch 2, and 2 comes back to it.
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultMessages, Node: 2, ForMs: 800,
					Messages: stopFetching()},
				{When: run.Trigger{AtMs: 3800}, Kind: run.FaultCrash, Node: 1, ForMs: 8000},
				{When: run.Trigger{AtMs: 3800}, Kind: run.FaultMessages, Node: 3, ForMs: 4000,
					Messages: &run.MessageFault{Kinds: []string{"replica-fetch", "epoch-end"}, Direction: "out", Drop: 1}},
				// 2 leads from about 5300 ms; producers reach it within a
				// second or so; it dies before it would drop 3 from the ISR
				// (replica.lag.time.max.ms after its election).
				{When: run.Trigger{AtMs: 7600}, Kind: run.FaultCrash, Node: 2, ForMs: 2500},
			}
			// Producers give up on the dead leader's answers within 2.5 s,
			// so their retries reach broker 2 while it leads.
			cfg.Workload.RequestTimeoutMs = 1500
			return cfg
		},
		Require: allOf(reached(run.SitEpochUnknownToLeader), caughtUpAtEnd),
	},
	{
		Name:    "first-epoch-unknown-to-leader",
		Summary: "the first leader's followers copy none of its records; it dies, and comes back to a leader whose log holds only later epochs: it must drop every record of its own (KIP-279)",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			// Partition 0's replicas are [1 2 3], led by broker 1 in epoch
			// 0, whose answers to its followers' fetches are lost until it
			// dies.
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 1}, Kind: run.FaultMessages, Node: 1, ForMs: 1500,
					Messages: &run.MessageFault{Kinds: []string{"replica-fetch-response"}, Direction: "out", Drop: 1}},
				{When: run.Trigger{AtMs: 1500}, Kind: run.FaultCrash, Node: 1, ForMs: 3000},
			}
			return cfg
		},
		Require: reached(run.SitEpochUnknownToLeader),
	},
	{
		Name:    "leader-crash-followers-behind",
		Summary: "acks=all: both followers' links are 150 ms slow, so the leader's log runs ahead of theirs, and then the leader crashes: whatever it acknowledged must already be on a follower",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			// Partition 0's replicas are [1 2 3], led by broker 1.
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultSlow, Node: 2, ForMs: 6000, DelayMs: 150},
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultSlow, Node: 3, ForMs: 6000, DelayMs: 150},
				{When: run.Trigger{AtMs: 6000}, Kind: run.FaultCrash, Node: 1, ForMs: 4000},
			}
			return cfg
		},
		// The slow links delay the heartbeats, the election and the
		// harness's view of it by a few hundred ms more.
		Require: failover(1000),
	},
	{
		Name:    "slow-follower",
		Summary: "a follower keeps fetching but falls behind (its links 300 ms slow, one batch per fetch): it must leave the ISR within replica.lag.time.max.ms, or it holds the HW and every acks=all produce",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			cfg.Broker.ReplicaFetchMaxBytes = 1
			// A broker serves a connection's requests one at a time, so
			// on real connections each producer has one produce at the
			// leader at once: held by the slowed follower, two would
			// write no faster than it copies. Six write faster.
			cfg.Workload.Producers = 6
			// Partition 0's replicas are [1 2 3], led by broker 1.
			cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: slowFrom}, Kind: run.FaultSlow, Node: 3, ForMs: 8000, DelayMs: 300}}
			return cfg
		},
		Require: func(r *run.Result) error {
			// Kafka looks for lagging followers every
			// replica.lag.time.max.ms/2 (ReplicaManager's isr-expiration),
			// so one leaves within 1.5 times the lag time.
			limit := slowFrom + r.Spec.Broker.ReplicaLagTimeMaxMs*3/2
			left := int64(-1)
			for _, n := range r.Notes {
				if n.Kind == run.NoteISR && n.AtMs >= slowFrom && slices.Contains(n.OldISR, 3) && !slices.Contains(n.ISR, 3) {
					left = n.AtMs
					break
				}
			}
			if left >= 0 && left <= limit {
				return nil
			}
			measured := "had not left it when the run ended"
			if left >= 0 {
				measured = fmt.Sprintf("left it only after %d ms", left-slowFrom)
			}
			if r.Live {
				// From outside, the harness cannot tell that broker 3 fell
				// behind (a broker that does not replicate never does).
				return fmt.Errorf("broker 3 did not leave the ISR within %d ms of being slowed (1.5 times replica.lag.time.max.ms %d): it %s", limit-slowFrom, r.Spec.Broker.ReplicaLagTimeMaxMs, measured)
			}
			return Broken(PromiseISRLag, "broker 3 fell behind from %d ms, fetching all the while, and was still in the ISR at %d ms (replica.lag.time.max.ms %d): it %s",
				slowFrom, limit, r.Spec.Broker.ReplicaLagTimeMaxMs, measured)
		},
	},
	{
		Name:    "last-isr-power-loss",
		Summary: "both followers cut off until the ISR is the leader alone; then it loses power; with an fsync before each acknowledgement it comes back whole and leads again",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			cfg.Broker.FlushEveryAppend = true
			// Partition 0's replicas are [1 2 3], led by broker 1.
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultIsolate, Node: 2, ForMs: 7000},
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultIsolate, Node: 3, ForMs: 7000},
				{When: run.Trigger{AtMs: 7500}, Kind: run.FaultPowerLoss, Node: 1, ForMs: 1000},
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			alone := false
			for _, n := range r.Notes {
				if n.Kind == run.NoteISR && n.AtMs < 7500 {
					alone = slices.Equal(n.ISR, []int32{1})
				}
			}
			if !alone || r.Stats.PowerLosses == 0 {
				return fmt.Errorf("broker 1 did not lose power as the only ISR member (ISR alone: %v, power losses: %d)", alone, r.Stats.PowerLosses)
			}
			return nil
		},
	},
	{
		Name:    "torn-tails",
		Summary: "logs synced every 300 ms; one broker at a time loses power mid-write: recovery drops the torn tail and keeps every synced byte",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Broker.FlushIntervalMs = 300
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultPowerLoss}, IntervalMs: 2000, FaultMs: 1000, MaxFaulty: 1, PowerLossOnlyInSync: true}
			return cfg
		},
		Require: reached(run.SitTornTail),
	},
	{
		Name:    "replaced-disk",
		Summary: "brokers come back on empty disks (replaced drives), one at a time, leaders too: none rejoins the ISR or leads before it holds what was committed",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultReplaceDisk, run.FaultCrash}, IntervalMs: 2500, FaultMs: 1500, MaxFaulty: 1}
			return cfg
		},
		Require: reached(run.SitEmptyDiskReturn),
	},
	{
		Name:    "restart-loop",
		Summary: "a broker crashes again soon after it comes back, up to three times in a row, while it recovers and catches up",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultCrash, run.FaultPowerLoss}, IntervalMs: 4000, FaultMs: 700,
				MaxFaulty: 1, Repeats: 2, PowerLossOnlyInSync: true}
			return cfg
		},
		Require: reached(run.SitRestartInARow),
	},
	{
		Name:    "group-late-commits",
		Summary: "members' commits reach the coordinator up to 3 s late and out of order, while members die and come back and the group rebalances: a commit of an ended generation is refused, never applied",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			cfg.DurationMs = 12000
			cfg.Workload.ProduceIntervalMs = 60
			for n := 1; n <= 3; n++ {
				cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: 500}, Kind: run.FaultMessages, Node: n, ForMs: 11000,
					Messages: &run.MessageFault{Kinds: []string{"offset-commit"}, Peer: "clients", Direction: "in", Reorder: 1, DelayMs: 3000}})
			}
			cfg.Nemesis = consumerCrashes(2000, 1000)
			return cfg
		},
		Allowed: []string{linearizability.AnomalyReprocessed},
		Require: func(r *run.Result) error {
			if err := reached(run.SitZombieCommit)(r); err != nil {
				return err
			}
			return requireConsumedToEnd(r)
		},
	},
	{
		Name:    "group-zombie-member",
		Summary: "the coordinator gets members' heartbeats and commits up to 2.5 s late and out of order, across rebalances: a request of an ended generation is refused, never applied",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			// Fewer records: the late, reordered group requests make the
			// history hard enough for porcupine as it is.
			cfg.DurationMs = 12000
			cfg.Workload.ProduceIntervalMs = 60
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultMessages, run.FaultCrashConsumer}, Role: run.RoleCoordinator,
				IntervalMs: 2500, FaultMs: 4000, MaxFaulty: 2,
				Messages: &run.MessageFault{Kinds: []string{"group"}, Peer: "clients", Direction: "in", Reorder: 0.5, DelayMs: 2500}}
			return cfg
		},
		Allowed: []string{linearizability.AnomalyReprocessed},
		Require: func(r *run.Result) error {
			if err := reached(run.SitZombieCommit)(r); err != nil {
				return err
			}
			return requireConsumedToEnd(r)
		},
	},
}

// reached requires that a run reached every one of sits.
// caughtUpAtEnd: every live replica was back in its partition's ISR when
// the run ended. A follower that truncates wrongly on the fetch path does
// not take records over the divergence (the leader checks every fetch) but
// is told of it again and again: it never rejoins.
func caughtUpAtEnd(r *run.Result) error {
	if len(r.Stats.OutOfISRAtEnd) > 0 {
		return Broken(PromiseCaughtUp, "replicas %s were alive and outside the ISR at the end: they never caught up", strings.Join(r.Stats.OutOfISRAtEnd, ", "))
	}
	return nil
}

// allOf is every requirement of reqs, the first failure reported.
func allOf(reqs ...func(*run.Result) error) func(*run.Result) error {
	return func(r *run.Result) error {
		for _, req := range reqs {
			if err := req(r); err != nil {
				return err
			}
		}
		return nil
	}
}

func reached(sits ...run.Situation) func(*run.Result) error {
	return func(r *run.Result) error {
		var missing []string
		for _, s := range sits {
			if r.Reached[s] == 0 {
				missing = append(missing, string(s))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("the run never reached %s", strings.Join(missing, ", "))
		}
		return nil
	}
}

// isrChurn is the recipe on six partitions for 30 s, with followers out
// of the ISR after 1 s behind, and messages fault m on every broker's links
// from 500 ms on: the cases whose ISRs change often while ISR messages go
// astray.
func isrChurn(seed uint64, m run.MessageFault) run.Spec {
	cfg := base(seed)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 6, ReplicationFactor: 3}}
	cfg.DurationMs = 30000
	cfg.Broker.ReplicaLagTimeMaxMs = 1000
	for n := 1; n <= cfg.Brokers; n++ {
		cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: 500}, Kind: run.FaultMessages, Node: n, ForMs: cfg.DurationMs - 1000, Messages: m.Clone()})
	}
	return cfg
}

// followersChurn adds to cfg a follower that stops fetching for 1.5 s
// every 2.5 s, and, every 5 s, one that loses its disk or is stopped
// cleanly. The stop comes just before the leaders drop the follower that
// stopped fetching (replica lag 1 s): its controlled shutdown takes it out
// of the ISRs, a change the controller makes on its own, which a leader
// has likely not heard of when it proposes its shrink a moment later. (A
// stopping follower out of the ISR no longer fetches, so it no longer
// draws expansions the controller refuses; earlier stops left some seeds
// without a refusal.)
func followersChurn(cfg run.Spec) run.Spec {
	for i, at := 0, int64(2000); at < cfg.DurationMs-2000; i, at = i+1, at+2500 {
		cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: at}, Kind: run.FaultMessages, Role: run.RoleFollower, ForMs: 1500, Messages: stopFetching()})
		switch i % 4 {
		case 1:
			cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: at + 1200}, Kind: run.FaultReplaceDisk, Role: run.RoleFollower, ForMs: 800})
		case 3:
			cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: at + 900}, Kind: run.FaultStop, Role: run.RoleFollower, ForMs: 800})
		}
	}
	return cfg
}

// stopFetching: a follower's fetches are lost, as if it stopped fetching.
func stopFetching() *run.MessageFault {
	return &run.MessageFault{Kinds: []string{"replica-fetch"}, Direction: "out", Drop: 1}
}

// requireISRChurn wants ISRs that shrank and grew, a follower back on an
// empty disk, and sits.
func requireISRChurn(sits ...run.Situation) func(*run.Result) error {
	return func(r *run.Result) error {
		if r.Stats.ISRShrinks == 0 || r.Stats.ISRExpands == 0 {
			return fmt.Errorf("ISR shrank %d and grew %d times: want both", r.Stats.ISRShrinks, r.Stats.ISRExpands)
		}
		return reached(append(sits, run.SitEmptyDiskReturn)...)(r)
	}
}

// bounces schedules two leadership bounces, one per partition of the
// first topic (the second if there is one), with the follower cut off or,
// with slowMs, slowed by that much.
func bounces(cfg run.Spec, slowMs int64) run.Spec {
	// A bounce takes about 9 s: the second starts after the first one's
	// elections have settled, and ends before the workload does.
	cfg.DurationMs = 26000
	second := cfg.Partitions()[min(1, len(cfg.Partitions())-1)]
	cfg.Faults = []run.Fault{
		{When: run.Trigger{AtMs: 1500}, Kind: run.FaultBounceLeader, ForMs: 1500, DelayMs: slowMs},
		{When: run.Trigger{AtMs: 13000}, Kind: run.FaultBounceLeader, ForMs: 1500, DelayMs: slowMs, Partition: &second},
	}
	return cfg
}

// slowFrom is when slow-follower's follower starts falling behind.
const slowFrom = 3000

// onePartition is the strong recipe on a single partition, t-0, whose
// replicas are [1 2 3] in that order, led by broker 1 at the start: the
// cases that strike named brokers.
func onePartition(seed uint64) run.Spec {
	cfg := base(seed)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
	return cfg
}
