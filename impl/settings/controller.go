package settings

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidController wraps every Controller.Validate error
// (impl/controller.ErrInvalidConfig).
var ErrInvalidController = errors.New("invalid controller config")

// Controller holds the controller's settings (impl/controller.Config). A
// field's yaml tag names it in run files and as a
// `watermark serve --role controller` flag; its doc tag is its help line.
type Controller struct {
	// SessionTimeoutMs is how long a broker may go without a heartbeat
	// before it is declared dead.
	SessionTimeoutMs int64 `yaml:"session_timeout_ms" doc:"a broker silent this long is dead (broker.session.timeout.ms)"`
	// UncleanLeaderElection lets a replica outside the ISR lead when no ISR
	// member is alive: availability over consistency.
	UncleanLeaderElection bool `yaml:"unclean_leader_election" doc:"elect a replica outside the ISR when no ISR member is alive; loses data (unclean.leader.election.enable)"`
	// AutoLeaderRebalance moves leadership back to the preferred replica on
	// every Tick once it is alive and in the ISR (KRaft, too, has no
	// imbalance threshold; it looks every 300 s).
	AutoLeaderRebalance bool `yaml:"auto_leader_rebalance" doc:"move leadership back to the preferred replica (auto.leader.rebalance.enable)"`
	// KeepISROnRestart lets a broker that restarted (new incarnation) keep
	// its ISR memberships and leaderships, as Kafka did before KIP-903. A
	// replica that lost unsynced data in a power loss then still counts as
	// in sync; the KIP-101 scenarios need this to unfold. Off is safe.
	KeepISROnRestart bool `yaml:"keep_isr_on_restart" doc:"a restarted broker keeps its ISR memberships, as before KIP-903 (unsafe)"`
	// ISRWithoutBrokerEpoch accepts an ISR addition without comparing the
	// incarnation the leader saw fetch (AlterPartition's
	// NewISRIncarnations) with the broker's registered one, as Kafka did
	// before KIP-903 (AlterPartition carried no broker epochs). A proposal
	// made from the fetches of a process that has since restarted on an
	// empty disk then puts the new, empty process in the ISR
	// (KAFKA-14139). Off is safe.
	ISRWithoutBrokerEpoch bool `yaml:"isr_without_broker_epoch" doc:"accept an ISR addition without checking the added broker's incarnation (broker epoch), as before KIP-903 (KAFKA-14139; unsafe)"`
	// NoEligibleLeaders elects from the ISR only, as before KIP-966: a
	// partition whose last ISR member lost its data stays offline, and
	// that member leads on its return after an unclean restart.
	NoEligibleLeaders bool `yaml:"no_eligible_leader_replicas" doc:"elect from the ISR only, as before KIP-966 (no eligible leader replicas)"`
	// EligibleMinISR, when 2 or more, keeps KIP-966's eligible leader
	// replicas (ELR): the replicas that left a partition's ISR while it
	// was, or became, smaller than this many members. It must be the
	// brokers' min.insync.replicas, and they must hold their HW while
	// their ISR is below it (Partition: not AdvanceHWBelowMinISR); then an
	// ELR member holds every committed record, and the controller elects
	// one when no ISR member can lead. It is derived from the brokers'
	// settings, not set on its own (run.Settings.ControllerConfig); 0 or
	// 1: no ELR.
	EligibleMinISR int `yaml:"-"`
	// UncleanRecovery elects, when no ISR member or eligible leader
	// replica can lead, the live replica whose log end ranks highest,
	// after asking each (KIP-966's unclean recovery, impl/controller's
	// recovery.go); it replaces UncleanLeaderElection, the controller's
	// and the topics'. Kafka 4.1 has no such setting (KIP-966's
	// unclean.recovery.strategy was not shipped): the name is the
	// reference's.
	UncleanRecovery RecoveryStrategy `yaml:"unclean_recovery" doc:"when no ISR member or eligible replica can lead, ask the live replicas where their logs end and elect the longest; loses data (KIP-966's unclean recovery, not in Kafka 4.1)"`
	// UncleanRecoveryTimeoutMs bounds how long a recovery waits for the
	// answers of live replicas before it decides on those it has, or asks
	// again when it has none (KIP-966's unclean.recovery.timeout.ms).
	UncleanRecoveryTimeoutMs int64 `yaml:"unclean_recovery_timeout_ms" doc:"how long an unclean recovery waits for live replicas' answers (KIP-966's unclean.recovery.timeout.ms, not in Kafka 4.1)"`
}

// DefaultController is Kafka's default: a 9 s broker session, and
// KIP-966's 5 minutes for an unclean recovery's answers (off, as it is by
// default).
func DefaultController() Controller {
	return Controller{SessionTimeoutMs: 9000, UncleanRecoveryTimeoutMs: 300_000}
}

// Validate reports whether cfg can run a controller.
func (cfg Controller) Validate() error {
	if cfg.SessionTimeoutMs <= 0 {
		return fmt.Errorf("%w: session_timeout_ms %d must be positive", ErrInvalidController, cfg.SessionTimeoutMs)
	}
	if _, ok := recoveryNames[cfg.UncleanRecovery]; !ok {
		return fmt.Errorf("%w: unclean_recovery %d: want one of %s", ErrInvalidController, cfg.UncleanRecovery, strings.Join(RecoveryStrategy(0).Values(), ", "))
	}
	if cfg.UncleanRecoveryTimeoutMs < 0 || (cfg.UncleanRecovery != RecoveryNone && cfg.UncleanRecoveryTimeoutMs == 0) {
		return fmt.Errorf("%w: unclean_recovery_timeout_ms %d must be positive with unclean_recovery %s", ErrInvalidController, cfg.UncleanRecoveryTimeoutMs, cfg.UncleanRecovery)
	}
	return nil
}

// RecoveryStrategy says whether and how an offline partition recovers
// uncleanly (Controller.UncleanRecovery).
type RecoveryStrategy int8

// The strategies, by KIP-966's names.
const (
	// RecoveryNone: no unclean recovery; UncleanLeaderElection decides.
	RecoveryNone RecoveryStrategy = iota
	// RecoveryBalanced waits for every last-known member to answer.
	RecoveryBalanced
	// RecoveryAggressive decides on the live replicas' answers alone.
	RecoveryAggressive
)

var recoveryNames = map[RecoveryStrategy]string{
	RecoveryNone:       "none",
	RecoveryBalanced:   "balanced",
	RecoveryAggressive: "aggressive",
}

// String names the strategy as run files and flags spell it.
func (s RecoveryStrategy) String() string {
	if n, ok := recoveryNames[s]; ok {
		return n
	}
	return fmt.Sprintf("RecoveryStrategy(%d)", int8(s))
}

// Values lists the names a RecoveryStrategy takes.
func (RecoveryStrategy) Values() []string { return []string{"none", "balanced", "aggressive"} }

// MarshalText writes the strategy's name.
func (s RecoveryStrategy) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads one of Values.
func (s *RecoveryStrategy) UnmarshalText(b []byte) error {
	for v, n := range recoveryNames {
		if n == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown unclean recovery %q: want one of %s", b, strings.Join(RecoveryStrategy(0).Values(), ", "))
}
