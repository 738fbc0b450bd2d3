package cases

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// The consumer-group cases: three members of group "g" running the
// reference consumer (conformance/kitclient) on four partitions, with an
// application that processes what it polls a few records a tick and
// commits per the case's commit mode.
const caseGroup = "g"

// groupBase is the recipe of the group cases: the strong settings, a
// steady producer, three group members and no plain consumers.
func groupBase(seed uint64) run.Spec {
	cfg := base(seed)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 4, ReplicationFactor: 3}}
	w := &cfg.Workload
	w.Consumers = 0
	w.GroupConsumers = 3
	w.Group = caseGroup
	w.CommitMode = run.CommitAfterProcess
	w.ConsumerSessionTimeoutMs = 1500
	w.ProcessPerTick = 2
	return cfg
}

func consumerCrashes(intervalMs, downMs int64) run.Nemesis {
	return run.Nemesis{Kinds: []run.FaultKind{run.FaultCrashConsumer}, IntervalMs: intervalMs, FaultMs: downMs, MaxFaulty: 1}
}

var groupCases = []Case{
	{
		Name:    "group-member-crash",
		Summary: "members die without leaving; their partitions move to the others within the session timeout; every partition is consumed to its end",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			// Down for four sessions: only the coordinator's expiry of the
			// dead member's session can move its partitions in time.
			cfg.Nemesis = consumerCrashes(3000, 4*cfg.Workload.ConsumerSessionTimeoutMs)
			return cfg
		},
		Allowed: []string{linearizability.AnomalyReprocessed},
		Require: func(r *run.Result) error {
			if r.Stats.ConsumerCrashes == 0 {
				return fmt.Errorf("no group member crashed")
			}
			if err := requireTakeover(r); err != nil {
				return err
			}
			return requireConsumedToEnd(r)
		},
	},
	{
		Name:    "at-least-once-consumer",
		Summary: "process, then commit: members crash mid-batch; every record below a commit was processed; duplicates allowed and counted",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			cfg.Workload.ProcessPerTick = 1 // slow: a crash lands mid-batch
			cfg.Nemesis = consumerCrashes(2000, 1500)
			return cfg
		},
		Allowed: []string{linearizability.AnomalyReprocessed},
		Require: func(r *run.Result) error {
			if r.Stats.ConsumerCrashes == 0 {
				return fmt.Errorf("no group member crashed")
			}
			return requireCommitsEverywhere(r)
		},
	},
	{
		Name:    "at-most-once-consumer",
		Summary: "commit, then process: members crash mid-batch; nothing is processed twice; gaps allowed and counted",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			cfg.Workload.CommitMode = run.CommitBeforeProcess
			cfg.Workload.ProcessPerTick = 1
			cfg.Nemesis = consumerCrashes(2000, 1500)
			return cfg
		},
		Allowed: []string{linearizability.AnomalyUnprocessed},
		Require: func(r *run.Result) error {
			if r.Stats.ConsumerCrashes == 0 {
				return fmt.Errorf("no group member crashed")
			}
			return requireCommitsEverywhere(r)
		},
	},
	{
		Name:    "coordinator-failover",
		Summary: "the group coordinator's broker dies; committed offsets survive in the replicated offsets topic and consumption resumes from them",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultCrash}, Role: run.RoleCoordinator, IntervalMs: 4000, FaultMs: 2000, MaxFaulty: 1}
			return cfg
		},
		Allowed: []string{linearizability.AnomalyReprocessed},
		Require: requireCoordinatorFailover,
	},
	{
		Name: "offsets-write-timeout",
		Summary: "the coordinator's followers stop getting its offsets records, so commits time out, then the coordinator dies: " +
			"a commit answered as accepted survives the failover, one that timed out was never answered as accepted",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			// The coordinator's replica-fetch answers are lost from 4 s,
			// so its followers stop getting its records but stay in the
			// ISR (the lag bound is 3 s) and its offsets writes time out
			// after 500 ms. A member that committed meanwhile crashes for
			// good at 5 s, the coordinator at 5.5 s: a follower without
			// those writes takes the offsets partition over, and the
			// partitions of the member that died are assigned again and
			// their offsets fetched from it.
			cfg.Broker.OffsetsCommitTimeoutMs = 500
			lost := &run.MessageFault{Kinds: []string{"replica-fetch-response"}, Direction: "out", Drop: 1}
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 4000}, Kind: run.FaultMessages, Role: run.RoleCoordinator, ForMs: 3000, Messages: lost},
				{When: run.Trigger{AtMs: 5000}, Kind: run.FaultCrashConsumer, Node: 0, ForMs: 8000},
				{When: run.Trigger{AtMs: 5500}, Kind: run.FaultCrash, Role: run.RoleCoordinator, ForMs: 2000},
			}
			return cfg
		},
		Allowed: []string{linearizability.AnomalyReprocessed},
		Require: func(r *run.Result) error {
			if err := reached(run.SitOffsetsAppendFailed)(r); err != nil {
				return err
			}
			return requireCoordinatorFailover(r)
		},
	},
	{
		Name:    "long-poll",
		Summary: "a slow producer and a long fetch.max.wait: fetches wait for data and return as soon as it arrives, without busy polling",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
			cfg.Workload.Producers = 1
			cfg.Workload.GroupConsumers = 1
			cfg.Workload.ProduceIntervalMs = 500
			cfg.Workload.FetchMaxWaitMs = 5000
			return cfg
		},
		Require: requireLongPoll,
	},
	{
		Name:    "reconsume",
		Summary: "members seek back and read the same records again: records are not deleted by consumption and read back identical",
		Spec: func(seed uint64) run.Spec {
			cfg := groupBase(seed)
			cfg.Workload.SeekBackEveryMs = 2000
			return cfg
		},
		Allowed: []string{linearizability.AnomalyReprocessed},
		Require: requireReread,
	},
}

// committedEnds is, per partition, the highest offset the group committed
// (ok commits), and finalEnds the end of each partition as the final
// reads found it.
func committedEnds(r *run.Result) (committed, final map[kafka.TopicPartition]int64) {
	committed = map[kafka.TopicPartition]int64{}
	final = map[kafka.TopicPartition]int64{}
	for _, op := range r.History {
		switch {
		case op.Kind == linearizability.KindCommit && op.Outcome == linearizability.OutcomeOK:
			committed[op.TP()] = max(committed[op.TP()], op.Offset)
		case op.Kind == linearizability.KindFetch && op.Final && op.Outcome == linearizability.OutcomeOK:
			for _, rec := range op.Records {
				final[op.TP()] = max(final[op.TP()], rec.Offset+1)
			}
		}
	}
	return committed, final
}

// requireConsumedToEnd: no partition is left unconsumed: by the end of the
// run the group committed every partition up to its end.
func requireConsumedToEnd(r *run.Result) error {
	committed, final := committedEnds(r)
	var behind []string
	for tp, end := range final {
		if committed[tp] < end {
			behind = append(behind, fmt.Sprintf("%s committed %d of %d", tp, committed[tp], end))
		}
	}
	sort.Strings(behind)
	if len(behind) > 0 {
		return fmt.Errorf("partitions left unconsumed: %v", behind)
	}
	return nil
}

// requireCommitsEverywhere: the group made progress on every partition
// (an accepted commit each), so a delivery case cannot hold by consuming
// nothing. (Processing one record a tick, it need not reach the end.)
func requireCommitsEverywhere(r *run.Result) error {
	committed, final := committedEnds(r)
	var none []string
	for tp := range final {
		if committed[tp] == 0 {
			none = append(none, tp.String())
		}
	}
	sort.Strings(none)
	if len(none) > 0 || len(final) == 0 {
		return fmt.Errorf("no commit accepted on %v", none)
	}
	return nil
}

// requireTakeover: after each member crash, another member was assigned
// partitions within twice the session timeout (the coordinator notices
// the silence, then the rebalance runs).
func requireTakeover(r *run.Result) error {
	// The coordinator times the member out one session after its last
	// heartbeat; the members alive rejoin at their next heartbeat and get
	// the partitions in the next generation's SyncGroup: on the
	// simulator within 1.2 sessions over 30 seeds. Half a session and
	// half a second more is the margin.
	session := r.Spec.Workload.ConsumerSessionTimeoutMs
	limit := session + session/2 + 500
	tested := 0
	for _, n := range r.Notes {
		if n.Kind != run.NoteFault || n.Fault != run.FaultCrashConsumer || n.Member == "" {
			continue
		}
		if n.AtMs+limit > r.Spec.DurationMs+r.Spec.SettleMs {
			continue // too late in the run to tell
		}
		back := backAt(r.Notes, n)
		if back < n.AtMs+limit {
			continue // it came back first: its own join moves partitions
		}
		for _, tp := range lastAssignment(r.History, n.Member, n.AtMs) {
			tested++
			moved := slices.ContainsFunc(r.History, func(op linearizability.Op) bool {
				return op.Kind == linearizability.KindAssignment && op.Member != n.Member && op.TP() == tp &&
					op.Return > n.AtMs && op.Return >= 0 && op.Return <= n.AtMs+limit
			})
			if !moved {
				return Broken(PromiseGroupTakeover, "member %s crashed at %d ms and stayed down, but its partition %s was not given to another member within %d ms (session timeout %d ms)",
					n.Member, n.AtMs, tp, limit, session)
			}
		}
	}
	if tested == 0 {
		return fmt.Errorf("no member that held partitions crashed and stayed down past %d ms", limit)
	}
	return nil
}

// backAt is when the consumer that crash note n struck came back (the
// end of time if it did not).
func backAt(notes []run.Note, n run.Note) int64 {
	for _, m := range notes {
		if m.Kind == run.NoteHeal && m.Fault == run.FaultCrashConsumer && m.Node == n.Node && m.AtMs >= n.AtMs {
			return m.AtMs
		}
	}
	return math.MaxInt64
}

// lastAssignment is what member held at time at: the partitions of its
// latest generation's assignment before then.
func lastAssignment(h []linearizability.Op, member string, at int64) []kafka.TopicPartition {
	gen := int32(-1)
	var tps []kafka.TopicPartition
	for _, op := range h {
		if op.Kind != linearizability.KindAssignment || op.Member != member || op.Return < 0 || op.Return > at {
			continue
		}
		if op.Generation > gen {
			gen, tps = op.Generation, nil
		}
		if op.Generation == gen {
			tps = append(tps, op.TP())
		}
	}
	return tps
}

// requireCoordinatorFailover: a coordinator crashed, the group resumed
// from its commits and consumed to the end.
func requireCoordinatorFailover(r *run.Result) error {
	if r.Stats.Crashes == 0 {
		return fmt.Errorf("no coordinator crashed")
	}
	if err := requireResumedFromCommits(r); err != nil {
		return err
	}
	return requireConsumedToEnd(r)
}

// requireResumedFromCommits: the group went on committing after each
// coordinator crash, never below what it had committed before it: the
// new coordinator had the offsets, and the members resumed from them
// (whether they kept their partitions or a rebalance moved them, in which
// case they fetched the committed offsets first).
func requireResumedFromCommits(r *run.Result) error {
	var crashes []int64
	for _, n := range r.Notes {
		if n.Kind == run.NoteFault && n.Fault == run.FaultCrash {
			crashes = append(crashes, n.AtMs)
		}
	}
	for _, at := range crashes {
		before := map[kafka.TopicPartition]int64{}
		after := 0
		for _, op := range r.History {
			if op.Kind != linearizability.KindCommit || op.Outcome != linearizability.OutcomeOK {
				continue
			}
			if op.Return < at {
				before[op.TP()] = max(before[op.TP()], op.Offset)
			}
		}
		for _, op := range r.History {
			if op.Kind != linearizability.KindCommit || op.Outcome != linearizability.OutcomeOK || op.Call <= at {
				continue
			}
			after++
			if op.Offset < before[op.TP()] {
				return fmt.Errorf("after the coordinator crash at %d ms, op %d committed %s at %d, below the %d committed before", at, op.ID, op.TP(), op.Offset, before[op.TP()])
			}
		}
		if after == 0 && at+2*r.Spec.Workload.ConsumerSessionTimeoutMs < r.Spec.DurationMs {
			return fmt.Errorf("no commit succeeded after the coordinator crash at %d ms", at)
		}
	}
	return nil
}

// requireLongPoll: fetches are held, not repeated: far fewer fetch
// requests than a busy loop would send, and records reach the consumer
// soon after they are acknowledged.
func requireLongPoll(r *run.Result) error {
	fetches, produced := 0, 0
	for _, op := range r.History {
		switch {
		case op.Kind == linearizability.KindFetch && !op.Final:
			fetches++
		case op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeOK:
			produced++
		}
	}
	// At most one answer per record produced, one per expired wait, and
	// a few around rebalances and leader changes.
	bound := produced + int(r.Stats.EndMs/r.Spec.Workload.FetchMaxWaitMs) + 20
	if fetches > bound {
		return Broken(PromiseLongPollBusy, "%d fetches for %d records in %d ms with a %d ms wait: busy polling (want at most %d)",
			fetches, produced, r.Stats.EndMs, r.Spec.Workload.FetchMaxWaitMs, bound)
	}
	if produced < 10 {
		return fmt.Errorf("only %d records produced", produced)
	}
	// Latency: from the acknowledgement to the first fetch that returned
	// the record, median under a tenth of the wait.
	acked := map[string]int64{}
	for _, op := range r.History {
		if op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeOK {
			acked[op.Value] = op.Return
		}
	}
	var delays []int64
	seen := map[string]bool{}
	for _, op := range r.History {
		if op.Kind != linearizability.KindFetch || op.Final {
			continue
		}
		for _, rec := range op.Records {
			if t, ok := acked[rec.Value]; ok && !seen[rec.Value] {
				seen[rec.Value] = true
				delays = append(delays, max(op.Return-t, 0))
			}
		}
	}
	if len(delays) == 0 {
		return fmt.Errorf("no acknowledged record was read")
	}
	slices.Sort(delays)
	if med := delays[len(delays)/2]; med > r.Spec.Workload.FetchMaxWaitMs/10 {
		return Broken(PromiseLongPollLate, "median delay from acknowledgement to read %d ms: the long poll does not return when data arrives", med)
	}
	if r.Live {
		return nil
	}
	// On the simulator the network's delays are known: the answer to the
	// acks=all produce and the held fetch are both due when the HW passes
	// the record (Kafka completes a delayed fetch when the HW moves), and
	// each then takes one trip, so they arrive within a trip of each
	// other. A broker that answers held fetches only on a timer shows it
	// here.
	trip2 := 2 * r.Spec.Network.MaxDelayMs
	if p90 := delays[len(delays)*9/10]; p90 > trip2 {
		return Broken(PromiseLongPollLate, "a tenth of the records were read %d ms or more after their acknowledgement, more than two network trips (%d ms): held fetches are not answered when the HW moves", p90, trip2)
	}
	return nil
}

// requireReread: members sought back, and some record was read again by
// the same client (identical, or inconsistent-offsets would say).
func requireReread(r *run.Result) error {
	if r.Stats.Seeks == 0 {
		return fmt.Errorf("no member sought back")
	}
	type key struct {
		client int
		tp     kafka.TopicPartition
		offset int64
	}
	read := map[key]bool{}
	for _, op := range r.History {
		if op.Kind != linearizability.KindFetch || op.Final || op.Outcome != linearizability.OutcomeOK {
			continue
		}
		for _, rec := range op.Records {
			k := key{op.Client, op.TP(), rec.Offset}
			if read[k] {
				return nil
			}
			read[k] = true
		}
	}
	return fmt.Errorf("%d seeks, but no record was read twice by one member", r.Stats.Seeks)
}
