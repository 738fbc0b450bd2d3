// Package variant names the deviations from the strong-consistency recipe
// that watermark knows, once for every command: `check --variant`, `repro
// --variant`, `search --variant` and `explore --variant` take the same
// names. Each is a known Kafka bug or an unsafe setting; a variant is
// defined by what it changes in a run (Apply), by its counterpart in
// spec/protocol's model (Model), or both.
package variant

import (
	"fmt"
	"strings"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/spec/protocol"
)

// Variant is one named deviation.
type Variant struct {
	Name      string
	Summary   string
	Reference string // the KIP or JIRA
	// Apply turns a run's settings into the variant's: the deviation
	// itself, and nothing else. nil for a variant that exists only in the
	// model (the reference broker has no such setting).
	Apply func(*run.Spec)
	// Hunt is how random search hunts the variant's bug down.
	Hunt Hunt
	// Sound says the variant is safe too: another way to the same
	// guarantees, with nothing to find.
	Sound bool
}

// Hunt is what random search adds to a variant to make its bug show:
// settings of the bug's era that the scenario needs, the schedules it
// takes, and how strictly to judge.
type Hunt struct {
	// Era changes the run further: a setting the bug's scenario needs
	// (Kafka before KIP-903 kept restarted brokers in the ISR), or a
	// workload that makes it likely.
	Era func(*run.Spec)
	// FastFailover draws schedules where leadership changes hands several
	// times in quick succession (the epoch-truncation bugs).
	FastFailover bool
	// DivergenceOnly loosens the strict search case: a scenario that needs
	// unclean election allows the loss it causes by design and looks only
	// for what the bug does beyond it, replicas that diverge (LogMatching).
	DivergenceOnly bool
}

// Model is the variant's counterpart in spec/protocol's model, if it has one.
func (v Variant) Model() (protocol.Named, bool) {
	n, err := protocol.Lookup(v.Name)
	return n, err == nil
}

// Safe is the strong-consistency recipe itself: nothing to find.
var Safe = Variant{Name: "safe", Summary: "the strong-consistency recipe of spec/SEMANTICS.md (nothing to find)",
	Reference: "spec/SEMANTICS.md, The strong-consistency recipe", Apply: func(*run.Spec) {}, Sound: true}

// All lists every variant: Safe first, then the known bugs.
var All = []Variant{
	Safe,
	{
		Name: "epoch-query",
		Summary: "safe, with followers settling divergence by OffsetsForLeaderEpoch before they fetch, as Kafka before KAFKA-10554 " +
			"(the path hw, epoch-kip101 and epoch-no-bump are built on; nothing to find)",
		Reference: "KIP-101, KIP-279, KAFKA-10554",
		Apply:     func(s *run.Spec) { s.Broker.Truncation = settings.TruncateToEpochQuery },
		Sound:     true,
	},
	{
		Name:      "hw",
		Summary:   "followers truncate to their own HW, as Kafka before 0.11 (KIP-101's data loss and divergence)",
		Reference: "KIP-101",
		Apply:     func(s *run.Spec) { s.Broker.Truncation = settings.TruncateToHW },
		Hunt:      Hunt{Era: keepISROnRestart},
	},
	{
		Name:      "epoch-kip101",
		Summary:   "epoch truncation as KIP-101 shipped it, without KIP-279's end-offset rule",
		Reference: "KAFKA-6361, KIP-279",
		Apply:     func(s *run.Spec) { s.Broker.Truncation = settings.TruncateToEpochKIP101 },
		// Leaders change in quick succession, and unclean election lets a
		// stale leader return: its loss is allowed, divergence is not.
		Hunt: Hunt{Era: uncleanElection, FastFailover: true, DivergenceOnly: true},
	},
	{
		Name:      "epoch-no-bump",
		Summary:   "no truncation when the same leader returns in a newer epoch",
		Reference: "KAFKA-7164",
		Apply:     func(s *run.Spec) { s.Broker.Truncation = settings.TruncateToEpochNoBump },
		Hunt: Hunt{Era: func(s *run.Spec) {
			s.Controller.UncleanLeaderElection = true
			// Uncommitted tails on the leader, which a follower copies and
			// the next leader lacks, are what the bug keeps: acks=1 and a
			// fast producer make them common.
			s.Workload.Acks = settings.AcksLeader
			s.Workload.Idempotent, s.Workload.Retries = false, false
			s.Workload.ProduceIntervalMs = 20
		}, FastFailover: true, DivergenceOnly: true},
	},
	{
		Name:      "no-fencing",
		Summary:   "KIP-101+279 without KIP-320: a leader serves fetches of any epoch (model only: the reference broker always fences)",
		Reference: "KIP-320",
	},
	{
		Name:      "unclean",
		Summary:   "unclean.leader.election.enable=true: a replica outside the ISR may lead (loss by design)",
		Reference: "spec/SEMANTICS.md, All replicas down",
		Apply:     uncleanElection,
	},
	{
		Name:      "hw-below-min-isr",
		Summary:   "the HW advances while the ISR is below min.insync.replicas, as before KIP-966 (last replica standing)",
		Reference: "KIP-966",
		Apply:     func(s *run.Spec) { s.Broker.AdvanceHWBelowMinISR = true },
		Hunt:      Hunt{Era: keepISROnRestart},
	},
	{
		Name: "no-elr",
		Summary: "the controller elects from the ISR only, as before KIP-966: the last ISR member leads again after an unclean restart, " +
			"though a follower that left the ISR with every committed record is back, and a partition whose last ISR member lost its data stays offline",
		Reference: "KIP-966",
		Apply:     func(s *run.Spec) { s.Controller.NoEligibleLeaders = true },
	},
	{
		Name:      "isr-without-broker-epoch",
		Summary:   "the controller accepts an ISR addition without checking the added broker's incarnation, as before KIP-903: a replica back on an empty disk joins the ISR on its old process's fetches",
		Reference: "KAFKA-14139, KIP-903",
		Apply:     func(s *run.Spec) { s.Controller.ISRWithoutBrokerEpoch = true },
	},
	{
		Name:      "acks1",
		Summary:   "producers use acks=1, without idempotence or retries (loss by design; implementation only)",
		Reference: "spec/SEMANTICS.md, Producer",
		Apply: func(s *run.Spec) {
			s.Workload.Acks = settings.AcksLeader
			s.Workload.Idempotent, s.Workload.Retries = false, false
		},
	},
	{
		Name:      "producer-state-leader-only",
		Summary:   "idempotent-producer state kept by the leader only, not rebuilt from the replicated log (dedup across a leader change fails)",
		Reference: "spec/SEMANTICS.md, Idempotent producer",
		Apply:     func(s *run.Spec) { s.Broker.ProducerState = settings.ProducerStateLeaderOnly },
	},
}

// Names lists every variant's name, comma-separated.
func Names() string {
	names := make([]string, len(All))
	for i, v := range All {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// Lookup finds a variant by name.
func Lookup(name string) (Variant, error) {
	for _, v := range All {
		if v.Name == name {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("unknown variant %q: want one of %s", name, Names())
}

// Runnable finds a variant the reference broker can run: one with Apply.
func Runnable(name string) (Variant, error) {
	v, err := Lookup(name)
	if err == nil && v.Apply == nil {
		err = fmt.Errorf("variant %s exists only in spec/protocol's model, not in the reference broker: explore it with `watermark explore --variant %s`", name, name)
	}
	return v, err
}

// ModelOf is the model variant that behaves as brokers with settings s:
// what trace validation judges a run by.
func ModelOf(s run.Settings) protocol.Variant {
	v := protocol.Variant{
		Unclean:          s.Controller.UncleanLeaderElection,
		HWBelowMinISR:    s.Broker.AdvanceHWBelowMinISR,
		KeepISROnRestart: s.Controller.KeepISROnRestart,
		MinISR:           s.Broker.MinInsyncReplicas,
	}
	switch s.Broker.Truncation {
	case settings.TruncateToHW:
		v.Truncation = protocol.TruncateHW
	case settings.TruncateToEpochKIP101:
		v.Truncation = protocol.TruncateEpochKIP101
	case settings.TruncateToEpochNoBump:
		v.Truncation = protocol.TruncateEpochNoBump
	case settings.TruncateToEpochQuery:
		v.Truncation = protocol.TruncateEpochQuery
	}
	return v
}

func keepISROnRestart(s *run.Spec) { s.Controller.KeepISROnRestart = true }

func uncleanElection(s *run.Spec) { s.Controller.UncleanLeaderElection = true }
