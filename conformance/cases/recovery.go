package cases

import (
	"fmt"
	"strings"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/settings"
)

// PromiseRecoveryLongest: an unclean recovery elects the live replica
// whose log end ranks highest, the longest (KIP-966).
const PromiseRecoveryLongest = "recovery-not-longest"

// uncleanRecovery: RF 3 and min ISR 1, so that no replica is an eligible
// leader replica and acks=all goes on with the leader alone. Broker 3 is
// cut off first, broker 2 two seconds later: each leaves the ISR, and 2
// holds more than 3. The leader crashes just before they come back, and
// once the controller sees it dead, both are alive with the partition
// offline: the recovery asks both where their logs end and must elect 2.
// Aggressive recovers at once, while broker 1 stays down; balanced waits
// for broker 1, the ISR's last member, which comes back on an empty disk
// (having lost what it led with, it cannot lead).
func uncleanRecovery(strategy settings.RecoveryStrategy) Case {
	c := Case{
		Name: "unclean-recovery/" + strategy.String(),
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
			cfg.Broker.MinInsyncReplicas = 1
			cfg.Controller.UncleanRecovery = strategy
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 2000}, Kind: run.FaultIsolate, Node: 3, ForMs: 4300},
				{When: run.Trigger{AtMs: 4000}, Kind: run.FaultIsolate, Node: 2, ForMs: 2600},
				{When: run.Trigger{AtMs: 6000}, Kind: run.FaultCrash, Node: 1, ForMs: cfg.DurationMs},
			}
			if strategy == settings.RecoveryBalanced {
				cfg.Faults[2] = run.Fault{When: run.Trigger{AtMs: 6000}, Kind: run.FaultReplaceDisk, Node: 1, ForMs: 3000}
			}
			return cfg
		},
		Allowed:     LossAnomalies,
		LossAllowed: true,
		Require:     requireRecovery,
	}
	if strategy == settings.RecoveryBalanced {
		c.Summary = "the only ISR member comes back on an empty disk while two out-of-sync replicas live; unclean_recovery=balanced: the longer leads, loss allowed and reported"
	} else {
		c.Summary = "the only ISR member dies for good while two out-of-sync replicas live; unclean_recovery=aggressive: the longer leads, loss allowed and reported"
	}
	return c
}

// requireRecovery: a leader came from outside the ISR and, on the
// simulator, which reads every log at the election, an unclean recovery
// chose it from two replicas' answers and it was the longest live one.
func requireRecovery(r *run.Result) error {
	if r.Stats.UncleanElections == 0 {
		return fmt.Errorf("no leader was elected from outside the ISR")
	}
	if r.Live {
		return nil // the harness cannot read the logs at the election
	}
	if err := RecoveredLongest(r); err != nil {
		return err
	}
	if r.Reached[run.SitRecoveryChoice] == 0 {
		return fmt.Errorf("no unclean recovery chose between two live replicas (%d recoveries)", r.Stats.RecoveryElections)
	}
	return nil
}

// RecoveredLongest is the promise of unclean recovery on any run of the
// simulator (which reads every log at the election): every recovery
// elected the replica whose log ended last among the live ones.
func RecoveredLongest(r *run.Result) error {
	if r.Live || r.Stats.RecoveryNotLongest == 0 {
		return nil
	}
	var notes []string
	for _, n := range r.Notes {
		if n.Kind == run.NoteElection && strings.Contains(n.Text, "held more") {
			notes = append(notes, fmt.Sprintf("at %d ms: %s", n.AtMs, n.Text))
		}
	}
	return Broken(PromiseRecoveryLongest, "%d of %d unclean recoveries elected a replica whose log ended before another live one's: %s",
		r.Stats.RecoveryNotLongest, r.Stats.RecoveryElections, strings.Join(notes, "; "))
}
