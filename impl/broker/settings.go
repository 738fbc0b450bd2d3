package broker

import (
	"fmt"

	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Settings are a broker's settings: its replicas' protocol settings and
// its own (settings.Broker, with their run-file names, Kafka's defaults and
// their validation). A cluster's brokers all run with the same.
type Settings = settings.Broker

// GroupSettings are the settings of the group coordinators a broker hosts
// and of the offsets topic they keep their state in (settings.BrokerGroups).
type GroupSettings = settings.BrokerGroups

// DefaultMessageMaxBytes is Kafka's default message.max.bytes: 1 MiB and a
// v2 batch's log overhead.
const DefaultMessageMaxBytes = settings.DefaultMessageMaxBytes

// DefaultSettings are Kafka's defaults, but for
// group.initial.rebalance.delay.ms, which is 0 (impl/group.DefaultConfig).
func DefaultSettings() Settings { return settings.DefaultBroker() }

// logConfig is the shape of the broker's logs.
func logConfig(s Settings) storage.LogConfig {
	return storage.LogConfig{SegmentBytes: s.LogSegmentBytes, IndexIntervalBytes: s.LogIndexIntervalBytes, RollMs: s.LogRollMs,
		RetentionMs: s.LogRetentionMs, RetentionBytes: s.LogRetentionBytes}
}

// Config is one broker's configuration: its settings and who it is.
type Config struct {
	Settings
	ID NodeID
	// Address is the broker's advertised address (host:port), registered
	// with the controller for clients' metadata; empty in the simulator.
	Address string
	// MirrorLogs keeps a decoded copy of every log in memory for checkers
	// that look at whole logs after every step (storage.LogConfig's
	// Mirror): the simulator's invariants.
	MirrorLogs bool
	// Voters is how many controllers the quorum has (VoterNode(1) up to
	// VoterNode(Voters)); 0 means 1.
	Voters int
}

// DefaultConfig is broker id's configuration with Kafka's defaults.
func DefaultConfig(id NodeID) Config { return Config{Settings: DefaultSettings(), ID: id} }

// Validate reports a configuration a broker cannot run with.
func (c Config) Validate() error {
	if c.ID <= ControllerID || c.ID >= ClientIDBase {
		return fmt.Errorf("broker id %d out of range: want 1..%d", c.ID, ClientIDBase-1)
	}
	return c.Settings.Validate()
}
