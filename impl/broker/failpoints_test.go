package broker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/watermarkhq/watermark/failpoints"

	"github.com/pingcap/failpoint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// requireFailpoints skips a failpoint-driven test in a plain build, and
// fails it under `make test`, which sets WATERMARK_REQUIRE_FAILPOINTS.
func requireFailpoints(t *testing.T) {
	t.Helper()
	failpoints.Require(t)
}

// enable switches a broker failpoint on for the rest of the test.
// Failpoints are process-wide, so tests that enable them never run in
// parallel.
func enable(t *testing.T, name, term string) {
	t.Helper()
	path := broker.FailpointPath(name)
	require.NoError(t, failpoint.Enable(path, term))
	t.Cleanup(func() { _ = failpoint.Disable(path) })
}

// hook builds a failpoint context whose hook says yes when allow does.
func hook(allow func() bool) context.Context {
	return failpoint.WithHook(context.Background(), func(context.Context, string) bool { return allow() })
}

func always() bool { return true }

// A follower that crashes as it writes its HW checkpoint restarts with a
// checkpoint behind what it acknowledged: it told the leader it holds m1 (its
// fetch at offset 1 moved the leader's HW past m1, and m1 was acknowledged
// to the producer), and crashed while checkpointing the HW that covers m1.
// With truncation=hw that follower then truncates a committed record on
// restart, the precondition of KIP-101's data loss.
// Reference: KIP-101, scenario 1, step 1; failpoints/README.md, hwCheckpointWrite.
func TestFollowerCrashAtHWCheckpointRestartsBehindWhatItAcknowledged(t *testing.T) {
	requireFailpoints(t)
	c, leader := newTopic(t, opts{fpctx: map[broker.NodeID]context.Context{2: hook(always)}})
	require.EqualValues(t, 0, c.produceOK(leader, tp0, "m1"))
	require.EqualValues(t, 1, c.replica(leader, tp0).HW(), "m1 is committed and acknowledged")
	require.EqualValues(t, 0, c.replica(2, tp0).HW(), "follower 2 learns HW 1 only with its next fetch response")

	enable(t, broker.FPHWCheckpointWrite, `1*return("crash")`)
	c.produce(leader, tp0, partition.AcksAll, "m2") // its fetch response carries HW 1
	require.Len(t, c.fired, 1)
	fe := c.fired[0]
	require.Equal(t, broker.FPHWCheckpointWrite, fe.Name)
	require.Equal(t, broker.ActionCrash, fe.Action)
	require.EqualValues(t, 2, fe.Target)
	require.Nil(t, c.nodes[2].b, "broker 2 crashed")

	r, ok := c.start(2).Replica(tp0)
	require.True(t, ok)
	require.Equal(t, []string{"m1", "m2"}, values(r.Log()), "the page cache kept both records")
	require.EqualValues(t, 0, r.HW(), "the HW checkpoint is behind m1, which broker 2 acknowledged")
}

// A failpoint value names an action, optionally with the broker it hits.
// Reference: failpoints/README.md, "Values".
func TestParseAction(t *testing.T) {
	valid := []struct {
		in     string
		action broker.Action
		target broker.NodeID
	}{
		{"crash", broker.ActionCrash, 0},
		{"powerloss", broker.ActionPowerLoss, 0},
		{"pause", broker.ActionPause, 0},
		{"crash:2", broker.ActionCrash, 2},
		{"powerloss:1", broker.ActionPowerLoss, 1},
		{"pause:17", broker.ActionPause, 17},
	}
	for _, tc := range valid {
		a, target, err := broker.ParseAction(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.action, a, tc.in)
		assert.Equal(t, tc.target, target, tc.in)
	}
	invalid := []string{
		"", "boom", "Crash", " crash", "crash ", "kill:2",
		"crash:", "crash:0", "crash:-1", "crash:x", "crash:2:3", "crash: 2",
		"crash:99999999999", ":2", "crash,pause",
		"crash@", "crash@0", "crash@-5", "crash@x", "crash@1@2", "@100",
	}
	for _, in := range invalid {
		a, target, err := broker.ParseAction(in)
		require.Error(t, err, "%q", in)
		assert.Empty(t, a, "%q", in)
		assert.Zero(t, target, "%q", in)
	}
}

// An action may end with "@<ms>": how long its target stays down or paused.
// Reference: failpoints/README.md, "Values".
func TestParseActionFor(t *testing.T) {
	cases := []struct {
		in     string
		action broker.Action
		target broker.NodeID
		forMs  int64
	}{
		{"crash", broker.ActionCrash, 0, 0},
		{"crash@1500", broker.ActionCrash, 0, 1500},
		{"pause:2@300", broker.ActionPause, 2, 300},
		{"powerloss:3", broker.ActionPowerLoss, 3, 0},
	}
	for _, tc := range cases {
		a, target, forMs, err := broker.ParseActionFor(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.action, a, tc.in)
		assert.Equal(t, tc.target, target, tc.in)
		assert.Equal(t, tc.forMs, forMs, tc.in)
		// ParseAction reads the same action and drops the duration.
		a, target, err = broker.ParseAction(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.action, a, tc.in)
		assert.Equal(t, tc.target, target, tc.in)
	}
	for _, in := range []string{"crash@", "crash@0", "pause:2@x", "boom@10", "crash:0@10"} {
		_, _, _, err := broker.ParseActionFor(in)
		require.Error(t, err, "%q", in)
	}
}

// Broker ids are 1..ClientIDBase-1 (Config.Validate); a target outside that
// range names no broker and should be refused like "crash:0".
func TestParseActionRefusesTargetsThatAreNotBrokers(t *testing.T) {
	_, _, err := broker.ParseAction(fmt.Sprintf("crash:%d", broker.ClientIDBase))
	require.Error(t, err)
}

// FailpointError names the failpoint, the action and the broker, and
// unwraps to the storage error behind a storage failure.
func TestFailpointErrorDescribesItself(t *testing.T) {
	fe := &broker.FailpointError{Name: broker.FPHWAdvance, Action: broker.ActionPause, Target: 2}
	require.Equal(t, "failpoint hwAdvance: pause broker 2", fe.Error())
	st := &broker.FailpointError{Name: "storage", Action: broker.ActionCrash, Cause: io.ErrShortWrite}
	require.ErrorIs(t, st, io.ErrShortWrite)
	var got *broker.FailpointError
	require.True(t, errors.As(error(st), &got))
	require.Equal(t, broker.ActionCrash, got.Action)
}

// FailpointPath prefixes a name with the package's import path, which is
// what failpoint.Enable and GO_FAILPOINTS take.
func TestFailpointPath(t *testing.T) {
	require.Equal(t, "github.com/watermarkhq/watermark/impl/broker/hwCheckpointWrite",
		broker.FailpointPath(broker.FPHWCheckpointWrite))
	require.Equal(t, broker.PackagePath+"/"+broker.FPBecomeLeader, broker.FailpointPath(broker.FPBecomeLeader))
	seen := map[string]bool{}
	for _, n := range broker.Failpoints {
		require.False(t, seen[n], "failpoint %s listed twice", n)
		seen[n] = true
	}
}

// A leader that crashes right after appending a produce has the record in
// its log (page cache) but never answered: the client sees a lost
// connection, an unknown outcome, and the record outlives the crash.
// Reference: failpoints/README.md, leaderAfterAppend.
func TestLeaderAfterAppendCrashAppendsButDoesNotAnswer(t *testing.T) {
	requireFailpoints(t)
	for _, acks := range []partition.Acks{partition.AcksLeader, partition.AcksAll} {
		t.Run(map[partition.Acks]string{partition.AcksLeader: "acks=1", partition.AcksAll: "acks=all"}[acks], func(t *testing.T) {
			c, leader := newTopic(t, opts{fpctx: map[broker.NodeID]context.Context{1: hook(always)}})
			require.EqualValues(t, 1, leader)
			enable(t, broker.FPLeaderAfterAppend, `return("crash")`)

			out, err := handleDirect(c, leader, produceRequest(c.nextCorr(), tp0, acks, "doomed"))
			var fe *broker.FailpointError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, broker.FPLeaderAfterAppend, fe.Name)
			require.Equal(t, broker.ActionCrash, fe.Action)
			require.Equal(t, leader, fe.Target, "a failpoint with no target hits the broker that reached it")
			require.NoError(t, fe.Cause)
			require.Empty(t, produceResponses(out), "the produce was answered before the crash point")
			require.Equal(t, []string{"doomed"}, storedValues(t, c.nodes[leader].disk, tp0), "the append reached storage")

			require.NoError(t, failpoint.Disable(broker.FailpointPath(broker.FPLeaderAfterAppend)))
			c.crash(leader)
			r, ok := c.start(leader).Replica(tp0)
			require.True(t, ok)
			require.Equal(t, []string{"doomed"}, values(r.Log()), "a process crash keeps the page cache")
		})
	}
}

// What a failpoint does depends on its value: an action hits the broker
// that reached the point, or the one named after ":", in which case the
// broker goes on and reports the fault through TakeFaults; a value that is
// not an action does nothing.
// Reference: failpoints/README.md, "Values".
func TestFailpointValues(t *testing.T) {
	requireFailpoints(t)
	type hit struct {
		action broker.Action
		target broker.NodeID
		forMs  int64
	}
	cases := []struct {
		term   string
		self   *hit  // the error Handle returns; nil: Handle goes on
		cause  bool  // the error is a bad value, not an action
		others []hit // reported through TakeFaults
	}{
		{term: `return("crash")`, self: &hit{broker.ActionCrash, 1, 0}},
		{term: `return("powerloss")`, self: &hit{broker.ActionPowerLoss, 1, 0}},
		{term: `return("pause@300")`, self: &hit{broker.ActionPause, 1, 300}},
		{term: `return("crash:1")`, self: &hit{broker.ActionCrash, 1, 0}},
		{term: `return("powerloss:3")`, others: []hit{{broker.ActionPowerLoss, 3, 0}}},
		{term: `return("crash:2@5000,pause:3")`, others: []hit{{broker.ActionCrash, 2, 5000}, {broker.ActionPause, 3, 0}}},
		{term: `return("crash, powerloss:2")`, self: &hit{broker.ActionCrash, 1, 0}, others: []hit{{broker.ActionPowerLoss, 2, 0}}},
		{term: `return("boom")`, self: &hit{broker.ActionCrash, 1, 0}, cause: true},
		{term: `return(true)`},
		{term: `off`},
	}
	for _, tc := range cases {
		t.Run(tc.term, func(t *testing.T) {
			c, leader := newTopic(t, opts{fpctx: map[broker.NodeID]context.Context{1: hook(always)}})
			enable(t, broker.FPLeaderAfterAppend, tc.term)
			out, err := handleDirect(c, leader, produceRequest(c.nextCorr(), tp0, partition.AcksLeader, "v"))
			var others []hit
			for _, f := range c.broker(leader).TakeFaults() {
				require.Equal(t, broker.FPLeaderAfterAppend, f.Name)
				others = append(others, hit{f.Action, f.Target, f.ForMs})
			}
			require.Equal(t, tc.others, others, "faults for other brokers")
			if tc.self == nil {
				require.NoError(t, err)
				require.Len(t, produceResponses(out), 1, "the broker goes on and answers")
				return
			}
			var fe *broker.FailpointError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, broker.FPLeaderAfterAppend, fe.Name)
			require.Equal(t, *tc.self, hit{fe.Action, fe.Target, fe.ForMs})
			require.Equal(t, tc.cause, fe.Cause != nil, "cause: %v", fe.Cause)
		})
	}
}

// A count term fires that many times and then never again, which is what
// keeps a failpoint-driven run reproducible.
// Reference: failpoints/README.md, "Reproducible runs".
func TestFailpointCountTermFiresOnce(t *testing.T) {
	requireFailpoints(t)
	c, leader := newTopic(t, opts{fpctx: map[broker.NodeID]context.Context{1: hook(always)}})
	enable(t, broker.FPLeaderAfterAppend, `1*return("crash:3")`)
	fired := 0
	for i := range 3 {
		out, err := handleDirect(c, leader, produceRequest(c.nextCorr(), tp0, partition.AcksLeader, "v"))
		require.NoError(t, err)
		require.Len(t, produceResponses(out), 1, "produce %d", i)
		fired += len(c.broker(leader).TakeFaults())
	}
	require.Equal(t, 1, fired)
}

// A failpoint fires only where the broker's hook allows it: brokers opened
// with a nil context never fire, and a hook that says no keeps its broker
// out. This is how the simulator scopes a failpoint to one broker.
// Reference: failpoints/README.md, "Scoping a failpoint to one broker".
func TestFailpointFiresOnlyWhereTheHookAllows(t *testing.T) {
	requireFailpoints(t)
	asked := 0
	no := func() bool { asked++; return false }
	c, leader := newTopic(t, opts{fpctx: map[broker.NodeID]context.Context{1: hook(no)}})
	for _, name := range broker.Failpoints {
		enable(t, name, `return("crash")`)
	}
	// Every boundary of a produce, a replication round and an HW advance,
	// on all three brokers.
	require.EqualValues(t, 0, c.produceOK(leader, tp0, "a"))
	c.tick(1000)
	require.Positive(t, asked, "the leader's hook was never consulted")
	require.Empty(t, c.fired)
	require.Equal(t, []string{"a"}, values(c.replica(2, tp0).Log()))
}

// "pause" stops a broker at the failpoint "as SIGSTOP would": when it goes
// on, it must carry on from that point. The broker instead returns from the
// middle of applying a Ready and drops the rest of it, so a broker that
// resumes has a replica and a log that disagree. Here the pause is before
// the leader's append: the replica holds the record, storage does not, and
// the next append is refused as non-contiguous (a storage failure).
// Reference: broker.ActionPause; package partition's doc, "persist, then send".
func TestPauseFailpointResumesWhereItStopped(t *testing.T) {
	requireFailpoints(t)
	c, leader := newTopic(t, opts{fpctx: map[broker.NodeID]context.Context{1: hook(always)}})
	enable(t, broker.FPLeaderBeforeAppend, `1*return("pause")`)
	_, err := handleDirect(c, leader, produceRequest(c.nextCorr(), tp0, partition.AcksLeader, "a"))
	var fe *broker.FailpointError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, broker.ActionPause, fe.Action)

	// The pause ends; the process goes on.
	assert.Equal(t, values(c.replica(leader, tp0).Log()), storedValues(t, c.nodes[leader].disk, tp0),
		"replica and storage disagree after the pause")
	out, err := handleDirect(c, leader, produceRequest(c.nextCorr(), tp0, partition.AcksLeader, "b"))
	require.NoError(t, err)
	resps := produceResponses(out)
	require.Len(t, resps, 1)
	require.NoError(t, resps[0].Err)
	require.Equal(t, []string{"a", "b"}, storedValues(t, c.nodes[leader].disk, tp0))
}
