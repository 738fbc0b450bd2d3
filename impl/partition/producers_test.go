package partition

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/storage"
)

// Tests of the idempotent producer's broker side: the leader's check of a
// batch's PID, epoch and sequence, the duplicate answer, the producer state
// followers rebuild, truncation, and the snapshot a restart starts from.

// Producer ids used below; any positive id is a PID.
const (
	pidP int64 = 7001
	pidQ int64 = 7002
)

// idem is an idempotent batch of pid in epoch, one record per value, whose
// first record has sequence seq.
func idem(pid int64, epoch int16, seq int32, values ...string) record.Batch {
	b := batch(values...)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	return b
}

// leaderOnlyConfig is testConfig with producer state kept by leaders only.
func leaderOnlyConfig(id int32) Config {
	cfg := testConfig(id)
	cfg.ProducerState = ProducerStateLeaderOnly
	return cfg
}

// producer sends batches to a replica by hand, numbering the requests.
type producer struct {
	t  *testing.T
	r  *Replica
	id uint64
}

// send produces b under a new request id and returns the result; the
// replica's Ready is left to the caller.
func (p *producer) send(acks Acks, b record.Batch) ProduceResult {
	p.id++
	return produceAt(p.r, p.id, ProduceRequest{Acks: acks, Batch: b}, 0)
}

// ok produces b with acks=1 and requires it appended at want.
func (p *producer) ok(b record.Batch, want int64) {
	p.t.Helper()
	res := p.send(AcksLeader, b)
	require.NoError(p.t, res.Err)
	require.False(p.t, res.Duplicate, "a new batch was taken for a duplicate")
	require.Equal(p.t, want, res.BaseOffset)
}

// refused requires b to be refused with want and nothing to be appended.
func (p *producer) refused(acks Acks, b record.Batch, want error) {
	p.t.Helper()
	drain(p.r)
	leo := p.r.LEO()
	res := p.send(acks, b)
	require.ErrorIs(p.t, res.Err, want)
	assert.Equal(p.t, int64(-1), res.BaseOffset)
	assert.False(p.t, res.Parked)
	assert.Equal(p.t, leo, p.r.LEO(), "a refused batch was appended")
	assert.Empty(p.t, drain(p.r).Append, "a refused batch was queued for storage")
}

// dup requires b to be answered as the duplicate of the batch at base,
// with nothing appended.
func (p *producer) dup(acks Acks, b record.Batch, base int64) ProduceResult {
	p.t.Helper()
	drain(p.r)
	leo := p.r.LEO()
	res := p.send(acks, b)
	require.NoError(p.t, res.Err)
	assert.True(p.t, res.Duplicate, "a retry was not recognised")
	assert.Equal(p.t, base, res.BaseOffset, "a duplicate is answered with the original offset")
	assert.Equal(p.t, leo, p.r.LEO(), "a duplicate was appended")
	assert.Empty(p.t, drain(p.r).Append, "a duplicate was queued for storage")
	return res
}

// "Each batch carries a base sequence per (PID, partition), starting at
// 0." A new PID starts at 0; a later sequence from a PID the partition has
// no state for means the state was lost, and the reference broker refuses
// it with UNKNOWN_PRODUCER_ID. With ProducerStateLeaderOnly the leader
// takes it (Kafka's lenient first write), which is how that bug duplicates.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentFirstBatchOfANewProducer(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1}, "plain")
	p := &producer{t: t, r: r}
	p.ok(idem(pidP, 0, 0, "p0", "p1"), 1)
	assert.Equal(t, []string{"plain", "p0", "p1"}, values(r.Log()))
	b := r.Log()[1]
	assert.Equal(t, pidP, b.ProducerID, "the batch keeps its PID in the log")
	assert.Equal(t, int32(0), b.BaseSequence)

	p.refused(AcksLeader, idem(pidQ, 0, 3, "q3"), kafka.ErrUnknownProducerID)
	p.refused(AcksAll, idem(pidQ, 0, 1, "q1"), kafka.ErrUnknownProducerID)
	p.ok(idem(pidQ, 0, 0, "q0"), 3)

	lenient := leaderOf(t, leaderOnlyConfig(1), []int32{1})
	lp := &producer{t: t, r: lenient}
	lp.ok(idem(pidQ, 0, 3, "q3"), 0)
	lp.ok(idem(pidQ, 0, 4, "q4"), 1)
	lp.refused(AcksLeader, idem(pidQ, 0, 6, "q6"), kafka.ErrOutOfOrderSequence)
}

// "next batch = last sequence + 1"; "A gap is refused with
// OUT_OF_ORDER_SEQUENCE_NUMBER". A batch overlapping the last one without
// being a retry of it (same base sequence, another length, or a base inside
// it) is out of order too.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentSequencesFollowOneAnother(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1})
	p := &producer{t: t, r: r}
	p.ok(idem(pidP, 0, 0, "a", "b"), 0) // sequences 0-1
	p.refused(AcksLeader, idem(pidP, 0, 3, "d"), kafka.ErrOutOfOrderSequence)
	p.refused(AcksAll, idem(pidP, 0, 100, "z"), kafka.ErrOutOfOrderSequence)
	p.refused(AcksLeader, idem(pidP, 0, 1, "b"), kafka.ErrOutOfOrderSequence)
	p.refused(AcksLeader, idem(pidP, 0, 0, "a"), kafka.ErrOutOfOrderSequence)
	p.refused(AcksLeader, idem(pidP, 0, 0, "a", "b", "c"), kafka.ErrOutOfOrderSequence)
	p.ok(idem(pidP, 0, 2, "c"), 2)
	p.ok(idem(pidP, 0, 3, "d", "e", "f"), 3)
	p.ok(idem(pidP, 0, 6, "g"), 6)

	// Sequences are per producer: another PID keeps its own.
	p.ok(idem(pidQ, 0, 0, "q0"), 7)
	p.refused(AcksLeader, idem(pidQ, 0, 7, "q7"), kafka.ErrOutOfOrderSequence)
	p.ok(idem(pidQ, 0, 1, "q1"), 8)

	// Plain batches interleave freely.
	p.ok(batch("plain"), 9)
	p.ok(idem(pidP, 0, 7, "h"), 10)
	assert.Equal(t, []string{"a", "b", "c", "d", "e", "f", "g", "q0", "q1", "plain", "h"}, values(r.Log()))
}

// "The leader keeps the last 5 batches' sequence ranges and offsets per
// PID. A retry of one of them (same epoch, same range) is answered with the
// original offset and not appended again." A retry of an older batch has
// left the window: it is out of order.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentRetryOfTheLastFiveBatchesIsADuplicate(t *testing.T) {
	require.Equal(t, 5, DedupWindow)
	for _, acks := range []Acks{AcksNone, AcksLeader, AcksAll} {
		t.Run(fmt.Sprintf("acks=%d", acks), func(t *testing.T) {
			r := leaderOf(t, testConfig(1), []int32{1}) // HW follows LEO at once
			p := &producer{t: t, r: r}
			// Six batches of P, of one or two records, with Q's in between,
			// so offsets and sequences differ.
			var sent []record.Batch
			var offsets []int64
			seq := int32(0)
			for i := range 6 {
				vals := []string{fmt.Sprintf("p%d", i)}
				if i%2 == 1 {
					vals = append(vals, fmt.Sprintf("p%d'", i))
				}
				b := idem(pidP, 0, seq, vals...)
				seq += int32(len(vals))
				offsets = append(offsets, r.LEO())
				p.ok(b, r.LEO())
				sent = append(sent, b)
				p.ok(idem(pidQ, 0, int32(i), fmt.Sprintf("q%d", i)), r.LEO())
			}
			drain(r)
			logBefore := values(r.Log())

			for i := 5; i >= 1; i-- {
				res := p.dup(acks, sent[i], offsets[i])
				assert.False(t, res.Parked, "batch %d is committed: answered at once", i)
			}
			p.refused(acks, sent[0], kafka.ErrOutOfOrderSequence)
			assert.Equal(t, logBefore, values(r.Log()))

			// The window still moves on with the next batch.
			p.ok(idem(pidP, 0, seq, "p6"), r.LEO())
			p.refused(acks, sent[1], kafka.ErrOutOfOrderSequence)
			p.dup(acks, sent[2], offsets[2])
		})
	}
}

// For acks=all, a duplicate is answered "once every replica in the ISR has
// the record": a retry of a batch HW has not passed yet parks until HW
// passes the original's last offset, and is completed with the original
// offset. acks=1 is answered at once.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentDuplicateOfUncommittedBatchWaitsForHW(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2})
	p := &producer{t: t, r: r}
	p.ok(batch("x"), 0)
	orig := idem(pidP, 0, 0, "a", "b") // offsets 1-2
	res := p.send(AcksAll, orig)
	require.NoError(t, res.Err)
	require.Equal(t, ProduceResult{BaseOffset: 1, Parked: true}, res)
	origID := p.id
	drain(r)

	retry := p.dup(AcksAll, orig, 1)
	assert.True(t, retry.Parked, "HW 0 has not passed the original")
	retryID := p.id
	assert.False(t, p.dup(AcksLeader, orig, 1).Parked, "acks=1 does not wait for HW")

	fetchAt(r, 2, 2, 10) // HW 2: inside the batch
	require.Equal(t, int64(2), r.HW())
	assert.Empty(t, completions(drain(r)), "HW has not passed the batch's last offset")
	assert.True(t, p.dup(AcksAll, orig, 1).Parked, "HW 2 has not passed the original's last offset")
	inside := p.id

	fetchAt(r, 2, 3, 20)
	require.Equal(t, int64(3), r.HW())
	assert.ElementsMatch(t, []Completion{{ID: origID, BaseOffset: 1}, {ID: retryID, BaseOffset: 1}, {ID: inside, BaseOffset: 1}},
		completions(drain(r)))

	late := p.dup(AcksAll, orig, 1)
	assert.False(t, late.Parked, "committed: answered at once")
	assert.Equal(t, []string{"x", "a", "b"}, values(r.Log()))
}

// A duplicate parked for acks=all is failed like any parked produce when
// the leader loses leadership: its outcome is unknown to the producer.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentParkedDuplicateFailsOnLeaderChange(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1, 2})
	p := &producer{t: t, r: r}
	require.True(t, p.send(AcksAll, idem(pidP, 0, 0, "a")).Parked)
	require.True(t, p.dup(AcksAll, idem(pidP, 0, 0, "a"), 0).Parked)
	r.UpdateState(kafka.PartitionState{Leader: 2, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 1)
	assert.Equal(t, []Completion{{ID: 1, BaseOffset: 0, Err: kafka.ErrLeaderChanged}, {ID: 2, BaseOffset: 0, Err: kafka.ErrLeaderChanged}},
		completions(drain(r)))
}

// "an older epoch with INVALID_PRODUCER_EPOCH; a new epoch must start at
// sequence 0." A new epoch is a new sequence space: its batch 0 is not a
// retry of the old epoch's batch 0, and retries from the old epoch are
// fenced, not deduplicated.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentProducerEpochs(t *testing.T) {
	r := leaderOf(t, testConfig(1), []int32{1})
	p := &producer{t: t, r: r}
	p.ok(idem(pidP, 1, 0, "a"), 0)
	p.ok(idem(pidP, 1, 1, "b"), 1)

	p.refused(AcksLeader, idem(pidP, 0, 2, "c"), kafka.ErrInvalidProducerEpoch)
	p.refused(AcksLeader, idem(pidP, 0, 0, "a"), kafka.ErrInvalidProducerEpoch)
	p.refused(AcksLeader, idem(pidP, 2, 2, "c"), kafka.ErrOutOfOrderSequence)
	p.refused(AcksAll, idem(pidP, 2, 1, "c"), kafka.ErrOutOfOrderSequence)

	p.ok(idem(pidP, 2, 0, "a2"), 2)
	p.refused(AcksLeader, idem(pidP, 1, 1, "b"), kafka.ErrInvalidProducerEpoch)
	p.refused(AcksLeader, idem(pidP, 1, 2, "c"), kafka.ErrInvalidProducerEpoch)
	p.dup(AcksLeader, idem(pidP, 2, 0, "a2"), 2)
	p.ok(idem(pidP, 2, 1, "b2"), 3)
	assert.Equal(t, []string{"a", "b", "a2", "b2"}, values(r.Log()))
}

// produceIdem sends an idempotent batch through the harness, as
// cluster.produce does for plain ones.
func produceIdem(c *cluster, id int32, acks Acks, b record.Batch) (uint64, ProduceResult) {
	c.t.Helper()
	c.nextProduce++
	n := c.nodes[id]
	require.NotNil(c.t, n.r, "broker %d is down", id)
	res := produceAt(n.r, c.nextProduce, ProduceRequest{Acks: acks, Batch: b.Clone()}, c.now)
	c.answeredNow[c.nextProduce] = !res.Parked
	c.apply(n)
	return c.nextProduce, res
}

// "Followers rebuild producer state while they replicate, so a new leader
// deduplicates as the old one did." With ProducerStateLeaderOnly the new
// leader knows nothing of the producer and appends the retry again: the
// "dedup across leader change" bug of spec/SEMANTICS.md's Known bugs.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentNewLeaderDeduplicates(t *testing.T) {
	for _, variant := range []ProducerState{ProducerStateReplicated, ProducerStateLeaderOnly} {
		t.Run(variant.String(), func(t *testing.T) {
			c := newCluster(t, func(id int32) Config {
				cfg := testConfig(id)
				cfg.ProducerState = variant
				return cfg
			}, 1, 2, 3)
			c.elect(1, nil)
			a := idem(pidP, 0, 0, "a")
			bc := idem(pidP, 0, 1, "b", "c")
			idA, _ := produceIdem(c, 1, AcksAll, a)
			idBC, _ := produceIdem(c, 1, AcksAll, bc)
			c.deliver(anyMsg)
			require.Equal(t, Completion{ID: idA, BaseOffset: 0}, c.completions[idA])
			require.Equal(t, Completion{ID: idBC, BaseOffset: 1}, c.completions[idBC])
			follower := c.replica(2).ProducerSnapshot()
			if variant == ProducerStateReplicated {
				assert.Equal(t, c.replica(1).ProducerSnapshot(), follower, "the follower rebuilt the leader's state")
			} else {
				assert.Empty(t, follower.Producers, "a follower learns nothing with leader-only state")
			}

			// The answer to bc was lost; the producer retries on the new leader.
			c.elect(2, nil)
			id, res := produceIdem(c, 2, AcksAll, bc)
			if variant == ProducerStateLeaderOnly {
				require.NoError(t, res.Err)
				assert.False(t, res.Duplicate)
				assert.Equal(t, []string{"a", "b", "c", "b", "c"}, values(c.replica(2).Log()),
					"leader-only state appends the retry again")
				return
			}
			require.NoError(t, res.Err)
			assert.True(t, res.Duplicate)
			assert.Equal(t, int64(1), res.BaseOffset)
			if res.Parked {
				// The new leader's HW can be behind the old one's.
				c.deliver(anyMsg)
				require.Contains(t, c.completions, id)
				assert.Equal(t, Completion{ID: id, BaseOffset: 1}, c.completions[id])
			} else {
				assert.GreaterOrEqual(t, c.replica(2).HW(), bc.LastOffset()+2, "answered at once, so committed")
			}
			_, res = produceIdem(c, 2, AcksAll, a)
			assert.True(t, res.Duplicate)
			assert.Equal(t, int64(0), res.BaseOffset)
			_, res = produceIdem(c, 2, AcksAll, idem(pidP, 0, 3, "d"))
			require.NoError(t, res.Err)
			assert.False(t, res.Duplicate, "the next sequence after the old leader's last")
			c.deliver(anyMsg)
			for _, id := range c.ids {
				assert.Equal(t, []string{"a", "b", "c", "d"}, values(c.replica(id).Log()), "broker %d", id)
			}
		})
	}
}

// A truncation removes what the producer state knows above the truncation
// point: a batch truncated away is no longer in the log, so its retry must be
// appended again rather than answered with an offset that now holds nothing
// (or another record). What stays below the point is still deduplicated:
// "Followers rebuild producer state while they replicate", and a follower's
// log loses a suffix when it truncates (Replication, "Follower restart").
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentTruncationForgetsBatchesAboveThePoint(t *testing.T) {
	for _, mk := range []func(int32) Config{testConfig, leaderOnlyConfig} {
		cfg := mk(1)
		cfg.Truncation = TruncateToHW
		t.Run(cfg.ProducerState.String(), func(t *testing.T) {
			r := leaderOf(t, cfg, []int32{1, 2})
			p := &producer{t: t, r: r}
			p.ok(idem(pidP, 0, 0, "a"), 0)
			p.ok(idem(pidQ, 0, 0, "q"), 1)
			p.ok(idem(pidP, 0, 1, "b"), 2)
			p.ok(idem(pidP, 0, 2, "c"), 3)
			fetchAt(r, 2, 2, 10)
			require.Equal(t, int64(2), r.HW())

			// Broker 2 leads epoch 2; with truncation=hw, 1 drops b and c.
			r.UpdateState(kafka.PartitionState{Leader: 2, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 20)
			rd := drain(r)
			require.Equal(t, int64(2), rd.Truncate)
			require.Equal(t, []string{"a", "q"}, values(r.Log()))
			if cfg.ProducerState == ProducerStateReplicated {
				assert.Equal(t, rebuilt(t, cfg, r.Log()), r.ProducerSnapshot(), "state is the log's")
			}

			// 1 leads again, and the producer retries b and c.
			r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 3}, 30)
			drain(r)
			p.dup(AcksLeader, idem(pidP, 0, 0, "a"), 0)
			p.dup(AcksLeader, idem(pidQ, 0, 0, "q"), 1)
			p.refused(AcksLeader, idem(pidP, 0, 2, "c"), kafka.ErrOutOfOrderSequence)
			p.ok(idem(pidP, 0, 1, "b"), 2)
			p.ok(idem(pidP, 0, 2, "c"), 3)
			assert.Equal(t, []string{"a", "q", "b", "c"}, values(r.Log()))
		})
	}
}

// Replicated producer state after a truncation is exactly the state a
// replay of the remaining log gives: a batch that had left the dedup window
// comes back into it when the newer ones are truncated, and a producer whose
// batches are all truncated is forgotten.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentTruncationRebuildsTheWindow(t *testing.T) {
	cfg := testConfig(1)
	cfg.Truncation = TruncateToHW
	r := leaderOf(t, cfg, []int32{1, 2})
	p := &producer{t: t, r: r}
	for i := range 7 {
		p.ok(idem(pidP, 0, int32(i), fmt.Sprintf("p%d", i)), int64(i))
	}
	p.ok(idem(pidQ, 0, 0, "q0"), 7)
	p.refused(AcksLeader, idem(pidP, 0, 0, "p0"), kafka.ErrOutOfOrderSequence) // out of the window
	fetchAt(r, 2, 5, 10)
	r.UpdateState(kafka.PartitionState{Leader: 2, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 2}, 20)
	require.Equal(t, int64(5), r.LEO())
	assert.Equal(t, rebuilt(t, cfg, r.Log()), r.ProducerSnapshot())

	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1, 2, 3}, PartitionEpoch: 3}, 30)
	drain(r)
	p.dup(AcksLeader, idem(pidP, 0, 0, "p0"), 0)
	p.refused(AcksLeader, idem(pidQ, 0, 1, "q1"), kafka.ErrUnknownProducerID)
	p.ok(idem(pidQ, 0, 0, "q0"), 5)
}

// rebuilt is the producer state a replay of the whole log gives.
func rebuilt(t *testing.T, cfg Config, log []record.Batch) ProducerSnapshot {
	t.Helper()
	r, err := New(cfg, testTP, slices.Clone(log), 0, storage.EpochCache{}, nil)
	require.NoError(t, err)
	return r.ProducerSnapshot()
}

// mixedLog is a log of several producers: a window overflow, an epoch bump,
// plain batches and multi-record batches, as a leader wrote it.
func mixedLog(t *testing.T) []record.Batch {
	t.Helper()
	r := leaderOf(t, testConfig(1), []int32{1})
	p := &producer{t: t, r: r}
	seqP, seqQ := int32(0), int32(0)
	for i := range 9 {
		if i%3 == 0 {
			p.ok(batch(fmt.Sprintf("plain%d", i)), r.LEO())
		}
		p.ok(idem(pidP, 0, seqP, fmt.Sprintf("p%d", i), fmt.Sprintf("p%d'", i)), r.LEO())
		seqP += 2
		if i == 5 {
			seqQ = 0 // Q restarts with a new epoch
		}
		epochQ := int16(3)
		if i >= 5 {
			epochQ = 4
		}
		p.ok(idem(pidQ, epochQ, seqQ, fmt.Sprintf("q%d", i)), r.LEO())
		seqQ++
	}
	p.ok(idem(3, 0, 0, "r0"), r.LEO())
	return slices.Clone(r.Log())
}

// "after restart it is rebuilt from a snapshot plus log replay": from a
// snapshot taken at any batch boundary, restoring and replaying the rest of
// the log gives exactly the state of a replay of the whole log (and the
// snapshot goes through its text encoding, as storage keeps it).
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentRestoreFromSnapshotEqualsFullReplay(t *testing.T) {
	cfg := testConfig(1)
	log := mixedLog(t)
	full := rebuilt(t, cfg, log)
	require.Len(t, full.Producers, 3)
	for k := 0; k <= len(log); k++ {
		snap := rebuilt(t, cfg, log[:k])
		if k > 0 {
			require.Equal(t, log[k-1].NextOffset(), snap.Offset)
		}
		parsed, err := ParseProducerSnapshot(snap.Lines())
		require.NoError(t, err)
		r, err := New(cfg, testTP, slices.Clone(log), 0, storage.EpochCache{}, parsed)
		require.NoError(t, err)
		assert.Equal(t, full, r.ProducerSnapshot(), "snapshot at batch %d (offset %d)", k, snap.Offset)
	}
}

// A restored replica deduplicates a retry of any of a producer's last five
// batches from before the restart, whether the batch was in the snapshot or
// in the replayed tail, and the sixth-newest is out of the window as it was.
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentRestoredReplicaDeduplicates(t *testing.T) {
	cfg := testConfig(1)
	log := mixedLog(t)
	var ofP []record.Batch
	for _, b := range log {
		if b.ProducerID == pidP {
			ofP = append(ofP, b)
		}
	}
	require.Greater(t, len(ofP), DedupWindow)
	recent := ofP[len(ofP)-DedupWindow:]
	// The snapshot ends after the oldest of the five: one is restored from
	// it, the other four are replayed.
	k := slices.IndexFunc(log, func(b record.Batch) bool { return b.BaseOffset == recent[0].BaseOffset }) + 1
	snap := rebuilt(t, cfg, log[:k])
	r, err := New(cfg, testTP, slices.Clone(log), 0, storage.EpochCache{}, &snap)
	require.NoError(t, err)
	r.UpdateState(kafka.PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, Replicas: []int32{1}, PartitionEpoch: 1}, 0)
	drain(r)
	p := &producer{t: t, r: r}
	retry := func(b record.Batch) record.Batch {
		return idem(b.ProducerID, b.ProducerEpoch, b.BaseSequence, values([]record.Batch{b})...)
	}
	for _, b := range recent {
		p.dup(AcksAll, retry(b), b.BaseOffset)
	}
	p.refused(AcksAll, retry(ofP[len(ofP)-DedupWindow-1]), kafka.ErrOutOfOrderSequence)
	last := recent[len(recent)-1]
	p.ok(idem(pidP, 0, last.LastSequence()+1, "next"), r.LEO())
}

// "A snapshot past the log's end (a power loss took the tail it describes)
// is useless and the whole log is replayed instead." A snapshot at LEO is
// taken as it is: nothing is left to replay ("rebuilt from a snapshot plus
// log replay").
// Reference: spec/SEMANTICS.md, Producer.
func TestIdempotentSnapshotPastLEOIsIgnored(t *testing.T) {
	cfg := testConfig(1)
	log := mixedLog(t)
	leo := log[len(log)-1].NextOffset()
	bogus := func(offset int64) *ProducerSnapshot {
		return &ProducerSnapshot{Offset: offset, Producers: []ProducerSnapshotEntry{
			{ProducerID: 99, Epoch: 1, Batches: []SnapshotBatch{{FirstSeq: 0, LastSeq: 0, Base: leo, Last: leo}}},
		}}
	}
	r, err := New(cfg, testTP, slices.Clone(log), 0, storage.EpochCache{}, bogus(leo+1))
	require.NoError(t, err)
	assert.Equal(t, rebuilt(t, cfg, log), r.ProducerSnapshot(), "a snapshot past LEO was used")

	r, err = New(cfg, testTP, slices.Clone(log), 0, storage.EpochCache{}, bogus(leo))
	require.NoError(t, err)
	got := r.ProducerSnapshot()
	assert.Equal(t, *bogus(leo), got, "a snapshot at LEO is the state, with nothing to replay")

	r, err = New(cfg, testTP, nil, 0, storage.EpochCache{}, bogus(1))
	require.NoError(t, err)
	assert.Empty(t, r.ProducerSnapshot().Producers, "an empty log: the snapshot is past LEO 0")
}

// Lines and ParseProducerSnapshot are inverses, for every state a replica
// can hold: no producers, a producer with epoch and sequences at their
// limits, many producers. Storage keeps these lines, and a restart is
// "rebuilt from a snapshot plus log replay".
// Reference: spec/SEMANTICS.md, Producer.
func TestProducerSnapshotLinesRoundTrip(t *testing.T) {
	snaps := []ProducerSnapshot{
		{Offset: 0},
		{Offset: 17},
		{Offset: 1 << 40, Producers: []ProducerSnapshotEntry{
			{ProducerID: 1<<62 + 5, Epoch: 32767, Batches: []SnapshotBatch{
				{FirstSeq: 2147483640, LastSeq: 2147483647, Base: 1<<40 - 8, Last: 1<<40 - 1},
			}},
		}},
		rebuilt(t, testConfig(1), mixedLog(t)),
	}
	for _, s := range snaps {
		lines := s.Lines()
		require.Equal(t, fmt.Sprintf("offset %d", s.Offset), lines[0])
		require.Len(t, lines, 1+len(s.Producers))
		got, err := ParseProducerSnapshot(lines)
		require.NoError(t, err)
		assert.Equal(t, s, *got)
	}
	assert.Equal(t, []string{"offset 9", "producer 5 2 0:1:3:4 2:2:7:7"}, ProducerSnapshot{Offset: 9, Producers: []ProducerSnapshotEntry{
		{ProducerID: 5, Epoch: 2, Batches: []SnapshotBatch{{0, 1, 3, 4}, {2, 2, 7, 7}}},
	}}.Lines(), "the format is readable")
}

// A snapshot that does not parse is an error, never a silently wrong
// producer state (storage.ErrCorruptCheckpoint's rule: "a broker must not
// guess").
// Reference: spec/SEMANTICS.md, Producer.
func TestParseProducerSnapshotRefusesMalformedInput(t *testing.T) {
	cases := map[string][]string{
		"no lines":            nil,
		"empty first line":    {""},
		"no offset":           {"producer 1 0 0:0:0:0"},
		"offset not a number": {"offset x"},
		"offset missing":      {"offset"},
		"not a producer line": {"offset 1", "consumer 1 0"},
		"producer too short":  {"offset 1", "producer 1"},
		"pid not a number":    {"offset 1", "producer x 0 0:0:0:0"},
		"epoch not a number":  {"offset 1", "producer 1 y 0:0:0:0"},
		"epoch overflow":      {"offset 1", "producer 1 40000 0:0:0:0"},
		"batch too short":     {"offset 1", "producer 1 0 0:0:0"},
		"batch not numbers":   {"offset 1", "producer 1 0 a:b:c:d"},
		"sequence overflow":   {"offset 9", "producer 1 0 0:3000000000:0:0"},
		"empty line":          {"offset 1", ""},
	}
	for name, lines := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := ParseProducerSnapshot(lines)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "producer snapshot")
			assert.Nil(t, s)
		})
	}
}

// A snapshot line with trailing text, or a first line with more after the
// offset, is not what Lines writes and should be refused like any other
// malformed line. ParseProducerSnapshot scans with fmt.Sscanf, which stops
// at the last verb and ignores what follows, so "offset 5 7" reads as
// offset 5 and "0:0:3:3:9" as a batch. The CRC of the stored file keeps
// disk damage out, so only a writer bug or a hand-edited file gets here;
// still, "a broker must not guess" (storage.ErrCorruptCheckpoint).
// Reference: spec/SEMANTICS.md, Producer.
func TestParseProducerSnapshotRefusesTrailingText(t *testing.T) {
	for _, lines := range [][]string{
		{"offset 5 7"},
		{"offset 5", "producer 1 0 0:0:3:3:9"},
		{"offset 5", "producer 1 0 0:0:3:3x"},
	} {
		_, err := ParseProducerSnapshot(lines)
		assert.Error(t, err, "%q", lines)
	}
}

// The variants are spelled as configs spell them.
func TestParseProducerState(t *testing.T) {
	for _, v := range []ProducerState{ProducerStateReplicated, ProducerStateLeaderOnly} {
		var got ProducerState
		require.NoError(t, got.UnmarshalText([]byte(v.String())))
		assert.Equal(t, v, got)
	}
	assert.Equal(t, "replicated", ProducerState(0).String(), "the zero value is the correct variant")
	var v ProducerState
	require.Error(t, v.UnmarshalText([]byte("leader_only")))
}
