package linearizability

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// genConfig shapes a generated history.
type genConfig struct {
	Ops        int // operations before the final reads
	Partitions int // of topic "t"
	Producers  int // clients 0..Producers-1 produce
	Groups     int // consumer groups, each reading every partition once
	Members    int // consumers per group; member p%Members reads partition p
	MaxRecords int // most records one fetch returns
	// Faults adds what a faulty run shows without breaking a rule: failed
	// and unknown produces, acks 0 and 1, and consumers seeking (assign).
	Faults bool
	// Final ends the history with one final read of each partition from 0.
	Final bool
}

// genHistory makes a history that breaks no rule of CheckAnomalies: every
// partition is one append-only log, each operation takes effect at one
// instant between its call and return (in the order generated), and
// operations of different clients overlap in time. Half of the operations
// (before the final reads) are produces, half fetches or assigns.
func genHistory(seed uint64, cfg genConfig) []Op {
	rng := rand.New(rand.NewPCG(seed, 0))
	consumers := cfg.Groups * cfg.Members
	clients := cfg.Producers + consumers
	busyUntil := make([]int64, clients+1)
	// pos[c-Producers][p] is consumer c's next offset in partition p.
	pos := make([][]int64, consumers)
	for i := range pos {
		pos[i] = make([]int64, cfg.Partitions)
	}
	logs := make([][]string, cfg.Partitions)
	sent := make([]int, clients)
	h := make([]Op, 0, cfg.Ops+cfg.Partitions)

	for k := range cfg.Ops {
		at := int64(100 + 10*k) // when the operation takes effect
		op := Op{ID: len(h), Kind: KindProduce, Topic: "t", Outcome: OutcomeOK, Offset: -1,
			Call: at - rng.Int64N(20), Return: at + 1 + rng.Int64N(20)}
		produce := k%2 == 0
		for {
			op.Partition = int32(rng.IntN(cfg.Partitions))
			if produce {
				op.Client = rng.IntN(cfg.Producers)
			} else {
				op.Client = cfg.Producers + rng.IntN(cfg.Groups)*cfg.Members + int(op.Partition)%cfg.Members
			}
			if busyUntil[op.Client] < op.Call {
				break
			}
		}
		busyUntil[op.Client] = op.Return
		p := op.Partition
		if produce {
			sent[op.Client]++
			op.Value = "c" + strconv.Itoa(op.Client) + "-" + strconv.Itoa(sent[op.Client])
			op.Acks = -1
			appended := true
			if cfg.Faults {
				switch r := rng.IntN(100); {
				case r < 5:
					op.Outcome, op.Error, appended = OutcomeFail, "NOT_LEADER_OR_FOLLOWER", false
				case r < 10:
					op.Outcome, op.Error, appended = OutcomeUnknown, "REQUEST_TIMED_OUT", rng.IntN(2) == 0
				case r < 15:
					op.Acks = 1
				case r < 18:
					op.Acks = 0
				}
			}
			if appended {
				if op.Outcome == OutcomeOK && op.Acks != 0 {
					op.Offset = int64(len(logs[p]))
				}
				logs[p] = append(logs[p], op.Value)
			}
			h = append(h, op)
			continue
		}
		cur := &pos[op.Client-cfg.Producers][p]
		if cfg.Faults && rng.IntN(100) < 3 {
			*cur = rng.Int64N(int64(len(logs[p])) + 1)
			op.Kind, op.Offset = KindAssign, *cur
			h = append(h, op)
			continue
		}
		op.Kind, op.Offset, op.HW = KindFetch, *cur, int64(len(logs[p]))
		end := min(*cur+1+rng.Int64N(int64(cfg.MaxRecords)), int64(len(logs[p])))
		for o := *cur; o < end; o++ {
			op.Records = append(op.Records, Record{Offset: o, Value: logs[p][o]})
		}
		*cur = max(*cur, end)
		h = append(h, op)
	}
	if cfg.Final {
		at := int64(100 + 10*cfg.Ops + 100)
		for p := range cfg.Partitions {
			op := Op{ID: len(h), Client: clients, Kind: KindFetch, Topic: "t", Partition: int32(p),
				Call: at, Return: at + 5, Outcome: OutcomeOK, HW: int64(len(logs[p])), Final: true}
			for o, v := range logs[p] {
				op.Records = append(op.Records, Record{Offset: int64(o), Value: v})
			}
			h = append(h, op)
			at += 10
		}
	}
	return h
}

// BenchmarkCheckAnomalies judges a clean 1,000,000-operation history over
// 100 partitions: half produces, half fetches, then a final read of each
// partition.
func BenchmarkCheckAnomalies(b *testing.B) {
	const partitions = 100
	h := genHistory(1, genConfig{
		Ops: 1_000_000 - partitions, Partitions: partitions,
		Producers: 10, Groups: 2, Members: 10, MaxRecords: 10, Final: true,
	})
	records := 0
	for i := range h {
		records += len(h[i].Records)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := CheckAnomalies(h); len(got) != 0 {
			b.Fatalf("clean history has %d anomalies, first: %v", len(got), got[0])
		}
	}
	b.ReportMetric(float64(len(h))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(records), "records")
}

// genGroupOps appends to h, after everything in it, rounds of a consumer
// group's life that break no group rule: every member of each of cfg.Groups
// groups joins the next generation, each partition is assigned to one
// member, which commits a higher offset, and an offset-fetch reads it back.
// Its members are the consumers of genHistory, so their joins are looked up
// by every poll comparison.
func genGroupOps(h []Op, cfg genConfig, rounds int) []Op {
	at := int64(0)
	for i := range h {
		at = max(at, h[i].Call, h[i].Return)
	}
	add := func(op Op) {
		at += 2
		op.ID, op.Call, op.Return, op.Outcome = len(h), at, at+1, OutcomeOK
		h = append(h, op)
	}
	for r := range rounds {
		gen := int32(r + 1)
		for g := range cfg.Groups {
			group := "g" + strconv.Itoa(g)
			client := func(p int) int { return cfg.Producers + g*cfg.Members + p%cfg.Members }
			for m := range cfg.Members {
				add(Op{Client: client(m), Kind: KindJoin, Group: group, Generation: gen, Member: "m" + strconv.Itoa(m)})
			}
			for p := range cfg.Partitions {
				member := "m" + strconv.Itoa(p%cfg.Members)
				tp := Op{Topic: "t", Partition: int32(p), Group: group}
				a := tp
				a.Client, a.Kind, a.Generation, a.Member = client(p), KindAssignment, gen, member
				add(a)
				c := tp
				c.Client, c.Kind, c.Generation, c.Member, c.Offset = client(p), KindCommit, gen, member, int64(r)
				add(c)
				f := tp
				f.Client, f.Kind, f.Offset = client(p), KindOffsetFetch, int64(r)
				add(f)
			}
		}
	}
	return h
}

// BenchmarkCheckAnomaliesGroups is BenchmarkCheckAnomalies' history with
// 100,000 group operations more: what the group rules add.
func BenchmarkCheckAnomaliesGroups(b *testing.B) {
	const partitions = 100
	cfg := genConfig{
		Ops: 1_000_000 - partitions, Partitions: partitions,
		Producers: 10, Groups: 2, Members: 10, MaxRecords: 10, Final: true,
	}
	h := genGroupOps(genHistory(1, cfg), cfg, 165)
	require.NoError(b, Validate(h))
	b.ReportAllocs()
	for b.Loop() {
		if got := CheckAnomalies(h); len(got) != 0 {
			b.Fatalf("clean history has %d anomalies, first: %v", len(got), got[0])
		}
	}
	b.ReportMetric(float64(len(h))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
