package partition

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faults selects what a random schedule may do.
type faults struct {
	reorder bool     // deliver messages in random order
	drop    []string // kinds of message that may be lost
	crash   bool     // crash and restart brokers (no power loss)
	// syncController makes the controller answer ISR changes at once; off,
	// its answers and metadata travel the network like any message (see
	// bugs_test.go for what that finds).
	syncController bool
	truncation     Truncation
}

// TestRandomSchedules runs seeded random schedules — produces, deliveries
// in any order, lost fetches and epoch queries, ticks, crashes, restarts and
// clean elections by a controller that only elects ISR members and answers
// ISR changes at once — on three replicas with
// truncation=epoch and min.insync.replicas=2, and checks after every step:
//   - committed records (below a leader's HW) never change and stay on
//     every later leader (LeaderCompleteness, "true HW never decreases");
//   - below the leader's HW every member of the controller's ISR holds the
//     leader's records (StrongIsr);
//   - two live replicas agree below the smaller of their HWs (LogMatching);
//   - every acks=all write acknowledged without error is committed;
//   - the replica invariants the harness checks on every Ready.
//
// Reference: spec/SEMANTICS.md, Replication ("Protocol invariants").
func TestRandomSchedules(t *testing.T) { runSchedules(t, 300, 30) }

// runSchedules runs seeds random schedules (short under -short) with
// reordering, lost fetches and epoch queries, and crashes.
func runSchedules(t *testing.T, seeds, short uint64) {
	f := faults{reorder: true, drop: []string{"fetch", "fetch-resp", "epoch-end", "epoch-end-resp"}, crash: true, syncController: true}
	if testing.Short() {
		seeds = short
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runRandom(t, seed, 400, f)
		})
	}
}

// The same schedules with the replicas built on their stored logs, as a
// broker builds them: they read their batches from storage and hold only
// what they appended since their last Ready.
func TestRandomSchedulesOnLog(t *testing.T) {
	onLog = true
	defer func() { onLog = false }()
	runSchedules(t, 100, 20)
}

// The checks above can fail: with truncation=hw, which KIP-101 shows loses
// committed records, the same schedules break them.
// Reference: KIP-101.
func TestRandomSchedulesCatchTruncationToHW(t *testing.T) {
	f := faults{reorder: true, drop: []string{"fetch", "fetch-resp", "epoch-end", "epoch-end-resp"}, crash: true,
		syncController: true, truncation: TruncateToHW}
	failed := 0
	for seed := uint64(1); seed <= 50; seed++ {
		rec := &recorder{TB: t}
		func() {
			defer func() {
				if p := recover(); p != nil && p != errStopped {
					panic(p)
				}
			}()
			runRandom(rec, seed, 400, f)
		}()
		if rec.failed {
			failed++
		}
	}
	assert.Greater(t, failed, 5, "truncation=hw loses committed records in some of 50 seeds")
}

// recorder is a testing.TB whose failures stop one run and are counted.
type recorder struct {
	testing.TB
	failed bool
}

var errStopped = errors.New("run stopped by a failed check")

func (r *recorder) Helper()               {}
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Cleanup(func())        {}
func (r *recorder) Failed() bool          { return r.failed }
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(errStopped) }
func (r *recorder) FailNow()              { r.failed = true; panic(errStopped) }
func (r *recorder) Fatal(...any)          { r.failed = true; panic(errStopped) }

// randomRun is one random schedule and the history the checks need.
type randomRun struct {
	*cluster
	rng       *rand.Rand
	f         faults
	committed []string          // value at each committed offset
	acked     map[uint64]string // acks=all produce id -> value
	values    int
}

func runRandom(t testing.TB, seed uint64, steps int, f faults) {
	c := newCluster(t, func(id int32) Config {
		cfg := testConfig(id)
		cfg.MinInsyncReplicas = 2
		cfg.Truncation = f.truncation
		return cfg
	}, 1, 2, 3)
	c.syncController = f.syncController
	run := &randomRun{cluster: c, rng: rand.New(rand.NewPCG(seed, 0x5eed)), f: f, acked: map[uint64]string{}}
	// A failing run shows what led to it.
	var trace []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d, last steps:\n%s", seed, strings.Join(trace[max(0, len(trace)-150):], "\n"))
		}
	})
	c.elect(1, nil)
	for i := range steps {
		op := run.step()
		trace = append(trace, fmt.Sprintf("step %d @%d: %s", i, c.now, op))
		for _, l := range c.takeOutput() {
			trace = append(trace, "    "+l)
		}
		run.check(fmt.Sprintf("seed %d step %d (%s)", seed, i, op))
	}
	// Heal: everyone up, no more faults, time passes; everything acked is
	// then readable from the leader.
	for _, id := range c.ids {
		if c.nodes[id].r == nil {
			c.restart(id)
			run.maybeElect()
		}
	}
	c.run(3000, 50, anyMsg)
	run.check(fmt.Sprintf("seed %d after healing", seed))
	for id, v := range run.acked {
		if comp, ok := c.completions[id]; ok && comp.Err == nil {
			require.Less(t, int(comp.BaseOffset), len(run.committed), "seed %d: acked %s at %d not committed", seed, v, comp.BaseOffset)
			require.Equal(t, v, run.committed[comp.BaseOffset], "seed %d: acked write lost", seed)
		}
	}
}

func (run *randomRun) step() string {
	c, rng := run.cluster, run.rng
	switch p := rng.IntN(100); {
	case p < 15:
		leader := c.ctrl.Leader
		if leader < 0 || c.nodes[leader].r == nil || c.nodes[leader].r.Role() != RoleLeader {
			return "no leader"
		}
		run.values++
		v := fmt.Sprintf("v%d", run.values)
		acks := AcksAll
		if rng.IntN(4) == 0 {
			acks = AcksLeader
		}
		id, res := c.produce(leader, acks, v)
		if acks == AcksAll && res.Err == nil {
			run.acked[id] = v
		}
		return "produce " + v
	case p < 55:
		if len(c.net) == 0 {
			c.releaseHeld(false)
			return "idle"
		}
		i := 0
		if run.f.reorder {
			i = rng.IntN(len(c.net))
		}
		e := c.net[i]
		c.net = slices.Delete(c.net, i, i+1)
		c.deliverOne(e)
		c.releaseHeld(false)
		return "deliver " + formatEnvelope(e)
	case p < 65:
		c.deliver(anyMsg)
		return "deliver all"
	case p < 72:
		if len(c.net) == 0 {
			return "idle"
		}
		i := rng.IntN(len(c.net))
		if !slices.Contains(run.f.drop, kindOf(c.net[i].msg)) {
			return "keep"
		}
		e := c.net[i]
		c.net = slices.Delete(c.net, i, i+1)
		return "drop " + formatEnvelope(e)
	case p < 92:
		c.tick(int64(1 + rng.IntN(300)))
		return "tick"
	case p < 96:
		if !run.f.crash {
			return "no crash"
		}
		id := c.ids[rng.IntN(len(c.ids))]
		if c.nodes[id].r == nil {
			return "already down"
		}
		c.crash(id, -1)
		run.maybeElect()
		return fmt.Sprintf("crash %d", id)
	default:
		for _, id := range c.ids {
			if c.nodes[id].r == nil {
				c.restart(id)
				run.maybeElect()
				return fmt.Sprintf("restart %d", id)
			}
		}
		return "all up"
	}
}

// maybeElect is the controller's clean election: when the leader is down it
// elects the first live ISR member and drops the dead ones from the ISR,
// or leaves the partition offline (keeping the ISR) until one returns.
func (run *randomRun) maybeElect() {
	c := run.cluster
	if l := c.ctrl.Leader; l >= 0 && c.nodes[l].r != nil {
		return
	}
	var live []int32
	for _, id := range c.ctrl.ISR {
		if c.nodes[id].r != nil {
			live = append(live, id)
		}
	}
	if len(live) > 0 {
		c.elect(live[0], live)
		return
	}
	if c.ctrl.Leader >= 0 {
		c.elect(-1, nil)
	}
}

func (run *randomRun) check(where string) {
	c := run.cluster
	t := c.t
	l := c.ctrl.Leader
	if l >= 0 && c.nodes[l].r != nil && c.nodes[l].r.Role() == RoleLeader && c.nodes[l].r.LeaderEpoch() == c.ctrl.LeaderEpoch {
		leader := c.nodes[l].r
		log := values(leader.Log())
		hw := int(leader.HW())
		// LeaderCompleteness: every committed record is on the leader.
		if len(log) < len(run.committed) {
			t.Fatalf("%s: leader %d holds %d records, %d are committed", where, l, len(log), len(run.committed))
		}
		requireSameRecords(t, run.committed, log[:len(run.committed)], "%s: leader %d changed committed records", where, l)
		if hw > len(run.committed) {
			run.committed = append(run.committed, log[len(run.committed):hw]...)
		}
		// StrongIsr: below the leader's HW every member of the
		// controller's ISR holds the leader's records.
		for _, id := range c.ctrl.ISR {
			n := c.nodes[id]
			held := n.disk.log
			if n.r != nil {
				held = n.r.Log()
			}
			vals := values(held)
			if len(vals) < hw {
				t.Fatalf("%s: ISR member %d holds %d records, below leader %d's HW %d", where, id, len(vals), l, hw)
			}
			requireSameRecords(t, log[:hw], vals[:hw], "%s: ISR member %d differs from leader %d below HW", where, id, l)
		}
	}
	// LogMatching: two live replicas agree below the smaller HW.
	for i, a := range c.ids {
		for _, b := range c.ids[i+1:] {
			ra, rb := c.nodes[a].r, c.nodes[b].r
			if ra == nil || rb == nil {
				continue
			}
			hw := min(ra.HW(), rb.HW())
			requireSameRecords(t, values(ra.Log())[:hw], values(rb.Log())[:hw], "%s: %d and %d differ below HW %d", where, a, b, hw)
		}
	}
}

// requireSameRecords compares two runs of record values; nil and empty are
// the same run.
func requireSameRecords(t testing.TB, want, got []string, msgAndArgs ...any) {
	t.Helper()
	if !slices.Equal(want, got) {
		require.Equal(t, want, got, msgAndArgs...)
	}
}
