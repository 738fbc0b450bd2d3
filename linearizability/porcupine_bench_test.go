package linearizability

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// cleanPartitionHistory simulates n operations on one partition that behaves
// as the spec says, so the history is linearizable by construction: each
// operation takes effect at one instant of a global clock, called up to 3
// ticks before and returning up to 3 ticks after, so that neighbours overlap.
// Producers write with acks=all; about 2% of their writes time out (unknown),
// half of those committed anyway. Consumers read forward, up to 5 records a
// fetch; one client asks for the HW, sometimes from a lagging leader.
func cleanPartitionHistory(seed uint64, n int) []Op {
	const producers, consumers, listers = 4, 3, 1
	rng := rand.New(rand.NewPCG(seed, seed))
	clients := producers + consumers + listers
	free := make([]int64, clients) // when each client may call again
	sent := make([]int, producers)
	pos := make([]int64, consumers)
	var log []string
	h := make([]Op, 0, n)
	for t := int64(10); len(h) < n; t++ {
		c := rng.IntN(clients)
		if free[c] > t {
			continue
		}
		call := max(free[c], t-rng.Int64N(4))
		ret := t + rng.Int64N(4)
		free[c] = ret + 1
		op := Op{ID: len(h), Client: c, Topic: "bench", Call: call, Return: ret, Outcome: OutcomeOK}
		switch {
		case c < producers:
			op.Kind, op.Acks, op.Offset = KindProduce, -1, int64(len(log))
			op.Value = fmt.Sprintf("p%d-%d", c, sent[c])
			sent[c]++
			commit := true
			if rng.IntN(50) == 0 {
				op.Outcome, op.Offset, op.Error = OutcomeUnknown, -1, "request timed out"
				op.Return = call + 3000
				free[c] = op.Return + 1
				commit = rng.IntN(2) == 0
			}
			if commit {
				log = append(log, op.Value)
			}
		case c < producers+consumers:
			from := pos[c-producers]
			end := min(int64(len(log)), from+1+rng.Int64N(5))
			op.Kind, op.Offset, op.HW = KindFetch, from, int64(len(log))
			for off := from; off < end; off++ {
				op.Records = append(op.Records, Record{Offset: off, Value: log[off]})
			}
			pos[c-producers] = max(from, end)
		default:
			op.Kind, op.Offset = KindListOffsets, max(0, int64(len(log))-rng.Int64N(3))
		}
		h = append(h, op)
	}
	return h
}

// BenchmarkPorcupineSinglePartition checks a clean 10,000-operation history
// of one partition with no time limit.
func BenchmarkPorcupineSinglePartition(b *testing.B) {
	h := cleanPartitionHistory(1, 10_000)
	if err := Validate(h); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if res := CheckLinearizability(h, 0); res.Verdict != VerdictOK {
			b.Fatalf("verdict %s on a clean history", res.Verdict)
		}
	}
}

// groupHistory is a legal history of one group's commits to one partition:
// n operations by 4 members, overlapping in time, a rebalance every 50,
// one commit in 10 of unknown outcome (half of them took effect), and
// offset-fetches of what the last commit to take effect wrote.
func groupHistory(seed uint64, n int) []Op {
	rng := rand.New(rand.NewPCG(seed, 0))
	var h []Op
	gen, committed := int32(1), int64(-1)
	for k := range n {
		at := int64(10 * k) // when it takes effect
		op := Op{ID: k, Client: k % 4, Topic: "t", Group: "g", Outcome: OutcomeOK,
			Call: at - rng.Int64N(15), Return: at + 1 + rng.Int64N(15)}
		member := "m" + strconv.Itoa(op.Client)
		switch {
		case k%50 == 0:
			gen++
			op.Kind, op.Generation, op.Member = KindJoin, gen, member
		case k%2 == 0:
			op.Kind, op.Generation, op.Member, op.Offset = KindCommit, gen, member, int64(k)
			switch {
			case k%20 == 2:
				op.Outcome, op.Return = OutcomeUnknown, -1
				if rng.IntN(2) == 0 {
					committed = op.Offset
				}
			default:
				committed = op.Offset
			}
		default:
			op.Kind, op.Offset = KindOffsetFetch, committed
		}
		h = append(h, op)
	}
	return h
}

// BenchmarkPorcupineGroup checks a legal 2,000-operation group history.
func BenchmarkPorcupineGroup(b *testing.B) {
	h := groupHistory(1, 2000)
	if err := Validate(h); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if res := CheckLinearizability(h, time.Minute); res.Verdict != VerdictOK {
			b.Fatalf("verdict %s", res.Verdict)
		}
	}
}
