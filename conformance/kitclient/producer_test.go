package kitclient

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
	"github.com/watermarkhq/watermark/impl/record"
)

var (
	tp0 = kafka.TopicPartition{Topic: "t", Partition: 0}
	tp1 = kafka.TopicPartition{Topic: "t", Partition: 1}
)

// newCluster returns brokers 1..3 holding topic t with 3 partitions; the
// leader of partition i is broker i+1.
func newCluster() *fakeCluster {
	fc := newFakeCluster([]int32{1, 2, 3})
	fc.createTopic("t", 3)
	return fc
}

func nonIdempotent() Config {
	cfg := DefaultConfig()
	cfg.Idempotent = false
	return cfg
}

// TestConfigValidate checks the combinations the Java client refuses when
// the user sets them explicitly.
// Reference: KIP-679 (idempotence on by default, and its constraints).
func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	for name, mutate := range map[string]func(*Config){
		"idempotence with acks=1":          func(c *Config) { c.Acks = partition.AcksLeader },
		"idempotence with acks=0":          func(c *Config) { c.Acks = partition.AcksNone },
		"idempotence without retries":      func(c *Config) { c.Retries = false },
		"idempotence with 6 in flight":     func(c *Config) { c.MaxInFlight = 6 },
		"zero in flight":                   func(c *Config) { c.MaxInFlight = 0 },
		"acks=2":                           func(c *Config) { c.Acks = 2 },
		"delivery timeout below request's": func(c *Config) { c.DeliveryTimeoutMs = c.RequestTimeoutMs - 1 },
		"zero request timeout":             func(c *Config) { c.RequestTimeoutMs = 0 },
		"negative backoff":                 func(c *Config) { c.RetryBackoffMs = -1 },
	} {
		cfg := DefaultConfig()
		mutate(&cfg)
		err := cfg.Validate()
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		_, err = NewProducer(broker.ClientIDBase, cfg, nil)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	// Without idempotence, acks=1 and more than 5 in flight are fine.
	cfg := nonIdempotent()
	cfg.Acks, cfg.MaxInFlight = partition.AcksLeader, 10
	require.NoError(t, cfg.Validate())
}

// TestOrderAndInFlightLimit checks that an idempotent producer keeps at most
// MaxInFlight batches of a partition outstanding, numbers them 0, 1, 2...
// and completes them in send order with increasing offsets.
// Reference: KAFKA-5494 (idempotence with up to 5 in-flight requests).
func TestOrderAndInFlightLimit(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, DefaultConfig(), fc, 1)
	w.hold = true
	var want []string
	for i := range 23 {
		want = append(want, fmt.Sprintf("v%d", i))
		w.send("t", 0, want[i])
	}
	for len(w.held) > 0 {
		require.LessOrEqual(t, len(w.held), 5)
		w.release()
	}
	assert.Equal(t, want, fc.values(tp0))
	require.Len(t, w.order, 23)
	for i, r := range w.order {
		assert.Equal(t, uint64(i+1), r.ID, "results come in send order")
		assert.Equal(t, OutcomeOK, r.Outcome)
		assert.Equal(t, int64(i), r.Offset)
		assert.Equal(t, int32(i), r.Sequence)
		assert.Equal(t, int64(1), r.ProducerID)
		assert.Equal(t, 1, r.Attempts)
	}
}

// TestReorderedRequestsAreRetriedInOrder checks that batches reaching the
// broker before their predecessors (refused as a sequence gap) are resent
// after them, so the log keeps send order.
// Reference: KAFKA-5793 (OutOfOrderSequence while earlier batches are in flight).
func TestReorderedRequestsAreRetriedInOrder(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, DefaultConfig(), fc, 1)
	w.hold = true
	for i := range 5 {
		w.send("t", 0, fmt.Sprintf("v%d", i))
	}
	require.Len(t, w.held, 5)
	w.hold = false
	w.release(4, 3, 2, 1, 0) // the broker has no state for the PID until seq 0: UNKNOWN_PRODUCER_ID
	w.runUntilDone(5000)
	assert.Equal(t, []string{"v0", "v1", "v2", "v3", "v4"}, fc.values(tp0))
	for i, r := range w.order {
		assert.Equal(t, OutcomeOK, r.Outcome)
		assert.Equal(t, int64(i), r.Offset)
	}
	assert.Equal(t, 1, count[broker.InitProducerIDRequest](w), "a gap behind an unresolved batch keeps the PID")
}

// TestLostResponseRetryIsDeduplicated checks that an idempotent retry after
// a lost answer carries the same PID, epoch and sequence, so the broker
// answers with the original offset instead of writing the record twice.
// Reference: KIP-98, idempotent producer.
func TestLostResponseRetryIsDeduplicated(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, DefaultConfig(), fc, 1)
	lost := false
	w.dropResponse = func(_, resp kafka.Message) bool {
		if _, ok := resp.(broker.ProduceResponse); ok && !lost {
			lost = true
			return true
		}
		return false
	}
	id := w.send("t", 0, "a")
	w.runUntilDone(20000)

	r := w.results[id]
	assert.Equal(t, OutcomeOK, r.Outcome)
	assert.Equal(t, int64(0), r.Offset)
	assert.Equal(t, 2, r.Attempts)
	assert.Equal(t, []string{"a"}, fc.values(tp0))
	reqs := w.produces()
	require.Len(t, reqs, 2)
	for _, q := range reqs {
		assert.Equal(t, int64(1), q.Batch.ProducerID)
		assert.Equal(t, int32(0), q.Batch.BaseSequence)
	}
}

// TestLeaderChangedAfterAppendIsRetriedAndDeduplicated checks that errors
// raised after the append (the record may be written) are retried under the
// same sequence, and the retry finds the original.
// Reference: KIP-98, idempotent producer.
func TestLeaderChangedAfterAppendIsRetriedAndDeduplicated(t *testing.T) {
	for _, err := range []error{kafka.ErrLeaderChanged, kafka.ErrNotEnoughReplicasAfterAppend, kafka.ErrRequestTimedOut, kafka.ErrNetwork} {
		fc := newCluster()
		w := newWorld(t, DefaultConfig(), fc, 1)
		failed := false
		fc.afterAppend = func(broker.ProduceRequest) error {
			if failed {
				return nil
			}
			failed = true
			return err
		}
		w.send("t", 0, "a")
		w.send("t", 0, "b")
		w.runUntilDone(10000)
		assert.Equal(t, []string{"a", "b"}, fc.values(tp0), "%v", err)
		assert.Equal(t, OutcomeOK, w.results[1].Outcome)
		assert.Equal(t, int64(0), w.results[1].Offset)
		assert.Equal(t, int64(1), w.results[2].Offset)
	}
}

// TestNotLeaderRefreshesMetadata checks that NOT_LEADER sends the producer
// to metadata and the retry goes to the new leader, even when the first
// broker asked still reports the old one.
func TestNotLeaderRefreshesMetadata(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, DefaultConfig(), fc, 1)
	w.send("t", 0, "a")
	fc.moveLeader(tp0, 2)
	lagging := 2
	fc.metadataLeader = func(tp kafka.TopicPartition) (int32, bool) {
		if tp == tp0 && lagging > 0 {
			lagging--
			return 1, true
		}
		return 0, false
	}
	id := w.send("t", 0, "b")
	w.runUntilDone(5000)
	r := w.results[id]
	assert.Equal(t, OutcomeOK, r.Outcome)
	assert.Equal(t, int64(1), r.Offset)
	assert.Greater(t, r.Attempts, 1)
	assert.Equal(t, []string{"a", "b"}, fc.values(tp0))
	last := w.sent[len(w.sent)-1]
	assert.Equal(t, broker.NodeID(2), last.To)
}

// TestBrokenMetadataConnectionAsksAnotherBroker: a metadata request whose
// connection broke (kafka.ErrNetwork, as a stopping broker closes its
// connections) is retried at once on another broker, not after the
// request timeout.
func TestBrokenMetadataConnectionAsksAnotherBroker(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, DefaultConfig(), fc, 1)
	var broken broker.NodeID
	w.mangle = func(to broker.NodeID, _, resp kafka.Message) kafka.Message {
		m, ok := resp.(broker.MetadataResponse)
		if !ok || broken != 0 {
			return resp
		}
		broken = to
		return broker.MetadataResponse{Correlation: m.Correlation, Err: kafka.ErrNetwork}
	}
	id := w.send("t", 0, "a")
	require.NotZero(t, broken, "no metadata was asked")
	var asked []broker.NodeID
	for _, env := range w.sent {
		if _, ok := env.Msg.(broker.MetadataRequest); ok {
			asked = append(asked, env.To)
		}
	}
	require.GreaterOrEqual(t, len(asked), 2, "the broken answer was not followed by another request at once")
	assert.NotEqual(t, broken, asked[1], "asked the broker whose connection broke again")
	w.runUntilDone(1000)
	assert.Equal(t, OutcomeOK, w.results[id].Outcome)
}

// TestLostRequestOutOfOrderSuccessorsAreRetried checks the expected
// OUT_OF_ORDER_SEQUENCE: a lost request leaves a gap, the batches behind it
// are refused, and they are resent after the lost one is, under the same
// PID.
// Reference: KAFKA-5793.
func TestLostRequestOutOfOrderSuccessorsAreRetried(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, DefaultConfig(), fc, 1)
	w.send("t", 0, "a")
	lost := false
	var refused []error
	w.dropRequest = func(env broker.Envelope) bool {
		if _, ok := env.Msg.(broker.ProduceRequest); ok && !lost {
			lost = true
			return true
		}
		return false
	}
	w.dropResponse = func(_, resp kafka.Message) bool {
		if r, ok := resp.(broker.ProduceResponse); ok && r.Err != nil {
			refused = append(refused, r.Err)
		}
		return false
	}
	w.send("t", 0, "b") // lost
	w.send("t", 0, "c")
	w.send("t", 0, "d")
	w.runUntilDone(10000)

	require.NotEmpty(t, refused)
	for _, err := range refused {
		assert.ErrorIs(t, err, kafka.ErrOutOfOrderSequence)
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, fc.values(tp0))
	for id := uint64(1); id <= 4; id++ {
		assert.Equal(t, OutcomeOK, w.results[id].Outcome)
		assert.Equal(t, int64(id-1), w.results[id].Offset)
		assert.Equal(t, int64(1), w.results[id].ProducerID)
	}
	assert.Equal(t, 2, w.results[3].Attempts, "c waits for b's answer instead of hammering the gap")
	assert.Equal(t, 1, count[broker.InitProducerIDRequest](w))
}

// TestTrueGapFailsAndTakesANewPID checks the unexpected
// OUT_OF_ORDER_SEQUENCE: the broker lost acknowledged sequences (here the
// leader's log lost its tail), so the oldest unresolved batch can never be
// written under its PID. It fails as certainly unwritten; the producer takes
// a new PID and what follows, including a batch already refused behind it,
// starts again at sequence 0.
// Reference: spec/SEMANTICS.md "acks=1 loss"; KIP-360.
func TestTrueGapFailsAndTakesANewPID(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, DefaultConfig(), fc, 1)
	for _, v := range []string{"a", "b", "c"} {
		w.send("t", 0, v)
	}
	fc.truncate(tp0, 1)
	w.hold = true
	d := w.send("t", 0, "d")
	e := w.send("t", 0, "e")
	w.hold = false
	w.release()
	w.runUntilDone(5000)

	rd := w.results[d]
	assert.Equal(t, OutcomeFail, rd.Outcome)
	assert.ErrorIs(t, rd.Err, kafka.ErrOutOfOrderSequence)
	assert.Equal(t, int32(3), rd.Sequence)

	re := w.results[e]
	assert.Equal(t, OutcomeOK, re.Outcome)
	assert.Equal(t, int64(2), re.ProducerID)
	assert.Equal(t, int32(0), re.Sequence)
	assert.Equal(t, int64(1), re.Offset)

	assert.Equal(t, []string{"a", "e"}, fc.values(tp0))
	assert.Equal(t, 2, count[broker.InitProducerIDRequest](w))
	pid, _ := w.p.Session()
	assert.Equal(t, int64(2), pid)

	// Other partitions move to the new PID too, starting at sequence 0.
	f := w.send("t", 1, "f")
	w.runUntilDone(1000)
	assert.Equal(t, int64(2), w.results[f].ProducerID)
	assert.Equal(t, int32(0), w.results[f].Sequence)
}

// TestLostProducerStateWithAmbiguousAttemptIsUnknown checks the choice for
// UNKNOWN_PRODUCER_ID (and the other session-ending errors): the batch is
// never resent under a new PID when an earlier attempt may have been
// written, since the new PID would not deduplicate it. It completes as
// unknown; a batch whose attempts were all refused fails.
// Reference: KIP-360.
func TestLostProducerStateWithAmbiguousAttemptIsUnknown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		firstTry  func(fc *fakeCluster, w *world) // makes b's first attempt fail
		want      Outcome
		inLogOnce bool
	}{
		{
			name: "answer lost after the append",
			firstTry: func(_ *fakeCluster, w *world) {
				dropped := false
				w.dropResponse = func(req, _ kafka.Message) bool {
					r, ok := req.(broker.ProduceRequest)
					if ok && string(r.Batch.Records[0].Value) == "b" && !dropped {
						dropped = true
						return true
					}
					return false
				}
			},
			want: OutcomeUnknown,
		},
		{
			name: "refused before the append",
			firstTry: func(fc *fakeCluster, _ *world) {
				fc.refuse = func(r broker.ProduceRequest) error {
					if string(r.Batch.Records[0].Value) == "b" {
						return kafka.ErrNotEnoughReplicas
					}
					return nil
				}
			},
			want: OutcomeFail,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newCluster()
			w := newWorld(t, DefaultConfig(), fc, 1)
			w.send("t", 0, "a")
			tc.firstTry(fc, w)
			b := w.send("t", 0, "b")
			// The partition loses everything, producer state included; b's
			// retry (sequence 1) meets UNKNOWN_PRODUCER_ID.
			fc.truncate(tp0, 0)
			fc.refuse = nil
			w.runUntilDone(20000)

			r := w.results[b]
			assert.Equal(t, tc.want, r.Outcome)
			assert.ErrorIs(t, r.Err, kafka.ErrUnknownProducerID)
			for _, q := range w.produces() {
				if string(q.Batch.Records[0].Value) == "b" {
					assert.Equal(t, int64(1), q.Batch.ProducerID, "b is never resent under the new PID")
				}
			}
			c := w.send("t", 0, "c")
			w.runUntilDone(1000)
			assert.Equal(t, OutcomeOK, w.results[c].Outcome)
			assert.Equal(t, int64(2), w.results[c].ProducerID)
		})
	}
}

// TestDeliveryTimeout checks delivery.timeout.ms: a send that may have
// reached a broker ends unknown, one that never left the producer fails.
// Reference: KIP-91.
func TestDeliveryTimeout(t *testing.T) {
	cfg := DefaultConfig()

	t.Run("broker unreachable", func(t *testing.T) {
		fc := newCluster()
		w := newWorld(t, cfg, fc, 1)
		w.dropRequest = func(env broker.Envelope) bool {
			_, ok := env.Msg.(broker.ProduceRequest)
			return ok
		}
		id := w.send("t", 0, "a")
		w.runUntilDone(30000)
		r := w.results[id]
		assert.Equal(t, OutcomeUnknown, r.Outcome)
		assert.ErrorIs(t, r.Err, ErrDeliveryTimeout)
		assert.ErrorIs(t, r.Err, ErrResponseTimeout)
		assert.GreaterOrEqual(t, r.Attempts, 2)
		assert.LessOrEqual(t, w.now, cfg.DeliveryTimeoutMs+cfg.RequestTimeoutMs+cfg.ResponseSlackMs+10)
	})

	t.Run("partition offline", func(t *testing.T) {
		fc := newCluster()
		fc.parts[tp0].leader = -1
		w := newWorld(t, cfg, fc, 1)
		id := w.send("t", 0, "a")
		w.runUntilDone(30000)
		r := w.results[id]
		assert.Equal(t, OutcomeFail, r.Outcome)
		assert.ErrorIs(t, r.Err, ErrDeliveryTimeout)
		assert.Zero(t, r.Attempts)
		assert.Equal(t, cfg.DeliveryTimeoutMs, w.now)
		assert.Greater(t, count[broker.MetadataRequest](w), 2, "the producer keeps looking for a leader")
	})

	t.Run("refused every time", func(t *testing.T) {
		fc := newCluster()
		fc.refuse = func(broker.ProduceRequest) error { return kafka.ErrNotEnoughReplicas }
		w := newWorld(t, cfg, fc, 1)
		id := w.send("t", 0, "a")
		w.runUntilDone(30000)
		r := w.results[id]
		assert.Equal(t, OutcomeFail, r.Outcome, "every attempt was refused before the append")
		assert.ErrorIs(t, r.Err, kafka.ErrNotEnoughReplicas)
		assert.Greater(t, r.Attempts, 10)
	})

	t.Run("unknown topic", func(t *testing.T) {
		fc := newCluster()
		w := newWorld(t, cfg, fc, 1)
		id := w.send("nope", -1, "a")
		w.runUntilDone(30000)
		r := w.results[id]
		assert.Equal(t, OutcomeFail, r.Outcome)
		assert.ErrorIs(t, r.Err, ErrDeliveryTimeout)
		assert.ErrorIs(t, r.Err, kafka.ErrUnknownTopicOrPartition)
		assert.Equal(t, int32(-1), r.Partition)
	})
}

// TestNonIdempotentRetryDuplicates checks that without idempotence a retry
// is a plain resend: a lost answer makes the record appear twice
// (at-least-once).
// Reference: spec/SEMANTICS.md, "Retries without idempotence give at-least-once".
func TestNonIdempotentRetryDuplicates(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, nonIdempotent(), fc, 1)
	lost := false
	w.dropResponse = func(_, resp kafka.Message) bool {
		if _, ok := resp.(broker.ProduceResponse); ok && !lost {
			lost = true
			return true
		}
		return false
	}
	id := w.send("t", 0, "a")
	w.runUntilDone(20000)
	r := w.results[id]
	assert.Equal(t, OutcomeOK, r.Outcome)
	assert.Equal(t, int64(1), r.Offset, "the second copy answered")
	assert.Equal(t, []string{"a", "a"}, fc.values(tp0))
	assert.Equal(t, record.NoProducerID, r.ProducerID)
	assert.Equal(t, record.NoSequence, r.Sequence)
	assert.Zero(t, count[broker.InitProducerIDRequest](w))
}

// TestAcksZeroIsUnknown checks that acks=0 completes as soon as the request
// is out, as unknown: no answer will say whether it was written.
// Reference: spec/SEMANTICS.md, acks=0.
func TestAcksZeroIsUnknown(t *testing.T) {
	cfg := nonIdempotent()
	cfg.Acks = partition.AcksNone
	fc := newCluster()
	w := newWorld(t, cfg, fc, 1)
	w.run(10) // metadata first
	dropped := false
	w.dropRequest = func(env broker.Envelope) bool {
		if _, ok := env.Msg.(broker.ProduceRequest); ok && !dropped {
			dropped = true
			return true
		}
		return false
	}
	var ids []uint64
	for i := range 12 {
		ids = append(ids, w.send("t", 0, fmt.Sprint(i)))
	}
	for _, id := range ids {
		r, ok := w.results[id]
		require.True(t, ok, "completed at once")
		assert.Equal(t, OutcomeUnknown, r.Outcome)
		assert.Equal(t, int64(-1), r.Offset)
		assert.NoError(t, r.Err)
		assert.Equal(t, 1, r.Attempts)
	}
	assert.Len(t, fc.values(tp0), 11, "the dropped one is lost, as acks=0 allows")
}

// TestRetriesOff checks single-attempt sends: a refusal before the append
// fails, an error after it or no answer is unknown.
func TestRetriesOff(t *testing.T) {
	cfg := nonIdempotent()
	cfg.Retries = false
	for _, tc := range []struct {
		name   string
		set    func(fc *fakeCluster, w *world)
		want   Outcome
		wantIs error
	}{
		{"not enough replicas", func(fc *fakeCluster, _ *world) {
			fc.refuse = func(broker.ProduceRequest) error { return kafka.ErrNotEnoughReplicas }
		}, OutcomeFail, kafka.ErrNotEnoughReplicas},
		{"not leader", func(fc *fakeCluster, _ *world) {
			fc.metadataLeader = func(kafka.TopicPartition) (int32, bool) { return 2, true }
		}, OutcomeFail, kafka.ErrNotLeader},
		{"after append", func(fc *fakeCluster, _ *world) {
			fc.afterAppend = func(broker.ProduceRequest) error { return kafka.ErrNotEnoughReplicasAfterAppend }
		}, OutcomeUnknown, kafka.ErrNotEnoughReplicasAfterAppend},
		{"no answer", func(_ *fakeCluster, w *world) {
			w.dropResponse = func(_, resp kafka.Message) bool { _, ok := resp.(broker.ProduceResponse); return ok }
		}, OutcomeUnknown, ErrResponseTimeout},
		{"connection broke", func(fc *fakeCluster, _ *world) {
			fc.afterAppend = func(broker.ProduceRequest) error { return kafka.ErrNetwork }
		}, OutcomeUnknown, kafka.ErrNetwork},
		{"invalid record", func(fc *fakeCluster, _ *world) {
			fc.refuse = func(broker.ProduceRequest) error { return kafka.ErrInvalidRecord }
		}, OutcomeFail, kafka.ErrInvalidRecord},
		{"unknown error", func(fc *fakeCluster, _ *world) {
			fc.afterAppend = func(broker.ProduceRequest) error { return errors.New("disk on fire") }
		}, OutcomeUnknown, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newCluster()
			w := newWorld(t, cfg, fc, 1)
			tc.set(fc, w)
			id := w.send("t", 0, "a")
			w.runUntilDone(10000)
			r := w.results[id]
			assert.Equal(t, tc.want, r.Outcome)
			assert.Equal(t, 1, r.Attempts)
			if tc.wantIs != nil {
				assert.ErrorIs(t, r.Err, tc.wantIs)
			}
		})
	}
}

// TestExplicitPartitionOutOfRangeFails checks that a partition the topic
// does not have fails at once, unsent.
func TestExplicitPartitionOutOfRangeFails(t *testing.T) {
	w := newWorld(t, DefaultConfig(), newCluster(), 1)
	w.run(10)
	id := w.send("t", 7, "a")
	r, ok := w.results[id]
	require.True(t, ok)
	assert.Equal(t, OutcomeFail, r.Outcome)
	assert.ErrorIs(t, r.Err, kafka.ErrUnknownTopicOrPartition)
	assert.Zero(t, r.Attempts)

	id = w.send("", -1, "a")
	assert.ErrorIs(t, w.results[id].Err, ErrInvalidMessage)
}

// TestSpreadsUnkeyedOverLeaderPartitions checks the producer's use of the
// partitioner: keyed records go by hash, unkeyed ones round-robin over the
// partitions that have a leader.
func TestSpreadsUnkeyedOverLeaderPartitions(t *testing.T) {
	fc := newCluster()
	fc.parts[tp1].leader = -1
	w := newWorld(t, DefaultConfig(), fc, 1)
	w.run(10)
	seen := map[int32]int{}
	for i := range 10 {
		id := w.p.Send(Message{Topic: "t", Partition: -1, Value: []byte(fmt.Sprint(i))}, w.now)
		w.drain()
		seen[w.results[id].Partition]++
	}
	assert.Equal(t, map[int32]int{0: 5, 2: 5}, seen)

	id := w.p.Send(Message{Topic: "t", Partition: -1, Key: []byte("k"), Value: []byte("x")}, w.now)
	w.drain()
	w.run(100)
	assert.Equal(t, KeyPartition([]byte("k"), 3), w.results[id].Partition)
}

// TestSessionResetKeepsMaybeWrittenSuccessorsUnknown checks what happens to
// the other batches of a partition whose session ends (here on
// INVALID_PRODUCER_EPOCH): one that may already be in the log completes as
// unknown rather than being resent under the new PID, which would not
// deduplicate it.
// Reference: KIP-360.
func TestSessionResetKeepsMaybeWrittenSuccessorsUnknown(t *testing.T) {
	fc := newCluster()
	w := newWorld(t, DefaultConfig(), fc, 1)
	w.send("t", 0, "a")

	// b and c are appended but their answers are lost.
	dropping := true
	w.dropResponse = func(_, resp kafka.Message) bool {
		_, ok := resp.(broker.ProduceResponse)
		return ok && dropping
	}
	b := w.send("t", 0, "b")
	c := w.send("t", 0, "c")
	dropping = false
	require.Equal(t, []string{"a", "b", "c"}, fc.values(tp0))

	// Their retries: c's is refused before the append, then b's meets a
	// fenced epoch, which ends the session while c waits to retry.
	w.hold = true
	w.run(5000)
	require.Len(t, w.held, 2)
	fc.refuse = func(r broker.ProduceRequest) error {
		if string(r.Batch.Records[0].Value) == "c" {
			return kafka.ErrNotEnoughReplicas
		}
		return kafka.ErrInvalidProducerEpoch
	}
	w.hold = false
	w.release(1, 0)
	fc.refuse = nil
	d := w.send("t", 0, "d")
	w.runUntilDone(5000)

	assert.Equal(t, OutcomeUnknown, w.results[b].Outcome)
	assert.ErrorIs(t, w.results[b].Err, kafka.ErrInvalidProducerEpoch)
	assert.Equal(t, OutcomeUnknown, w.results[c].Outcome)
	assert.ErrorIs(t, w.results[c].Err, ErrSessionReset)
	assert.Equal(t, OutcomeOK, w.results[d].Outcome)
	assert.Equal(t, int64(2), w.results[d].ProducerID)
	assert.Equal(t, []string{"a", "b", "c", "d"}, fc.values(tp0), "c is not written again")
}
