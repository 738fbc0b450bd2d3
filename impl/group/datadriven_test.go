package group

import (
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// TestScenarios runs the scenario files in testdata/. Each file starts with
// a comment naming the property it checks; rewrite the expected output with
// `go test ./impl/group -run TestScenarios -rewrite` and review the diff.
// Each command prints the Ready it produced; request ids count from 1.
//
// Commands (session and rebalance timeouts default to 10000 and 30000 ms,
// topic t has 4 partitions and u 3):
//
//	join group=G [member=M] [client=C] [topics=(t,u)] [session=N] [rebalance=N]
//	sync group=G member=M gen=N [assign]   assign: Range over M's last JoinGroup answer
//	heartbeat group=G member=M gen=N
//	leave group=G members=(M,..)
//	commit group=G [member=M] gen=N offsets=(t/0=5,..)
//	fetch group=G [partitions=(t/0,..)]
//	tick ms=N
//	done [fail[=CODE]] [written]           report every append in flight: committed, or failed with
//	                                       Kafka's error CODE (a lost leadership without one);
//	                                       written: its records reached the log all the same
//	failover epoch=N                       Unload; a new coordinator loads the committed records
//	describe
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newHarness(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			h.t = t
			return runScenarioCommand(t, h, d)
		})
	})
}

func runScenarioCommand(t *testing.T, h *harness, d *datadriven.TestData) string {
	var group, member string
	var gen int
	d.MaybeScanArgs(t, "group", &group)
	d.MaybeScanArgs(t, "member", &member)
	d.MaybeScanArgs(t, "gen", &gen)
	id := h.nextID + 1
	switch d.Cmd {
	case "join":
		topics := []string{"t"}
		d.MaybeScanArgs(t, "topics", &topics)
		req := joinReq(group, member, topics...)
		d.MaybeScanArgs(t, "client", &req.ClientID)
		d.MaybeScanArgs(t, "session", &req.SessionTimeoutMs)
		d.MaybeScanArgs(t, "rebalance", &req.RebalanceTimeoutMs)
		h.nextID++
		h.c.JoinGroup(id, req, h.now)
	case "sync":
		req := SyncRequest{Group: group, MemberID: member, Generation: int32(gen)}
		if d.HasArg("assign") {
			req.Assignments = rangeAssign(t, h.lastLeaderJoin(member), map[string]int32{"t": 4, "u": 3})
		}
		h.nextID++
		h.c.SyncGroup(id, req, h.now)
	case "heartbeat":
		h.nextID++
		h.c.Heartbeat(id, HeartbeatRequest{Group: group, MemberID: member, Generation: int32(gen)}, h.now)
	case "leave":
		var members []string
		d.ScanArgs(t, "members", &members)
		h.nextID++
		h.c.LeaveGroup(id, LeaveRequest{Group: group, Members: members}, h.now)
	case "commit":
		var offs []string
		d.ScanArgs(t, "offsets", &offs)
		req := CommitRequest{Group: group, MemberID: member, Generation: int32(gen)}
		for _, o := range offs {
			req.Offsets = append(req.Offsets, parseOffset(t, o))
		}
		h.nextID++
		h.c.OffsetCommit(id, req, h.now)
	case "fetch":
		var tps []string
		d.MaybeScanArgs(t, "partitions", &tps)
		req := FetchOffsetsRequest{Group: group}
		for _, s := range tps {
			req.Partitions = append(req.Partitions, parseOffset(t, s+"=0").TopicPartition)
		}
		h.nextID++
		h.c.OffsetFetch(id, req, h.now)
	case "tick":
		var ms int64
		d.ScanArgs(t, "ms", &ms)
		h.now += ms
		h.c.Tick(h.now)
	case "done":
		err := appendFailure(t, d)
		var out strings.Builder
		for len(h.appends) > 0 {
			a := h.appends[0]
			h.appends = h.appends[1:]
			if err == nil || d.HasArg("written") {
				h.log = append(h.log, a.Records...)
			}
			h.c.AppendDone(a.ID, err, h.now)
			out.WriteString(h.stepString())
		}
		return out.String()
	case "failover":
		var epoch int
		d.ScanArgs(t, "epoch", &epoch)
		h.c.Unload()
		out := h.stepString()
		h.appends = nil
		c, err := New(testConfig())
		require.NoError(t, err)
		h.c = c
		require.NoError(t, c.Load(int32(epoch), h.log, h.now))
		return out + h.c.Describe()
	case "describe":
		return h.c.Describe()
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	return h.stepString()
}

// appendFailure reads done's fail argument: nil without one, a lost
// leadership when it names no code, else the sentinel Kafka names CODE.
func appendFailure(t *testing.T, d *datadriven.TestData) error {
	for _, arg := range d.CmdArgs {
		if arg.Key != "fail" {
			continue
		}
		if len(arg.Vals) == 0 {
			return errLostLeadership
		}
		for _, e := range kafka.Sentinels() {
			if kafka.Name(e) == arg.Vals[0] {
				return e
			}
		}
		d.Fatalf(t, "no error named %s", arg.Vals[0])
	}
	return nil
}

// stepString is step, returning the Ready rendered.
func (h *harness) stepString() string {
	h.t.Helper()
	n := len(h.trace)
	h.step()
	s := h.trace[n].String()
	if s == "" {
		return "ok\n"
	}
	return s
}

// lastLeaderJoin returns the last JoinGroup answer that made member leader.
func (h *harness) lastLeaderJoin(member string) JoinResponse {
	h.t.Helper()
	for i := len(h.order) - 1; i >= 0; i-- {
		if r, ok := h.answers[h.order[i]].(JoinResponse); ok && r.Err == nil && r.LeaderID == member && r.MemberID == member {
			return r
		}
	}
	require.Failf(h.t, "no join", "%s never led", member)
	return JoinResponse{}
}

// parseOffset reads "topic/partition=offset".
func parseOffset(t *testing.T, s string) OffsetToCommit {
	tp, o, ok1 := strings.Cut(s, "=")
	topic, p, ok2 := strings.Cut(tp, "/")
	pn, err1 := strconv.Atoi(p)
	on, err2 := strconv.ParseInt(o, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		t.Fatalf("bad offset %q", s)
	}
	return OffsetToCommit{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: int32(pn)}, Offset: on}
}
