package partition

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs the scenario files in testdata/. Each file starts with
// a comment naming the property it checks; rewrite the expected output with
// `go test ./impl/partition -run TestScenarios -rewrite` and review the diff.
//
// Commands (ids are broker ids; the fake controller is node 0):
//
//	cluster brokers=(1,2,3) [min-isr=N] [truncation=hw|epoch|epoch-kip101|...] [lag-ms=N]
//	        [timeout-ms=N] [advance-hw-below-min-isr]
//	elect leader=N [isr=(..)] [to=(..)]   new leader epoch, published at once
//	publish to=(..)                        hand the current state to brokers
//	produce [on=N] acks=all|1|0 values=(..)
//	deliver [from=N] [to=N] [type=K] [hold=(K,..)] [quiet]  until quiescent
//	drop [from=N] [to=N] [type=K]
//	net                                    list messages in flight
//	tick ms=N                              advance the clock, deliver nothing
//	run ms=N [step=N] [hold=(K,..)]        healthy time: tick and deliver
//	crash id=N [lose-from=OFFSET]          lose-from: power loss of a tail
//	restart id=N
//	isolate id=N | heal id=N
//	read [on=N] offset=N [epoch=N] [max-bytes=N]
//	describe
//	log-matching                           do the running replicas' logs agree?
func TestScenarios(t *testing.T) {
	for _, mode := range []struct {
		name  string
		onLog bool
	}{{"in-memory", false}, {"on-log", true}} {
		t.Run(mode.name, func(t *testing.T) {
			onLog = mode.onLog
			defer func() { onLog = false }()
			runScenarios(t)
		})
	}
}

// runScenarios runs every scenario file; replicas built on their logs
// must give the same output, byte for byte.
func runScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var c *cluster
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "cluster" && c == nil {
				d.Fatalf(t, "cluster first")
			}
			if c != nil {
				c.t = t
			}
			return runCommand(t, &c, d)
		})
	})
}

func runCommand(t *testing.T, cp **cluster, d *datadriven.TestData) string {
	c := *cp
	show := false
	switch d.Cmd {
	case "cluster":
		*cp = newScenarioCluster(t, d)
		return (*cp).describe()
	case "elect":
		var leader int
		d.ScanArgs(t, "leader", &leader)
		var isr, to []int
		d.MaybeScanArgs(t, "isr", &isr)
		d.MaybeScanArgs(t, "to", &to)
		c.elect(int32(leader), int32s(isr), int32s(to)...)
		show = true
	case "publish":
		var to []int
		d.ScanArgs(t, "to", &to)
		for _, id := range to {
			c.publishTo(int32(id))
		}
		show = true
	case "produce":
		id := int32(c.ctrl.Leader)
		if d.HasArg("on") {
			var on int
			d.ScanArgs(t, "on", &on)
			id = int32(on)
		}
		var acks string
		var vals []string
		d.ScanArgs(t, "acks", &acks)
		d.ScanArgs(t, "values", &vals)
		pid, res := c.produce(id, parseAcks(t, acks), vals...)
		line := fmt.Sprintf("produce id=%d: offset=%d %s", pid, res.BaseOffset, errString(res.Err))
		if res.Parked {
			line += " parked"
		}
		c.out = append([]string{line}, c.out...)
	case "deliver":
		c.deliver(scanMatcher(t, d))
		if d.HasArg("quiet") {
			c.takeOutput()
		}
		show = true
	case "drop":
		c.drop(scanMatcher(t, d))
	case "net":
		for _, e := range c.net {
			c.logf("%s", formatEnvelope(e))
		}
		for _, e := range c.held {
			c.logf("held: %s", formatEnvelope(e))
		}
	case "tick":
		var ms int64
		d.ScanArgs(t, "ms", &ms)
		c.tick(ms)
		c.logf("now=%d", c.now)
	case "run":
		var ms int64
		step := int64(50)
		d.ScanArgs(t, "ms", &ms)
		d.MaybeScanArgs(t, "step", &step)
		c.run(ms, step, scanMatcher(t, d))
		// Healthy time is mostly fetches: keep only what changed state.
		c.out = filterLines(c.out, func(l string) bool { return !strings.Contains(l, " fetch") })
		c.logf("now=%d", c.now)
		show = true
	case "crash":
		var id int
		loseFrom := int64(-1)
		d.ScanArgs(t, "id", &id)
		d.MaybeScanArgs(t, "lose-from", &loseFrom)
		c.crash(int32(id), loseFrom)
		show = true
	case "restart":
		var id int
		d.ScanArgs(t, "id", &id)
		c.restart(int32(id))
		show = true
	case "isolate", "heal":
		var id int
		d.ScanArgs(t, "id", &id)
		c.nodes[int32(id)].isolated = d.Cmd == "isolate"
	case "read":
		id := int32(c.ctrl.Leader)
		var on, offset int
		epoch, maxBytes := -1, 1<<20
		if d.MaybeScanArgs(t, "on", &on) {
			id = int32(on)
		}
		d.ScanArgs(t, "offset", &offset)
		d.MaybeScanArgs(t, "epoch", &epoch)
		d.MaybeScanArgs(t, "max-bytes", &maxBytes)
		res := readAt(c.replica(id), int64(offset), maxBytes, int32(epoch))
		c.logf("read: %s hw=%d leo=%d %s", formatLog(res.Batches), res.HW, res.LEO, errString(res.Err))
	case "describe":
		show = true
	case "log-matching":
		c.logf("%s", logMatching(c))
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	var sb strings.Builder
	for _, l := range c.takeOutput() {
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	if show {
		if sb.Len() > 0 {
			sb.WriteString("----\n")
		}
		sb.WriteString(c.describe())
	}
	if sb.Len() == 0 {
		return "ok\n"
	}
	return sb.String()
}

func newScenarioCluster(t *testing.T, d *datadriven.TestData) *cluster {
	var ids []int
	d.ScanArgs(t, "brokers", &ids)
	minISR, lag, timeout := 1, int64(0), int64(0)
	truncation := "epoch"
	d.MaybeScanArgs(t, "min-isr", &minISR)
	d.MaybeScanArgs(t, "lag-ms", &lag)
	d.MaybeScanArgs(t, "timeout-ms", &timeout)
	d.MaybeScanArgs(t, "truncation", &truncation)
	var tr Truncation
	if err := tr.UnmarshalText([]byte(truncation)); err != nil {
		d.Fatalf(t, "%v", err)
	}
	below := d.HasArg("advance-hw-below-min-isr")
	cfg := func(id int32) Config {
		cfg := testConfig(id)
		cfg.MinInsyncReplicas = minISR
		cfg.Truncation = tr
		cfg.AdvanceHWBelowMinISR = below
		if lag > 0 {
			cfg.ReplicaLagTimeMaxMs = lag
		}
		if timeout > 0 {
			cfg.RequestTimeoutMs = timeout
		}
		return cfg
	}
	return newCluster(t, cfg, int32s(ids)...)
}

func scanMatcher(t *testing.T, d *datadriven.TestData) matcher {
	m := anyMsg
	var from, to int
	if d.MaybeScanArgs(t, "from", &from) {
		m.from = int32(from)
	}
	if d.MaybeScanArgs(t, "to", &to) {
		m.to = int32(to)
	}
	d.MaybeScanArgs(t, "type", &m.kind)
	d.MaybeScanArgs(t, "hold", &m.except)
	return m
}

func parseAcks(t *testing.T, s string) Acks {
	switch s {
	case "all", "-1":
		return AcksAll
	case "1":
		return AcksLeader
	case "0":
		return AcksNone
	}
	t.Fatalf("acks %q: want all, 1 or 0", s)
	return 0
}

func int32s(s []int) []int32 {
	if s == nil {
		return nil
	}
	out := make([]int32, len(s))
	for i, v := range s {
		out[i] = int32(v)
	}
	return out
}

func filterLines(lines []string, keep func(string) bool) []string {
	var out []string
	for _, l := range lines {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

// logMatching checks the Log Matching property over the running replicas:
// any two logs hold the same record, of the same leader epoch, at every
// offset both hold. It names the first offset where two logs differ.
func logMatching(c *cluster) string {
	type entry struct {
		value string
		epoch int32
	}
	logs := map[int32][]entry{}
	var up []int32
	for _, id := range c.ids {
		n := c.nodes[id]
		if n.r == nil {
			continue
		}
		up = append(up, id)
		for _, b := range n.r.Log() {
			for _, rec := range b.Records {
				logs[id] = append(logs[id], entry{string(rec.Value), b.LeaderEpoch})
			}
		}
	}
	for i, a := range up {
		for _, b := range up[i+1:] {
			la, lb := logs[a], logs[b]
			for off := 0; off < min(len(la), len(lb)); off++ {
				if la[off] != lb[off] {
					return fmt.Sprintf("log matching violated: %d and %d differ at offset %d (%s@%d vs %s@%d)",
						a, b, off, la[off].value, la[off].epoch, lb[off].value, lb[off].epoch)
				}
			}
		}
	}
	return "log matching: ok"
}
