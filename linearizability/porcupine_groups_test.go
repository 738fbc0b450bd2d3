package linearizability

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/spec"
)

// join records member's ok JoinGroup answer: generation gen of group g.
func (b *linHistory) join(client int, member string, gen int32, call, ret int64) *Op {
	return b.add(Op{Client: client, Kind: KindJoin, Group: "g", Member: member, Generation: gen, Call: call, Return: ret, Outcome: OutcomeOK})
}

// assignment records that member of generation gen of group g got t-0.
func (b *linHistory) assignment(client int, member string, gen int32, call, ret int64) *Op {
	return b.add(Op{Client: client, Kind: KindAssignment, Group: "g", Member: member, Generation: gen, Call: call, Return: ret, Outcome: OutcomeOK})
}

// commit records member's commit of offset to t-0 in group g.
func (b *linHistory) commit(client int, member string, gen int32, offset, call, ret int64, outcome Outcome) *Op {
	op := Op{Client: client, Kind: KindCommit, Group: "g", Member: member, Generation: gen, Offset: offset, Call: call, Return: ret, Outcome: outcome}
	if outcome == OutcomeFail {
		op.Error = "ILLEGAL_GENERATION"
	}
	return b.add(op)
}

// offsetFetch records an ok offset-fetch of t-0 in group g that returned
// offset.
func (b *linHistory) offsetFetch(client int, offset, call, ret int64) *Op {
	return b.add(Op{Client: client, Kind: KindOffsetFetch, Group: "g", Offset: offset, Call: call, Return: ret, Outcome: OutcomeOK})
}

func groupVerdict(t *testing.T, b *linHistory) Verdict {
	t.Helper()
	res := b.check(t)
	require.Len(t, res.Partitions, 1)
	require.Equal(t, "g", res.Partitions[0].Group)
	require.Equal(t, res.Verdict, res.Partitions[0].Verdict)
	return res.Verdict
}

// A group's life: commits of the current generation are accepted and seen;
// after a rebalance the old generation's commit is refused and the fetch
// still sees the last accepted one.
// Reference: spec/SEMANTICS.md, Consumer and groups ("OffsetCommit from a stale
// generation is refused with ILLEGAL_GENERATION").
func TestGroupLinearizableRebalance(t *testing.T) {
	var b linHistory
	b.join(0, "m1", 1, 0, 5)
	b.assignment(0, "m1", 1, 6, 8)
	b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
	b.offsetFetch(1, 10, 13, 14)
	b.join(1, "m2", 2, 15, 20)
	b.commit(0, "m1", 1, 20, 21, 22, OutcomeFail)
	b.offsetFetch(1, 10, 23, 24)
	b.commit(1, "m2", 2, 30, 25, 26, OutcomeOK)
	b.offsetFetch(0, 30, 27, 28)
	require.Equal(t, VerdictOK, groupVerdict(t, &b))
}

// A commit of a generation older than one a member had already learnt
// stored (a SyncGroup answer) was accepted: generation fencing failed.
// Reference: spec/SEMANTICS.md, Consumer and groups (ILLEGAL_GENERATION).
func TestGroupIllegalStaleGenerationAccepted(t *testing.T) {
	var b linHistory
	b.join(0, "m1", 1, 0, 5)
	b.assignment(1, "m2", 2, 6, 8)
	b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
	require.Equal(t, VerdictIllegal, groupVerdict(t, &b))

	// The same commit concurrent with the rebalance may have come first.
	b = linHistory{}
	b.join(0, "m1", 1, 0, 5)
	b.assignment(1, "m2", 2, 6, 11)
	b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
	require.Equal(t, VerdictOK, groupVerdict(t, &b))

	// Generation 2 only decided (a JoinGroup answer): its coordinator may
	// have failed over before storing it, bringing generation 1 back, as
	// Kafka's does; the commit is then accepted in it, and a member of 1
	// may be answered 1 again.
	b = linHistory{}
	b.join(0, "m1", 1, 0, 5)
	b.join(1, "m2", 2, 6, 8)
	b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
	b.join(1, "m2", 1, 13, 14)
	require.Equal(t, VerdictOK, groupVerdict(t, &b))
}

// A fetch must see the last commit accepted before it was called, and never
// an offset no commit wrote. Reference: spec/SEMANTICS.md, Consumer and groups
// ("Committed offset = the next offset to read").
func TestGroupIllegalStaleOrInventedOffset(t *testing.T) {
	for _, c := range []struct {
		name    string
		fetched int64
		want    Verdict
	}{
		{"latest", 20, VerdictOK},
		{"stale", 10, VerdictIllegal},
		{"none", -1, VerdictIllegal},
		{"never committed", 15, VerdictIllegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b linHistory
			b.join(0, "m1", 1, 0, 5)
			b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
			b.commit(0, "m1", 1, 20, 13, 14, OutcomeOK)
			b.offsetFetch(1, c.fetched, 15, 16)
			require.Equal(t, c.want, groupVerdict(t, &b))
		})
	}
}

// A fetch concurrent with a commit may see it or not.
func TestGroupFetchConcurrentWithCommit(t *testing.T) {
	for _, fetched := range []int64{-1, 10} {
		var b linHistory
		b.commit(0, "m1", 1, 10, 10, 20, OutcomeOK)
		b.offsetFetch(1, fetched, 12, 14)
		require.Equal(t, VerdictOK, groupVerdict(t, &b), "fetched %d", fetched)
	}
}

// A commit whose outcome the client could not learn may or may not have
// taken effect, at any time after its call; but at most once.
// Reference: FORMAT.md, outcome "unknown".
func TestGroupUnknownCommitEitherWay(t *testing.T) {
	for _, c := range []struct {
		name    string
		fetched []int64
		want    Verdict
	}{
		{"never took effect", []int64{10, 10}, VerdictOK},
		{"took effect", []int64{20, 20}, VerdictOK},
		{"took effect late", []int64{10, 20}, VerdictOK},
		{"took effect, then undone", []int64{20, 10}, VerdictIllegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b linHistory
			b.join(0, "m1", 1, 0, 5)
			b.commit(0, "m1", 1, 10, 10, 12, OutcomeOK)
			b.commit(0, "m1", 1, 20, 13, -1, OutcomeUnknown)
			b.offsetFetch(1, c.fetched[0], 15, 16)
			b.offsetFetch(1, c.fetched[1], 17, 18)
			require.Equal(t, c.want, groupVerdict(t, &b))
		})
	}
	// An unknown commit may have taken effect just before a rebalance and be
	// seen after it; but not after the (stored) rebalance it was called
	// after.
	for _, c := range []struct {
		name         string
		commitCalled int64
		want         Verdict
	}{
		{"called before the rebalance", 6, VerdictOK},
		{"called after the rebalance", 12, VerdictIllegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b linHistory
			b.join(0, "m1", 1, 0, 5)
			b.commit(0, "m1", 1, 20, c.commitCalled, -1, OutcomeUnknown)
			b.assignment(1, "m2", 2, 8, 10)
			b.offsetFetch(1, 20, 15, 16)
			require.Equal(t, c.want, groupVerdict(t, &b))
		})
	}
	// An unknown commit of a stale generation never took effect.
	var b linHistory
	b.join(0, "m1", 1, 0, 5)
	b.assignment(1, "m2", 2, 6, 8)
	b.commit(0, "m1", 1, 20, 10, 12, OutcomeUnknown)
	b.offsetFetch(1, 20, 15, 16)
	require.Equal(t, VerdictIllegal, groupVerdict(t, &b))
}

// Group partitions are judged apart from the logs, and apart from each
// other: each gets its own verdict after the logs'.
func TestGroupVerdictsPerPartition(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 2, OutcomeOK, 0)
	b.fetch(1, 3, 4, 0, 1, "a")
	b.join(1, "m1", 1, 0, 1)
	b.commit(1, "m1", 1, 1, 5, 6, OutcomeOK)
	b.offsetFetch(1, 1, 7, 8)
	bad := b.commit(1, "m1", 1, 5, 5, 6, OutcomeOK)
	bad.Partition = 1
	b.offsetFetch(1, 4, 7, 8).Partition = 1
	res := b.check(t)
	require.Equal(t, VerdictIllegal, res.Verdict)
	require.Equal(t, []PartitionVerdict{
		{TP: kafka.TopicPartition{Topic: "t", Partition: 0}, Ops: 2, Verdict: VerdictOK},
		{Group: "g", TP: kafka.TopicPartition{Topic: "t", Partition: 0}, Ops: 3, Verdict: VerdictOK},
		{Group: "g", TP: kafka.TopicPartition{Topic: "t", Partition: 1}, Ops: 3, Verdict: VerdictIllegal},
	}, res.Partitions)
}

func TestDescribeGroupOperation(t *testing.T) {
	var b linHistory
	b.join(0, "m1", 1, 0, 1)
	b.commit(0, "m1", 1, 10, 2, 3, OutcomeOK)
	b.add(Op{Client: 1, Kind: KindCommit, Group: "g", Generation: NoGeneration, Offset: 4, Call: 4, Return: 5, Outcome: OutcomeFail})
	b.offsetFetch(1, 10, 6, 7)
	ops, parts := toGroupOperations(b.ops, 0)
	require.Len(t, parts, 1)
	var got []string
	for _, o := range ops {
		got = append(got, describeGroupOperation(o.Input.(*groupCall), o.Output.(*groupReturn)))
	}
	require.Equal(t, []string{
		"group g t-0: join gen 1 as m1",
		"group g t-0: commit 10 gen 1 m1 → ok",
		"group g t-0: commit 4 (simple) → fail",
		"group g t-0: offset-fetch → 10",
	}, got)
}

// Validate holds group operations to FORMAT.md.
func TestValidateGroupOps(t *testing.T) {
	ok := []Op{
		{Kind: KindJoin, Group: "g", Member: "m", Generation: 1, Outcome: OutcomeOK},
		{Kind: KindCommit, Group: "g", Generation: NoGeneration, Offset: 3, Outcome: OutcomeOK},
		{Kind: KindOffsetFetch, Group: "g", Offset: -1, Outcome: OutcomeOK, Broker: 2},
	}
	for i := range ok {
		ok[i].ID = i
	}
	require.NoError(t, Validate(ok))
	for _, bad := range []Op{
		{Kind: KindJoin, Member: "m", Generation: 1, Outcome: OutcomeOK},
		{Kind: KindAssignment, Group: "g", Generation: 1, Outcome: OutcomeOK},
		{Kind: KindJoin, Group: "g", Member: "m", Generation: -1, Outcome: OutcomeOK},
		{Kind: KindCommit, Group: "g", Generation: 1, Offset: 3, Outcome: OutcomeOK},
		{Kind: KindCommit, Group: "g", Member: "m", Generation: NoGeneration, Offset: 3, Outcome: OutcomeOK},
		{Kind: KindCommit, Group: "g", Member: "m", Generation: 1, Offset: -1, Outcome: OutcomeOK},
		{Kind: KindOffsetFetch, Group: "g", Offset: -2, Outcome: OutcomeOK},
		{Kind: KindOffsetFetch, Group: "g", Offset: 1, Outcome: OutcomeOK, Broker: -1},
	} {
		require.Error(t, Validate([]Op{bad}), "%+v", bad)
	}
}

// The picture draws group operations next to the log's, with their states.
func TestWriteVisualizationGroups(t *testing.T) {
	var b linHistory
	b.produce(0, "a", acksAll, 0, 5, OutcomeOK, 0)
	b.join(1, "m1", 1, 0, 1)
	b.commit(1, "m1", 1, 10, 2, 3, OutcomeOK)
	b.offsetFetch(1, 4, 6, 7)
	res := b.check(t)
	require.Equal(t, VerdictIllegal, res.Verdict)
	html := drawn(t, res)
	contains(t, html, "group g t-0: commit 10 gen 1 m1 → ok")
	contains(t, html, "generation 1, committed 10")
	contains(t, html, "op 3, client 1, group g, t-0")
}

// randomGroupHistory is a small history of group g's operations on t-0 and
// t-1, with random times, generations, offsets and outcomes: legal or not
// by chance.
func randomGroupHistory(rng *rand.Rand) []Op {
	outcomes := []Outcome{OutcomeOK, OutcomeOK, OutcomeFail, OutcomeUnknown, OutcomeUnknown}
	var b linHistory
	for range 3 + rng.IntN(7) {
		call := rng.Int64N(30)
		ret := call + rng.Int64N(8)
		client, gen := rng.IntN(3), int32(1+rng.IntN(3))
		member := fmt.Sprint("m", client)
		switch rng.IntN(4) {
		case 0:
			b.join(client, member, gen, call, ret)
		case 1:
			b.assignment(client, member, gen, call, ret).Partition = int32(rng.IntN(2))
		case 2:
			o := outcomes[rng.IntN(len(outcomes))]
			if o == OutcomeUnknown && rng.IntN(2) == 0 {
				ret = -1
			}
			if rng.IntN(6) == 0 {
				b.add(Op{Client: client, Kind: KindCommit, Group: "g", Generation: NoGeneration, Offset: rng.Int64N(3),
					Call: call, Return: ret, Outcome: o})
			} else {
				b.commit(client, member, gen, rng.Int64N(3), call, ret, o).Partition = int32(rng.IntN(2))
			}
		default:
			b.offsetFetch(client, rng.Int64N(4)-1, call, ret).Partition = int32(rng.IntN(2))
		}
	}
	return b.ops
}

// bruteForceGroups decides h's group partitions by trying every order of
// their operations that respects real time, stepping spec/'s functions
// directly: every ok join and assignment goes to every partition of its
// group, and a commit of unknown outcome may take effect at any instant
// after its call (spec.CommitOffset's rule 4).
func bruteForceGroups(h []Op) bool {
	const inf = int64(1) << 62
	type bop struct {
		op        *Op
		call, ret int64
	}
	parts := map[groupKey][]bop{}
	var obs []*Op
	for i := range h {
		op := &h[i]
		ret := op.Return
		switch op.Kind {
		case KindJoin, KindAssignment:
			obs = append(obs, op)
			if op.Kind == KindJoin {
				continue
			}
			if _, ok := parts[groupKey{op.Group, op.TP()}]; !ok {
				parts[groupKey{op.Group, op.TP()}] = nil
			}
			continue
		case KindCommit:
			if op.Outcome == OutcomeUnknown || ret < 0 {
				ret = inf
			}
		}
		parts[groupKey{op.Group, op.TP()}] = append(parts[groupKey{op.Group, op.TP()}], bop{op, op.Call, ret})
	}
	for k, ops := range parts {
		for _, o := range obs {
			if o.Group == k.group {
				ops = append(ops, bop{o, o.Call, o.Return})
			}
		}
		type memo struct {
			mask uint32
			s    spec.GroupOffset
		}
		seen := map[memo]bool{}
		var search func(mask uint32, s spec.GroupOffset) bool
		search = func(mask uint32, s spec.GroupOffset) bool {
			if mask == 0 {
				return true
			}
			if seen[memo{mask, s}] {
				return false
			}
			seen[memo{mask, s}] = true
			minRet := inf + 1
			for i, o := range ops {
				if mask&(1<<i) != 0 {
					minRet = min(minRet, o.ret)
				}
			}
			for i, o := range ops {
				if mask&(1<<i) == 0 || o.call > minRet {
					continue
				}
				rest := mask &^ (1 << i)
				var next []spec.GroupOffset
				switch o.op.Kind {
				case KindJoin, KindAssignment:
					if n, ok := spec.ObserveGeneration(s, o.op.Generation, o.op.Kind == KindAssignment); ok {
						next = append(next, n)
					}
				case KindCommit:
					next = spec.CommitOffset(s, spec.Commit{Generation: o.op.Generation, Member: o.op.Member,
						Offset: o.op.Offset, Outcome: specOutcome(o.op.Outcome)})
				case KindOffsetFetch:
					if spec.FetchOffset(s, o.op.Offset) {
						next = append(next, s)
					}
				}
				for _, n := range next {
					if search(rest, n) {
						return true
					}
				}
			}
			return false
		}
		if !search(1<<len(ops)-1, spec.NewGroupOffset()) {
			return false
		}
	}
	return true
}

// The group model (with toGroupOperations' pending commits and rules 4 and 5)
// agrees with a brute-force search over spec/'s rules on random small
// histories, and rules 4 and 5 change no verdict.
func TestGroupModelMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 0))
	legal := 0
	for seed := range 1500 {
		h := randomGroupHistory(rng)
		require.NoError(t, Validate(h))
		want := bruteForceGroups(h)
		got := CheckLinearizability(h, 10*time.Second).Verdict
		require.Equal(t, want, got == VerdictOK, "seed %d: %+v", seed, h)
		require.Equal(t, checkGroupOps(h, true), checkGroupOps(h, false), "rules 4 and 5, seed %d: %+v", seed, h)
		if want {
			legal++
		}
	}
	require.Greater(t, legal, 60, "too few legal histories to tell")
	require.Less(t, legal, 1400, "too few illegal histories to tell")
}

func checkGroupOps(h []Op, reduce bool) bool {
	ops, parts := groupOperations(h, 0, reduce)
	return porcupine.CheckOperations(groupModel(len(parts)), ops)
}

// A long group history with unknown commits is decided quickly, legal or
// not: unknown commits add few candidate states.
func TestGroupLongHistoryDecided(t *testing.T) {
	h := groupHistory(1, 2000)
	require.NoError(t, Validate(h))
	require.Equal(t, VerdictOK, CheckLinearizability(h, 10*time.Second).Verdict)
	// A fetch near the end sees a commit long overwritten.
	for i := len(h) - 1; ; i-- {
		if h[i].Kind == KindOffsetFetch && h[i].Offset > 100 {
			h[i].Offset = 100
			break
		}
	}
	res := CheckLinearizability(h, 10*time.Second)
	require.Equal(t, VerdictIllegal, res.Verdict)
	require.Less(t, res.Elapsed, 5*time.Second)
}
