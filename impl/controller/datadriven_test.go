package controller

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// TestScenarios runs the scenario files in testdata/, as impl/partition and
// impl/group do. Each file starts with a comment naming the rule it shows
// and where the rule comes from; rewrite the expected output with
// `go test ./impl/controller -run TestScenarios -rewrite` and review the
// diff. Every command prints the Ready it produced (events, updates,
// recovery questions) and the controller's invariants are checked after
// each; the clock moves only by the commands that say so. Session timeout
// 1000 ms.
//
// Commands:
//
//	cluster brokers=(1,2,3) [min-isr=N] [no-elr] [unclean]
//	                           a new controller, each broker registered (incarnation 1);
//	                           unclean: unclean.leader.election.enable
//	create-topic name=T partitions=N rf=N
//	kill brokers=(B,..)        their sessions expire: time passes, the others heartbeat, one Tick
//	restart broker=B [clean] [synced] [lost=(T/P,..)]
//	                           a new process registers (the old one's session expired first);
//	                           clean: it names the previous incarnation's shutdown marker
//	revive broker=B            a paused broker heartbeats again, same incarnation
//	alter tp=T/P isr=(B,..) [leader=B] [leader-incarnation=N] [leader-epoch=N]
//	      [partition-epoch=N] [incarnations=(N,..)]
//	                           the leader proposes an ISR on the current epochs; each
//	                           optional field replaces what the request carries: the
//	                           sender, its incarnation (default its registered one), the
//	                           epochs the proposal was made from, and the incarnation
//	                           the leader saw each new ISR member fetch from
//	                           (NewISRIncarnations, one per isr member; default none,
//	                           no check). Prints the answer and its Kafka error name.
//	heartbeat broker=B [incarnation=N]
//	                           broker B's process of incarnation N (default the
//	                           registered one) heartbeats; time does not move
//	shutdown broker=B [pending]
//	                           a controlled shutdown: asked, then, if it leads nothing, done;
//	                           pending: only asked, the broker stays alive in a controlled
//	                           shutdown (as while the new leaders catch up)
//	tick                       every live broker heartbeats, time moves 1 ms, one Tick
//	describe                   the controller's state
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var h *harness
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "cluster" {
				require.NotNil(t, h, "%s: start the file with cluster", d.Pos)
				h.t = t
			}
			out, err := runControllerCommand(t, &h, d)
			if err != nil {
				return "error: " + err.Error() + " (" + errName(err) + ")\n"
			}
			return out
		})
	})
}

func runControllerCommand(t *testing.T, hp **harness, d *datadriven.TestData) (string, error) {
	h := *hp
	var broker int
	d.MaybeScanArgs(t, "broker", &broker)
	id := int32(broker)
	var note string
	switch d.Cmd {
	case "cluster":
		var brokers []int
		d.ScanArgs(t, "brokers", &brokers)
		cfg := Config{SessionTimeoutMs: timeout, NoEligibleLeaders: d.HasArg("no-elr"), UncleanLeaderElection: d.HasArg("unclean")}
		d.MaybeScanArgs(t, "min-isr", &cfg.EligibleMinISR)
		ids := make([]int32, len(brokers))
		for i, b := range brokers {
			ids[i] = int32(b)
		}
		*hp = newHarness(t, cfg, ids...)
		return "ok\n", nil
	case "create-topic":
		var name string
		var partitions, rf int
		d.ScanArgs(t, "name", &name)
		d.ScanArgs(t, "partitions", &partitions)
		d.ScanArgs(t, "rf", &rf)
		if err := createTopic(h.c, name, int32(partitions), rf, kafka.TopicConfig{}, h.now); err != nil {
			return "", err
		}
	case "kill":
		var brokers []int
		d.ScanArgs(t, "brokers", &brokers)
		victims := make([]int32, len(brokers))
		for i, b := range brokers {
			victims[i] = int32(b)
		}
		h.kill(victims...)
	case "restart":
		reg := Registration{Synced: d.HasArg("synced")}
		if d.HasArg("clean") {
			reg.PreviousIncarnation = h.inc[id]
		}
		var lost []string
		d.MaybeScanArgs(t, "lost", &lost)
		for _, s := range lost {
			reg.Lost = append(reg.Lost, parseTP(t, s))
		}
		if h.c.IsAlive(id) {
			h.kill(id)
		}
		h.inc[id]++
		if err := h.c.Register(id, h.inc[id], h.now, reg); err != nil {
			return "", err
		}
	case "revive":
		h.revive(id)
	case "alter":
		var tp string
		var isr []int
		d.ScanArgs(t, "tp", &tp)
		d.ScanArgs(t, "isr", &isr)
		members := make([]int32, len(isr))
		for i, b := range isr {
			members[i] = int32(b)
		}
		req := h.request(h.state(parseTP(t, tp)), members...)
		if d.HasArg("leader") {
			var leader int
			d.ScanArgs(t, "leader", &leader)
			req.LeaderID = int32(leader)
			req.LeaderIncarnation = h.inc[req.LeaderID]
		}
		var n int
		if d.HasArg("leader-incarnation") {
			d.ScanArgs(t, "leader-incarnation", &n)
			req.LeaderIncarnation = int64(n)
		}
		if d.HasArg("leader-epoch") {
			d.ScanArgs(t, "leader-epoch", &n)
			req.LeaderEpoch = int32(n)
		}
		if d.HasArg("partition-epoch") {
			d.ScanArgs(t, "partition-epoch", &n)
			req.PartitionEpoch = int32(n)
		}
		if d.HasArg("incarnations") {
			var incs []int
			d.ScanArgs(t, "incarnations", &incs)
			for _, i := range incs {
				req.NewISRIncarnations = append(req.NewISRIncarnations, int64(i))
			}
		}
		h.c.AlterPartition(req, h.now) // answered in the Ready printed after
	case "heartbeat":
		inc := h.inc[id]
		if d.HasArg("incarnation") {
			var n int
			d.ScanArgs(t, "incarnation", &n)
			inc = int64(n)
		}
		if err := h.c.Heartbeat(id, inc, h.now); err != nil {
			return "", err
		}
	case "shutdown":
		done, err := h.c.ControlledShutdown(id, h.inc[id], h.now)
		if err != nil {
			return "", err
		}
		if d.HasArg("pending") {
			note = fmt.Sprintf("asked: leads nothing=%t\n", done)
		} else if done {
			if err := h.c.ShutDown(id, h.inc[id], h.now); err != nil {
				return "", err
			}
			note = "shut down\n"
		} else {
			note = "still leads: waits\n"
		}
	case "tick":
		h.tick()
	case "describe":
		return h.c.Describe(), nil
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	h.check()
	out := note + drain(h.c).String()
	if out == "" {
		return "nothing\n", nil
	}
	return out, nil
}

// errName renders an error as Kafka names its code (STALE_BROKER_EPOCH),
// "<nil>" for none, and the error's text if it has no Kafka code.
func errName(err error) string {
	if err == nil {
		return "<nil>"
	}
	var ke *kafka.Error
	if !errors.As(err, &ke) {
		return err.Error()
	}
	return ke.Name()
}

// parseTP reads "t/0".
func parseTP(t *testing.T, s string) kafka.TopicPartition {
	t.Helper()
	topic, p, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(p)
	require.True(t, ok && err == nil, "partition %q: want TOPIC/N", s)
	return kafka.TopicPartition{Topic: topic, Partition: int32(n)}
}
