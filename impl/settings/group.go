package settings

import (
	"errors"
	"fmt"
)

// ErrInvalidGroup wraps every Group.Validate error
// (impl/group.ErrInvalidConfig).
var ErrInvalidGroup = errors.New("invalid group coordinator config")

// Group holds a group coordinator's settings (impl/group.Config), named
// after Kafka's broker configs. The tags name them in run files and as
// flags, as a broker's other settings (Broker).
type Group struct {
	// MinSessionTimeoutMs and MaxSessionTimeoutMs bound a member's
	// session.timeout.ms; a JoinGroup outside them gets
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeoutMs int64 `yaml:"group_min_session_timeout_ms" doc:"the shortest session.timeout.ms a group member may ask for (group.min.session.timeout.ms)"`
	MaxSessionTimeoutMs int64 `yaml:"group_max_session_timeout_ms" doc:"the longest session.timeout.ms a group member may ask for (group.max.session.timeout.ms)"`
	// InitialRebalanceDelayMs holds the first rebalance of an Empty group
	// open at least this long so that more members can join it. Kafka
	// defaults to 3000; the reference defaults to 0 so that scenarios
	// complete without ticking.
	InitialRebalanceDelayMs int64 `yaml:"group_initial_rebalance_delay_ms" doc:"how long the first rebalance of an empty group waits for more members (group.initial.rebalance.delay.ms)"`
}

// DefaultGroup returns Kafka's session bounds (6 s, 30 min) and no initial
// rebalance delay.
func DefaultGroup() Group {
	return Group{MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 1800000}
}

// Validate reports whether cfg can run a coordinator.
func (cfg Group) Validate() error {
	switch {
	case cfg.MinSessionTimeoutMs <= 0:
		return fmt.Errorf("%w: group_min_session_timeout_ms %d must be positive", ErrInvalidGroup, cfg.MinSessionTimeoutMs)
	case cfg.MaxSessionTimeoutMs < cfg.MinSessionTimeoutMs:
		return fmt.Errorf("%w: group_max_session_timeout_ms %d below group_min_session_timeout_ms %d",
			ErrInvalidGroup, cfg.MaxSessionTimeoutMs, cfg.MinSessionTimeoutMs)
	case cfg.InitialRebalanceDelayMs < 0:
		return fmt.Errorf("%w: group_initial_rebalance_delay_ms %d is negative", ErrInvalidGroup, cfg.InitialRebalanceDelayMs)
	}
	return nil
}
