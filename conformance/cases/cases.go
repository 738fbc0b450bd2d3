// Package cases holds the conformance cases: each a run (a cluster, a
// workload, a fault schedule) for any seed, and the guarantees the run
// must keep. The kit (package conformance) runs them on a target and
// judges the runs (conformance/judge).
package cases

import (
	"fmt"
	"slices"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/linearizability"
)

// Case is a named conformance scenario: a cluster, a workload, a fault
// schedule, and the guarantees it expects.
type Case struct {
	Name    string
	Summary string
	// Spec builds the run for one seed. The simulator keeps running after
	// an invariant fails, so the clients' history shows the consequences.
	Spec func(seed uint64) run.Spec
	// Allowed lists the anomalies this case tolerates: they are reported as
	// allowed, not as violations (acks=1 may lose acknowledged writes).
	Allowed []string
	// AllowedFor, when set, adds what a run's own workload tolerates by
	// design (a random schedule's at-least-once group reprocesses): the
	// anomalies AllowedIn(spec) lists.
	AllowedFor func(run.Spec) []string
	// Hunt marks a search's case (conformance/search): only the bug it
	// hunts counts, so a run that tested nothing (exercised) is no finding.
	Hunt bool
	// LossAllowed tolerates the loss of committed records: porcupine's
	// verdict and the protocol invariants are reported but do not fail the
	// case (unclean election, by design).
	LossAllowed bool
	// MustHold names invariants that fail the case even when LossAllowed:
	// a case that tolerates loss by design can still insist that replicas
	// never diverge (LogMatching).
	MustHold []string
	// DuplicatesAllowed tolerates records written twice (retries without
	// idempotence: at-least-once, by design). spec/'s log takes each write
	// at most once, so porcupine's illegal verdict is then reported as
	// allowed when, and only when, the anomaly checker found the duplicates
	// that explain it; loss is still judged by the anomaly checker.
	DuplicatesAllowed bool
	// Require is a case's own expectation about a run, such as "some
	// produce was refused"; it keeps a case from passing without having
	// exercised what it claims to. An error made by Broken says the run
	// tested the case's promise and the target broke it: VIOLATED on every
	// target. Any other error says the run did not get to what the case
	// is about: UNKNOWN on real processes, where timing decides that, and
	// VIOLATED on the simulator, where a case that misses its situation
	// is a broken case.
	Require func(r *run.Result) error
}

// AllowedIn is what c tolerates in run r: Allowed, what the run's
// workload allows by design (AllowedFor), and the consequences of lost
// records when the run may lose them without a fault of the target's
// (LossAllowedIn).
func (c *Case) AllowedIn(r *run.Result) []string {
	loss := r.Spec.LossByDesign() || len(r.LossByFault) > 0
	if c.AllowedFor == nil && !loss {
		return c.Allowed
	}
	out := slices.Clone(c.Allowed)
	if c.AllowedFor != nil {
		out = append(out, c.AllowedFor(r.Spec)...)
	}
	if loss {
		for _, a := range UncleanAnomalies {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// UncleanAnomalies are what a run whose settings allow loss by design
// (run.Spec.LossByDesign) may show: the consequences of lost records, and
// records written twice, because an unclean election can lose the
// producer state that deduplicates retries (Kafka promises idempotence
// only without unclean elections, KIP-98).
var UncleanAnomalies = append(slices.Clone(LossAnomalies), linearizability.AnomalyDuplicate, linearizability.AnomalyDedupFailure)

// LossAllowedIn reports whether c tolerates lost committed records in run
// r: LossAllowed, settings that allow loss by design
// (run.Spec.LossByDesign), or faults that may cost a correct broker
// committed records (run.Result.LossByFault).
func (c *Case) LossAllowedIn(r *run.Result) bool {
	return c.LossAllowed || r.Spec.LossByDesign() || len(r.LossByFault) > 0
}

// BrokenPromise is a Require error for a promise the run tested and the
// target broke: the verdict is VIOLATED, never UNKNOWN (spec/SEMANTICS.md,
// Verdicts). Name says which promise, as an anomaly's name does.
type BrokenPromise struct {
	Name string
	error
}

// Broken makes a BrokenPromise of the promise named name.
func Broken(name, format string, args ...any) error {
	return &BrokenPromise{Name: name, error: fmt.Errorf(format, args...)}
}

// The promises a case's Require may find broken (BrokenPromise.Name).
const (
	PromiseISRLag        = "isr-lag-ignored"     // a replica that fell behind stayed in the ISR
	PromiseFailover      = "no-failover"         // a dead leader was not replaced in time
	PromiseSendsSucceed  = "sends-failed"        // with no fault, sends did not succeed
	PromiseMinISR        = "min-isr-ignored"     // acks=all answered ok with fewer replicas alive than min.insync.replicas
	PromiseLongPollBusy  = "long-poll-busy"      // fetches returned at once with nothing to return
	PromiseLongPollLate  = "long-poll-late"      // a held fetch did not return when data arrived
	PromiseGroupTakeover = "group-takeover-late" // a dead member's partitions were not moved in time
	PromiseNoStall       = "produce-stalled"     // sends waited longer than a leader move while brokers stopped cleanly
	PromiseLedAgain      = "partition-offline"   // a partition stayed without a leader though replicas with its data were back
	PromiseCaughtUp      = "never-caught-up"     // a live follower was still out of the ISR at the end
)

// requireMinISRRefuses: no acks=all send made while brokers 2 and 3 were
// both down succeeded before either came back (one live replica cannot
// make min.insync.replicas 2: whatever the ISR says, such an answer is a
// broken promise), and one was refused with NOT_ENOUGH_REPLICAS (else the
// run did not test the refusal).
func requireMinISRRefuses(r *run.Result) error {
	down := map[int]int64{}
	for _, n := range r.Notes {
		if n.Kind == run.NoteFault && n.Fault == run.FaultCrash && n.Node > 0 {
			if _, ok := down[n.Node]; !ok {
				down[n.Node] = n.AtMs
			}
		}
	}
	if len(down) == 2 {
		var ids []int
		var from, first int64 = 0, -1
		for id, at := range down {
			ids = append(ids, id)
			from = max(from, at)
			if first < 0 || at < first {
				first = at
			}
		}
		slices.Sort(ids)
		until := first + r.Spec.Faults[0].ForMs
		for _, op := range r.History {
			if op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeOK && op.Call > from && op.Return < until {
				return Broken(PromiseMinISR, "an acks=all send made at %d ms, with brokers %v (the followers) down since %d ms, was acknowledged at %d ms (offset %d): one replica cannot make min.insync.replicas %d",
					op.Call, ids, from, op.Return, op.Offset, r.Spec.Broker.MinInsyncReplicas)
			}
		}
	}
	for _, op := range r.History {
		// The reference producer retries the refusal until its delivery
		// timeout, then fails the send with the refusal as the cause.
		if op.Kind == linearizability.KindProduce && op.Outcome == linearizability.OutcomeFail &&
			op.Code == kafka.CodeOf(kafka.ErrNotEnoughReplicas) {
			return nil
		}
	}
	return fmt.Errorf("no produce was refused with NOT_ENOUGH_REPLICAS")
}

// base is the strong-consistency recipe with the harness's usual workload.
func base(seed uint64) run.Spec {
	cfg := run.DefaultSpec(seed)
	cfg.ContinueAfterViolation = true
	return cfg
}

// LossAnomalies are what a case that loses records by design may show:
// each follows from records disappearing.
var LossAnomalies = []string{
	linearizability.AnomalyLostWrite, linearizability.AnomalyUnseen,
	linearizability.AnomalyInconsistentOffsets, linearizability.AnomalyReadUncommitted,
	linearizability.AnomalyNonmonotonicSend, linearizability.AnomalyNonmonotonicPoll,
	linearizability.AnomalyPollSkip,
}

// brokerCases fault the brokers: crashes, power losses, pauses, cuts,
// failpoints.
var brokerCases = []Case{
	{
		Name:    "acks-all-leader-crash",
		Summary: "RF 3, min ISR 2, acks=all; partition leaders crash and come back; each is replaced within its session timeout",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = crashes(run.RoleLeader, 3000, 2000)
			return cfg
		},
		Require: requireFailover,
	},
	{
		Name:    "follower-restart",
		Summary: "followers crash and restart mid-stream",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = crashes(run.RoleFollower, 2000, 1500)
			return cfg
		},
		Require: requireFaults,
	},
	{
		Name:    "power-loss-minority",
		Summary: "one broker at a time loses power: unsynced writes vanish, the last may tear",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultPowerLoss}, IntervalMs: 3000, FaultMs: 1500, MaxFaulty: 1, PowerLossOnlyInSync: true}
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.PowerLosses == 0 {
				return fmt.Errorf("no broker lost power")
			}
			return nil
		},
	},
	{
		Name:    "leader-isolated",
		Summary: "the leader is cut off from the other brokers, the controller and the clients",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultIsolate}, Role: run.RoleLeader, IntervalMs: 4000, FaultMs: 3000, MaxFaulty: 1}
			return cfg
		},
		Require: requireFaults,
	},
	{
		Name:    "acks-1-leader-crash",
		Summary: "acks=1: leaders crash; losing acknowledged writes is allowed, inconsistent offsets and uncommitted reads are not",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Workload.Acks = settings.AcksLeader
			cfg.Workload.Idempotent = false // Kafka's clients refuse idempotence without acks=all
			return acks1LeaderCrashes(cfg)
		},
		Allowed: []string{linearizability.AnomalyUnseen, linearizability.AnomalyNonmonotonicSend},
		Require: requireFaults,
	},
	{
		Name:    "isr-shrink-expand",
		Summary: "a follower stalls past replica.lag.time.max.ms, leaves the ISR, then catches up and rejoins",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			// A session long enough that the controller does not fence the
			// stalled follower: the leader must notice the lag on its own.
			cfg.Controller.SessionTimeoutMs = 8000
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultPause}, Role: run.RoleFollower, IntervalMs: 7000, FaultMs: 5000, MaxFaulty: 1}
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.ISRShrinks == 0 || r.Stats.ISRExpands == 0 {
				return fmt.Errorf("ISR shrank %d and expanded %d times: want both", r.Stats.ISRShrinks, r.Stats.ISRExpands)
			}
			return nil
		},
	},
	{
		Name:    "min-isr-refuses",
		Summary: "two of three replicas down: the ISR falls below min.insync.replicas and acks=all produces are refused",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
			// One attempt per send, so a refusal reaches the history as it
			// is, not after retries outlast the fault.
			cfg.Workload.Idempotent, cfg.Workload.Retries = false, false
			// Both followers of partition 0, whichever broker leads it.
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 4000}, Kind: run.FaultCrash, Role: run.RoleFollower, ForMs: 8000},
				{When: run.Trigger{AtMs: 4000}, Kind: run.FaultCrash, Role: run.RoleFollower, ForMs: 8000},
			}
			return cfg
		},
		Require: requireMinISRRefuses,
	},
	uncleanElection(false),
	uncleanElection(true),
	uncleanRecovery(settings.RecoveryAggressive),
	uncleanRecovery(settings.RecoveryBalanced),
	{
		Name:    "at-most-once",
		Summary: "acks=0 while leaders crash: records may be lost, none may be written twice",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Workload.Acks = settings.AcksNone
			cfg.Workload.Idempotent, cfg.Workload.Retries, cfg.Workload.MaxInFlight = false, false, 1
			cfg.Nemesis = crashes(run.RoleLeader, 2000, 1500)
			return cfg
		},
		Require: requireFaults,
	},
	{
		Name:    "at-least-once",
		Summary: "acks=all with retries and no idempotence, answers dropped and leaders crashed: nothing acknowledged lost; duplicates allowed and counted",
		Spec: func(seed uint64) run.Spec {
			cfg := atLeastOnceFaults(base(seed))
			cfg.Workload.Idempotent, cfg.Workload.MaxInFlight = false, 1
			return cfg
		},
		Allowed:           []string{linearizability.AnomalyDuplicate},
		DuplicatesAllowed: true,
		Require:           requireFaults,
	},
	{
		Name:    "exactly-once",
		Summary: "the idempotent producer under the same faults: no loss, no duplicate, order per partition kept",
		Spec: func(seed uint64) run.Spec {
			return atLeastOnceFaults(base(seed))
		},
		Require: requireFaults,
	},
	{
		Name:    "dedup-across-failover",
		Summary: "idempotent retries that straddle a leader change are deduplicated by the new leader (--variant producer-state-leader-only shows the bug)",
		Spec: func(seed uint64) run.Spec {
			cfg := atLeastOnceFaults(base(seed))
			cfg.Network.ResponseDropRate = 0.2
			cfg.Nemesis.IntervalMs = 1500
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.Elections == 0 {
				return fmt.Errorf("no leader changed")
			}
			return nil
		},
	},
	{
		Name:    "producer-restart",
		Summary: "idempotent producers restart (new PIDs) and resend their last unacknowledged record: a duplicate is the documented limit, not a failure",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			// Lost answers leave sends unresolved when a producer restarts.
			cfg.Network.ResponseDropRate = 0.1
			for at := int64(2000); at < cfg.DurationMs; at += 2500 {
				cfg.Faults = append(cfg.Faults, run.Fault{When: run.Trigger{AtMs: at}, Kind: run.FaultRestartProducer, Node: int(at/2500) % cfg.Workload.Producers})
			}
			return cfg
		},
		Allowed:           []string{linearizability.AnomalyDuplicate},
		DuplicatesAllowed: true,
		Require: func(r *run.Result) error {
			if r.Stats.Resends == 0 {
				return fmt.Errorf("no producer restarted with a record to resend")
			}
			return nil
		},
	},
	{
		Name:    "acks-1-out-of-order",
		Summary: "an idempotent producer with acks=1: a leader dies after acknowledging; the next batch is refused with OUT_OF_ORDER_SEQUENCE_NUMBER",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Workload.Acks = settings.AcksLeader
			cfg.Workload.UnsafeAnyAcks = true // Kafka's clients refuse this; the repro shows why
			cfg = acks1LeaderCrashes(cfg)
			// Leaders crash 1.5 times as often: with truncation on fetch
			// a crash finds acknowledged records unreplicated a little
			// less often than with the epoch query's round trip.
			cfg.Nemesis.IntervalMs = 1000
			return cfg
		},
		Allowed: []string{linearizability.AnomalyUnseen, linearizability.AnomalyNonmonotonicSend},
		Require: func(r *run.Result) error {
			for _, op := range r.History {
				if op.Kind == linearizability.KindProduce && op.Code == kafka.CodeOf(kafka.ErrOutOfOrderSequence) {
					return nil
				}
			}
			return fmt.Errorf("no produce was refused with OUT_OF_ORDER_SEQUENCE_NUMBER")
		},
	},
	{
		Name:    "kip101-data-loss",
		Summary: "KIP-101 scenario 1 by failpoints: a restarted follower truncates to its HW and is elected",
		Spec: func(seed uint64) run.Spec {
			cfg := KIP101DataLoss(seed, settings.TruncateToEpoch)
			cfg.Workload.Consumers = 1
			return cfg
		},
		Require: requireFailpoints,
	},
	{
		Name:    "kip101-divergence",
		Summary: "KIP-101 scenario 2 by failpoints: a follower loses power with an unsynced tail and leads; the old leader keeps its tail",
		Spec: func(seed uint64) run.Spec {
			cfg := KIP101Divergence(seed, settings.TruncateToEpoch)
			return cfg
		},
		// The old leader must also truncate and rejoin, not keep being
		// told of its divergence (its HW covers the record it alone holds).
		Require: allOf(requireFailpoints, caughtUpAtEnd),
	},
	{
		Name: "isr-proposal-after-new-disk",
		Summary: "KAFKA-14139's schedule without its crash: a leader's proposal to add back a follower, decided on the fetches of its earlier process, and its resend both reach the controller 2.5 s late, after the follower came back on an empty disk: " +
			"the controller refuses both (KIP-903: each names the process it was decided on), so the empty replica joins the ISR only once it has caught up",
		Spec: func(seed uint64) run.Spec {
			cfg := KAFKA14139(seed, false)
			cfg.Failpoints = nil // the leader lives: its proposal is resent
			return cfg
		},
		Require: reached(run.SitISRChangeRefused, run.SitEmptyDiskReturn),
	},
}

// uncleanElection: broker 2 is cut off long enough to leave the ISR, then
// the leader crashes while broker 2 comes back. With the option off the
// partition waits for its leader (unavailable, nothing lost); with it on,
// broker 2 leads with what it has (committed records lost, by design).
func uncleanElection(on bool) Case {
	c := Case{
		Name:    "unclean-election/off",
		Summary: "the only ISR member dies while an out-of-sync replica lives; unclean election off: unavailable, no loss",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Brokers = 2
			cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 2}}
			cfg.Broker.MinInsyncReplicas = 1
			cfg.Controller.UncleanLeaderElection = on
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 2000}, Kind: run.FaultIsolate, Node: 2, ForMs: 6000},
				{When: run.Trigger{AtMs: 7000}, Kind: run.FaultCrash, Node: 1, ForMs: 6000},
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.UncleanElections > 0 {
				return fmt.Errorf("%d unclean elections with unclean.leader.election.enable=false", r.Stats.UncleanElections)
			}
			return nil
		},
	}
	if on {
		c.Name = "unclean-election/on"
		c.Summary = "the only ISR member dies while an out-of-sync replica lives; unclean election on: the replica leads, loss allowed and reported"
		c.Allowed = LossAnomalies
		c.LossAllowed = true
		c.Require = func(r *run.Result) error {
			if r.Stats.UncleanElections == 0 {
				return fmt.Errorf("no unclean election happened")
			}
			return nil
		}
	}
	return c
}

// requireFailover: every crashed leader is replaced within the
// controller's session timeout (broker.session.timeout.ms) and 300 ms:
// the controller must notice a silent broker on time, not when it comes
// back and registers again.
func requireFailover(r *run.Result) error { return failover(300)(r) }

// failover wants every crashed leader replaced within its session timeout
// and slackMs: the controller's tick, the election reaching the brokers,
// and the harness seeing it.
func failover(slackMs int64) func(*run.Result) error {
	return func(r *run.Result) error { return requireReplaced(r, slackMs) }
}

func requireReplaced(r *run.Result, slackMs int64) error {
	if err := requireFaults(r); err != nil {
		return err
	}
	if r.Live {
		// Real processes on a loaded machine: the controller's tick, the
		// state reaching the brokers and the harness's metadata polls each
		// add their share, so allow another session's worth.
		slackMs = max(slackMs, r.Spec.Controller.SessionTimeoutMs)
	}
	limit := r.Spec.Controller.SessionTimeoutMs + slackMs
	tested, late := 0, 0
	for _, n := range r.Notes {
		if n.Kind != run.NoteFault || n.Fault != run.FaultCrash {
			continue
		}
		if n.AtMs+limit > r.Spec.DurationMs {
			late++
			continue
		}
		tested++
		replacedAt := int64(-1)
		for _, e := range r.Notes {
			if e.Kind == run.NoteElection && e.AtMs > n.AtMs && e.Leader != int32(n.Node) {
				replacedAt = e.AtMs
				break
			}
		}
		if replacedAt < 0 || replacedAt > n.AtMs+limit {
			measured := "no other broker was elected before the run ended"
			if replacedAt >= 0 {
				measured = fmt.Sprintf("another broker was elected only after %d ms", replacedAt-n.AtMs)
			}
			return Broken(PromiseFailover, "broker %d crashed at %d ms leading a partition, and %s, past the bound of %d ms (session timeout %d ms)",
				n.Node, n.AtMs, measured, limit, r.Spec.Controller.SessionTimeoutMs)
		}
	}
	if tested == 0 && late > 0 {
		return fmt.Errorf("every crash came later than %d ms before the run's end (the failover bound, from session timeout %d ms): no failover could be judged; rerun with a longer --duration",
			limit, r.Spec.Controller.SessionTimeoutMs)
	}
	return nil
}

func requireFaults(r *run.Result) error {
	if r.Stats.Faults == 0 {
		return fmt.Errorf("no fault was injected")
	}
	return nil
}

func requireFailpoints(r *run.Result) error {
	if r.Stats.FailpointsFired == 0 {
		return fmt.Errorf("no failpoint fired: the scenario did not unfold")
	}
	return nil
}

// Lookup finds cases by name; a name also selects its variants
// ("unclean-election" selects "unclean-election/off" and ".../on").
func Lookup(names []string) ([]Case, error) {
	if len(names) == 0 {
		return Cases, nil
	}
	var out []Case
	for _, n := range names {
		found := false
		for _, c := range Cases {
			if c.Name == n || baseName(c.Name) == n {
				out = append(out, c)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown case %q; valid cases: %s", n, Names())
		}
	}
	return out, nil
}

func baseName(n string) string {
	for i := range n {
		if n[i] == '/' {
			return n[:i]
		}
	}
	return n
}

// Names lists the names Lookup accepts.
func Names() string {
	s := ""
	seen := map[string]bool{}
	for _, c := range Cases {
		for _, n := range []string{baseName(c.Name), c.Name} {
			if !seen[n] {
				seen[n] = true
				if s != "" {
					s += ", "
				}
				s += n
			}
		}
	}
	return s
}

// NeedFailpoints names the cases that drive failpoints: they need a binary
// built with failpoint-toolexec.
func NeedFailpoints(cases []Case) []string {
	var names []string
	for _, c := range cases {
		if len(c.Spec(1).Failpoints) > 0 {
			names = append(names, c.Name)
		}
	}
	return names
}

// atLeastOnceFaults: answers to producers are lost now and then (the write
// happened, the client cannot know) and leaders crash, so producers retry.
func atLeastOnceFaults(cfg run.Spec) run.Spec {
	cfg.Network.ResponseDropRate = 0.05
	cfg.Nemesis = crashes(run.RoleLeader, 2500, 1500)
	return cfg
}

// crashes is a nemesis that crashes one broker of role at a time, every
// intervalMs or so, each down for faultMs.
func crashes(role run.Role, intervalMs, faultMs int64) run.Nemesis {
	return run.Nemesis{Kinds: []run.FaultKind{run.FaultCrash}, Role: role, IntervalMs: intervalMs, FaultMs: faultMs, MaxFaulty: 1}
}

// acks1LeaderCrashes crashes leaders often under acks=1 traffic. A slower
// network and more writers widen the window between the leader's answer and
// the followers' copy, where a crash loses what acks=1 acknowledged.
func acks1LeaderCrashes(cfg run.Spec) run.Spec {
	cfg.Network.MaxDelayMs = 50
	cfg.Workload.Producers = 4
	cfg.Workload.ProduceIntervalMs = 10
	cfg.Nemesis = crashes(run.RoleLeader, 1500, 1500)
	return cfg
}

// Cases is every case, in the order `watermark check` runs them: the
// broker faults, the rare states, damaged disks, then the baseline cases
// that need none, then the consumer-group cases.
var Cases = slices.Concat(brokerCases, rareCases, diskCases, shutdownCases, baselineCases, groupCases)

// FromFile is the case a run file judges its run by: the file's spec for
// any seed, its allowed anomalies and its flags.
func FromFile(f *run.File) *Case {
	return &Case{
		Name:              f.Name,
		Summary:           f.Description,
		Allowed:           slices.Clone(f.Allowed),
		LossAllowed:       f.LossAllowed,
		DuplicatesAllowed: f.DuplicatesAllowed,
		Spec: func(seed uint64) run.Spec {
			s := f.Spec.Clone()
			s.Seed = seed
			return s
		},
	}
}
