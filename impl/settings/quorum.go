package settings

import (
	"errors"
	"fmt"
)

// ErrInvalidQuorum wraps every Quorum.Validate error.
var ErrInvalidQuorum = errors.New("invalid controller quorum config")

// Quorum holds the controller quorum's settings (impl/quorum): how many
// controllers vote, where they run, and the timing of their Raft
// elections. As in Controller, a field's yaml tag names it in run files
// and as a flag; its doc tag is its help line.
type Quorum struct {
	// Voters is how many controllers form the quorum; the active one is
	// the Raft leader. 1 has no failover; 3 survives one controller
	// down, 5 two.
	Voters int `yaml:"controllers" doc:"how many controllers vote in the metadata quorum: 1, 3 or 5 (controller.quorum.voters lists them)"`
	// Combined runs voter k inside broker k's process, on its disk
	// (KRaft's process.roles=broker,controller): a broker's crash is its
	// controller's. Needs at least Voters brokers.
	Combined bool `yaml:"combined" doc:"brokers 1..controllers are also the voters, in the same process (process.roles=broker,controller)"`
	// ElectionTimeoutMs: a voter that hears nothing from the leader this
	// long campaigns, after a random extra wait below
	// ElectionBackoffMaxMs; a leader that heard from no majority this
	// long stops acting as the active controller.
	ElectionTimeoutMs int64 `yaml:"controller_election_timeout_ms" doc:"a voter that hears nothing from the leader this long campaigns (controller.quorum.fetch.timeout.ms)"`
	// ElectionBackoffMaxMs bounds the random extra wait before a
	// campaign, which keeps voters from campaigning at once.
	ElectionBackoffMaxMs int64 `yaml:"controller_election_backoff_max_ms" doc:"the most a voter adds, at random, to its wait before it campaigns (controller.quorum.election.backoff.max.ms)"`
	// HeartbeatMs is how often the leader sends each voter what it lacks
	// of the log, or a heartbeat.
	HeartbeatMs int64 `yaml:"controller_heartbeat_ms" doc:"how often the quorum's leader sends voters its log or a heartbeat"`
	// SnapshotEntries is how many log entries a controller applies between
	// two snapshots of its metadata (which bound the log: a voter that
	// lags behind the oldest entry kept is sent the snapshot).
	SnapshotEntries uint64 `yaml:"metadata_snapshot_entries" doc:"log entries between two metadata snapshots (Kafka counts bytes: metadata.log.max.record.bytes.between.snapshots)"`
}

// DefaultQuorum is KRaft's timing (a 2 s fetch timeout, elections backed
// off by up to 1 s) with one voter; `watermark cluster` starts three.
func DefaultQuorum() Quorum {
	return Quorum{Voters: 1, ElectionTimeoutMs: 2000, ElectionBackoffMaxMs: 1000, HeartbeatMs: 500, SnapshotEntries: 1000}
}

// MaxVoters is the largest quorum the reference runs.
const MaxVoters = 7

// Validate reports whether q can run a quorum.
func (q Quorum) Validate() error {
	switch {
	case q.Voters < 1 || q.Voters > MaxVoters:
		return fmt.Errorf("%w: controllers %d: want 1 to %d (an odd number: an even one tolerates no more failures than one fewer)", ErrInvalidQuorum, q.Voters, MaxVoters)
	case q.ElectionTimeoutMs <= 0:
		return fmt.Errorf("%w: controller_election_timeout_ms %d must be positive", ErrInvalidQuorum, q.ElectionTimeoutMs)
	case q.ElectionBackoffMaxMs < 0:
		return fmt.Errorf("%w: controller_election_backoff_max_ms %d must not be negative", ErrInvalidQuorum, q.ElectionBackoffMaxMs)
	case q.HeartbeatMs <= 0 || q.HeartbeatMs >= q.ElectionTimeoutMs:
		return fmt.Errorf("%w: controller_heartbeat_ms %d must be positive and below controller_election_timeout_ms %d, or voters campaign against a live leader", ErrInvalidQuorum, q.HeartbeatMs, q.ElectionTimeoutMs)
	case q.Combined:
		return fmt.Errorf("%w: combined: voters inside brokers are not built yet; run the controllers on their own (combined: false)", ErrInvalidQuorum)
	case q.SnapshotEntries < 2:
		return fmt.Errorf("%w: metadata_snapshot_entries %d: want at least 2", ErrInvalidQuorum, q.SnapshotEntries)
	}
	return nil
}
