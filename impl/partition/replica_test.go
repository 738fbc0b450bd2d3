package partition

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Helpers that drive one Replica by hand, for rules that are easiest to see
// without a network.

// batch is a leader-less batch of one record per value.
func batch(values ...string) record.Batch {
	b := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence}
	for _, v := range values {
		b.Records = append(b.Records, record.Record{Value: []byte(v)})
	}
	return b
}

// stored builds a log as storage would hand it to New: batches of one
// record each, placed contiguously, with the given leader epochs.
func stored(epochs []int32, values ...string) []record.Batch {
	out := make([]record.Batch, len(values))
	for i, v := range values {
		out[i] = batch(v)
		out[i].BaseOffset = int64(i)
		out[i].LeaderEpoch = epochs[i]
	}
	return out
}

func entry(epoch int32, start int64) storage.EpochEntry {
	return storage.EpochEntry{Epoch: epoch, StartOffset: start}
}

func epochCache(t testing.TB, entries ...storage.EpochEntry) storage.EpochCache {
	t.Helper()
	ec, err := storage.NewEpochCache(entries)
	require.NoError(t, err)
	return ec
}

// load calls New as a broker does after reading storage, without producer
// state (no batch in these tests is idempotent).
func load(cfg Config, log []record.Batch, hw int64, ec storage.EpochCache) (*Replica, error) {
	return New(cfg, testTP, log, hw, ec, nil)
}

func newReplica(t testing.TB, cfg Config, log []record.Batch, hw int64, ec storage.EpochCache) *Replica {
	t.Helper()
	r, err := load(cfg, log, hw, ec)
	require.NoError(t, err)
	return r
}

// leaderOf returns broker 1 leading epoch 1 of replicas {1,2,3} with the
// given ISR, holding one acks=1 batch per value, its Ready drained.
func leaderOf(t testing.TB, cfg Config, isr []int32, values ...string) *Replica {
	t.Helper()
	r := newReplica(t, cfg, nil, 0, storage.EpochCache{})
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 1, ISR: isr, Replicas: []int32{1, 2, 3}, PartitionEpoch: 1}, 0)
	for _, v := range values {
		res := produceAt(r, 0, ProduceRequest{Acks: AcksLeader, Batch: batch(v)}, 0)
		require.NoError(t, res.Err)
	}
	drain(r)
	return r
}

// fetchAt is a replica fetch from follower in the leader's epoch.
func fetchAt(r *Replica, follower int32, offset, now int64) FetchResponse {
	return replicaFetchAt(r, FetchRequest{TopicPartition: testTP, LastFetchedEpoch: -1, ID: 1, ReplicaID: follower, To: r.cfg.BrokerID,
		FetchOffset: offset, CurrentLeaderEpoch: r.LeaderEpoch(), MaxBytes: 1 << 20}, now)
}

// messages returns the messages of type T in rd, in order.
func messages[T Message](rd Ready) []T {
	var out []T
	for _, m := range rd.Messages {
		if m, ok := m.(T); ok {
			out = append(out, m)
		}
	}
	return out
}

// New(): a power loss can leave the HW checkpoint and the leader-epoch
// cache ahead of the log that survived; the replica clamps HW to LEO and
// drops the epoch entries that start at or after LEO, as Kafka truncates the
// cache to LEO on load. Reference: KIP-101 (epoch cache), spec/SEMANTICS.md,
// Replication.
func TestNewClampsCheckpointsToTheLog(t *testing.T) {
	ec := epochCache(t, storage.EpochEntry{Epoch: 1, StartOffset: 0}, storage.EpochEntry{Epoch: 2, StartOffset: 1},
		storage.EpochEntry{Epoch: 3, StartOffset: 2}, storage.EpochEntry{Epoch: 4, StartOffset: 5})
	r := newReplica(t, testConfig(1), stored([]int32{1, 2}, "a", "b"), 7, ec)

	assert.Equal(t, int64(2), r.LEO())
	assert.Equal(t, int64(2), r.HW(), "HW clamped to LEO")
	assert.Equal(t, []storage.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 1}}, entries(r.EpochCache()),
		"entries starting at or after LEO dropped")
	assert.Equal(t, int32(2), r.LeaderEpoch(), "acts in the latest epoch it holds records of")
	assert.Equal(t, RoleNone, r.Role())
	assert.Equal(t, int32(-1), r.Leader())

	r = newReplica(t, testConfig(1), stored([]int32{1}, "a"), -5, storage.EpochCache{})
	assert.Equal(t, int64(0), r.HW(), "negative HW clamped to 0")
	assert.Equal(t, int32(-1), r.LeaderEpoch(), "no epoch known")
}

// New(): storage hands over a contiguous log from offset 0 of non-empty
// batches; anything else is refused rather than served.
// Reference: Replica invariant 1; record.Batch invariant 1.
func TestNewRefusesBrokenLogs(t *testing.T) {
	gap := stored([]int32{1, 1}, "a", "b")
	gap[1].BaseOffset = 2
	late := stored([]int32{1}, "a")
	late[0].BaseOffset = 1
	empty := stored([]int32{1}, "a")
	empty[0].Records = nil
	for name, log := range map[string][]record.Batch{"gap": gap, "not from 0": late, "empty batch": empty} {
		t.Run(name, func(t *testing.T) {
			_, err := load(testConfig(1), log, 0, storage.EpochCache{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), testTP.String())
		})
	}
	bad := testConfig(1)
	bad.MinInsyncReplicas = 0
	_, err := load(bad, nil, 0, storage.EpochCache{})
	require.Error(t, err, "New validates the config")
}

// Config.Validate rejects each setting the protocol cannot run with.
// Reference: Settings (replica.lag.time.max.ms, min.insync.replicas, ...).
func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig(1).Validate())
	require.NoError(t, testConfig(1).Validate())
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"lag zero", func(c *Config) { c.ReplicaLagTimeMaxMs = 0 }, "replica_lag_time_max_ms"},
		{"min isr zero", func(c *Config) { c.MinInsyncReplicas = 0 }, "min_insync_replicas"},
		{"fetch bytes zero", func(c *Config) { c.ReplicaFetchMaxBytes = 0 }, "replica_fetch_max_bytes"},
		{"negative fetch wait", func(c *Config) { c.ReplicaFetchWaitMaxMs = -1 }, "replica_fetch_wait_max_ms"},
		{"timeout equals fetch wait", func(c *Config) { c.RequestTimeoutMs = c.ReplicaFetchWaitMaxMs }, "request_timeout_ms"},
		{"timeout below fetch wait", func(c *Config) { c.RequestTimeoutMs = 10; c.ReplicaFetchWaitMaxMs = 20 }, "request_timeout_ms"},
		{"backoff zero", func(c *Config) { c.RetryBackoffMs = 0 }, "retry_backoff_ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(1)
			tc.edit(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	ok := DefaultConfig(1)
	ok.ReplicaFetchWaitMaxMs = 0
	require.NoError(t, ok.Validate(), "a fetch wait of 0 (answer at once) is valid")
}

// The truncation variant is chosen by broker config under the names
// spec/SEMANTICS.md uses. Reference: spec/SEMANTICS.md, Replication.
func TestParseTruncation(t *testing.T) {
	for _, tr := range []Truncation{TruncateToEpoch, TruncateToHW, TruncateToEpochKIP101, TruncateToEpochNoBump, TruncateToEpochQuery} {
		text, err := tr.MarshalText()
		require.NoError(t, err)
		var got Truncation
		require.NoError(t, got.UnmarshalText(text))
		assert.Equal(t, tr, got)
	}
	assert.Equal(t, "hw", TruncateToHW.String())
	assert.Equal(t, "epoch", TruncateToEpoch.String())
	assert.Equal(t, "epoch-query", TruncateToEpochQuery.String())
	assert.Equal(t, "7", Truncation(7).String())
	var tr Truncation
	assert.ErrorContains(t, tr.UnmarshalText([]byte("leader-epoch")), "want one of epoch, hw, epoch-kip101, epoch-no-bump, epoch-query")
	assert.Equal(t, TruncateToEpoch, DefaultConfig(1).Truncation, "the safe variant is the default")
	assert.Equal(t, "t-0", testTP.String())
}
