package conformance_test

// The kit from outside, as a broker's author uses it.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafkawire/fakebroker"
	"github.com/watermarkhq/watermark/linearizability"
)

// kfakeExpected is franz-go's kfake, run in-process as a third-party
// broker, case by case: the table of conformance/KIT.md. kfake keeps one
// in-memory log per partition and does not replicate, and the harness
// cannot crash, pause or cut off its brokers, so every case built on
// broker faults is skipped; what is left is checked like any broker.
// Each row is one verdict, and a change in kfake's results fails
// TestKfakeTable, so the table stays true. A row may also name a known
// difference (known): the anomalies, explained in KIT.md, that alone may
// turn its verdict into violated in some runs on a loaded machine; any
// other anomaly, invariant or verdict fails the test.
var kfakeExpected = map[string]kfakeRow{
	"no-faults":              {verdict: conformance.Holds},
	"long-poll":              {verdict: conformance.Holds},
	"reconsume":              {verdict: conformance.Holds},
	"at-least-once-consumer": {verdict: conformance.Holds},
	"at-most-once-consumer":  {verdict: conformance.Holds},
	"producer-restart":       {verdict: conformance.Holds},
	"lost-answers":           {verdict: conformance.Holds},
	"group-member-crash":     {verdict: conformance.Holds},
	// kfake does not replicate: a slowed broker never falls behind, and no
	// broker ever leaves an ISR.
	"slow-follower": {verdict: conformance.Unknown},
	// What the case is about, a produce answered with an error after its
	// append (seen from outside as a refused write a reader then read),
	// never happens: kfake does not replicate, so no produce waits on
	// slowed followers and none times out.
	"slow-replication-no-retries": {verdict: conformance.Unknown},
}

// kfakeRow is kfake's expected verdict on a case.
type kfakeRow struct {
	verdict conformance.Verdict
	known   []string
}

// matches reports whether cr is what the row expects: its verdict, or
// violated by nothing but its known anomalies.
func (row kfakeRow) matches(cr *conformance.CaseResult) bool {
	if cr.Verdict == row.verdict {
		return true
	}
	if cr.Verdict != conformance.Violated || len(row.known) == 0 || len(cr.Invariants) > 0 || cr.Illegal > 0 || len(cr.Found) == 0 {
		return false
	}
	for name := range cr.Found {
		if !slices.Contains(row.known, name) {
			return false
		}
	}
	return true
}

func TestKfakeTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fault-free cases on kfake in real time; run without -short")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	defer c.Close()
	target := &conformance.KafkaTarget{Bootstrap: c.ListenAddrs(), DurationMs: 12000, SettleMs: 8000, Prefix: "kfake"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := conformance.Check(cases.Cases, []uint64{1}, conformance.Options{Target: target, Context: ctx, CheckTimeout: time.Minute})
	require.NoError(t, err)
	var diffs, table []string
	for _, cr := range rep.Cases {
		want, ok := kfakeExpected[cr.Name]
		if !ok {
			want = kfakeRow{verdict: conformance.Skipped}
		}
		line := fmt.Sprintf("%-24s %-8s", cr.Name, cr.Verdict)
		switch cr.Verdict {
		case conformance.Skipped:
			line += " " + cr.Skipped
		default:
			for _, r := range cr.Failed {
				line += " " + strings.Join(r.Reasons, "; ")
			}
		}
		table = append(table, line)
		if !want.matches(cr) {
			diffs = append(diffs, fmt.Sprintf("%s: kfake %s (%s), the table says %s", cr.Name, cr.Verdict, cr.Counts(false), want.verdict))
		}
		if cr.Verdict == conformance.Skipped {
			require.NotEmpty(t, cr.Skipped, "%s: skipped without a reason", cr.Name)
		}
	}
	sort.Strings(table)
	t.Logf("kfake, case by case:\n%s", strings.Join(table, "\n"))
	require.Empty(t, diffs, "kfake's results changed: update kfakeExpected and the table in conformance/KIT.md")
}

// TestKafkaTargetFailsFastWithoutABroker: a bootstrap address where nothing
// listens is an error that says so, within seconds, not a hang or a pass.
func TestKafkaTargetFailsFastWithoutABroker(t *testing.T) {
	target := &conformance.KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}}
	start := time.Now()
	_, _, err := target.Probe(context.Background())
	require.ErrorIs(t, err, conformance.ErrNoBroker)
	require.ErrorContains(t, err, "127.0.0.1:1")
	require.Less(t, time.Since(start), 15*time.Second)

	r, err := conformance.RunOne(caseNamed(t, "no-faults"), 1, conformance.Options{Target: target, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, conformance.Error, r.Verdict)
	require.Contains(t, r.Reasons[0], "no Kafka broker answered")
	require.Contains(t, r.Reasons[0], "is --bootstrap right?")
}

// A cluster that answered earlier in the check and then stops is not
// blamed on --bootstrap: the error says it answered before.
func TestKafkaTargetThatStopsAnsweringIsNotABadBootstrap(t *testing.T) {
	var self atomic.Value // the fake's own address, which it lists as broker 1
	fb := fakebroker.New(t, func(_, _ int, key, version int16) ([]byte, bool) {
		switch key {
		case kmsg.ApiVersions.Int16():
			return apiVersionsV3(version), true
		case kmsg.Metadata.Int16():
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = version
			host, port, _ := net.SplitHostPort(self.Load().(string))
			p, _ := strconv.Atoi(port)
			resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: host, Port: int32(p)}}
			return resp.AppendTo(nil), true
		}
		return nil, false
	})
	self.Store(fb.Addr)
	target := &conformance.KafkaTarget{Bootstrap: []string{fb.Addr}}
	n, _, err := target.Probe(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	fb.Crash()
	_, _, err = target.Probe(context.Background())
	require.ErrorIs(t, err, conformance.ErrNoBroker)
	require.ErrorContains(t, err, "answered earlier in this check")
	require.ErrorContains(t, err, "no broker it listed answers: broker 1 at "+fb.Addr)
	require.NotContains(t, err.Error(), "--bootstrap right")
}

// TestCapabilitiesSkipWithTheReason: a target without fault commands skips
// the fault cases, naming the commands that would run them.
func TestCapabilitiesSkipWithTheReason(t *testing.T) {
	target := &conformance.KafkaTarget{Bootstrap: []string{"127.0.0.1:1"}}
	r, err := conformance.RunOne(caseNamed(t, "acks-all-leader-crash"), 1, conformance.Options{Target: target, CheckTimeout: time.Minute})
	require.NoError(t, err, "skipped before anything is dialled")
	require.Equal(t, conformance.Skipped, r.Verdict)
	require.Contains(t, r.Reasons[0], "--kill-cmd and --restart-cmd")

	target.KillCmd, target.RestartCmd = "true", "true"
	require.True(t, target.Capabilities().Crash)
	r, err = conformance.RunOne(caseNamed(t, "leader-isolated"), 1, conformance.Options{Target: target, CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, conformance.Skipped, r.Verdict)
	require.Contains(t, r.Reasons[0], "--isolate-cmd")
	require.NotContains(t, r.Reasons[0], "--kill-cmd", "the crash commands are given")
}

// TestKafkaTargetSlowsBrokersThroughItsProxies: the harness reaches every
// broker of a kafka target through a proxy of its own, so it can slow a
// broker's links to the clients; here kfake's, under the no-faults
// workload, still holds.
func TestKafkaTargetSlowsBrokersThroughItsProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("real time; run without -short")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	defer c.Close()
	target := &conformance.KafkaTarget{Bootstrap: c.ListenAddrs(), DurationMs: 4000, SettleMs: 4000, Prefix: "slow"}
	require.True(t, target.Capabilities().Slow)
	slow := cases.Case{Name: "slow-leader", Spec: func(seed uint64) run.Spec {
		cfg := run.DefaultSpec(seed)
		cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 500}, Kind: run.FaultSlow, Role: run.RoleLeader, ForMs: 2000, DelayMs: 300}}
		return cfg
	}}
	r, err := conformance.RunOne(&slow, 1, conformance.Options{Target: target, Context: context.Background(), CheckTimeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, conformance.Holds, r.Verdict, "%v", r.Reasons)
	slowed := slices.ContainsFunc(r.Run.Notes, func(n run.Note) bool { return n.Kind == run.NoteFault && n.Fault == run.FaultSlow })
	require.True(t, slowed, "no broker was slowed: %v", r.Run.Notes)
	require.Positive(t, r.Run.Stats.Faults)
	// Every value the run wrote carries its own id.
	prefix := r.Run.Spec.Workload.ValuePrefix
	require.Regexp(t, `^r1-\d+/$`, prefix)
	for _, op := range r.Run.History {
		if op.Kind == linearizability.KindProduce {
			require.True(t, strings.HasPrefix(op.Value, prefix), op.Value)
		}
	}
}

// TestKafkaTargetDiagnosesABadNegotiation: a broker that connects and
// answers ApiVersions with bytes no Kafka client can read is told apart
// from one that is not there: the error says negotiation failed and shows
// what it sent, not "is it running?".
func TestKafkaTargetDiagnosesABadNegotiation(t *testing.T) {
	addr := fakebroker.Start(t, func(_, _ int, _, _ int16) ([]byte, bool) {
		return []byte{0xde, 0xad, 0xbe, 0xef}, true // a body in no layout
	})
	target := &conformance.KafkaTarget{Bootstrap: []string{addr}}
	start := time.Now()
	_, _, err := target.Probe(context.Background())
	require.ErrorIs(t, err, conformance.ErrNegotiation)
	require.NotErrorIs(t, err, conformance.ErrNoBroker)
	require.ErrorContains(t, err, "de ad be ef")
	require.Less(t, time.Since(start), 20*time.Second)
}

// TestKafkaTargetSpeaksDownToABrokenDowngrade: a broker whose answer to an
// ApiVersions version above its own is not KIP-511's (as librdkafka's mock
// cluster's is not) is spoken to at its own highest ApiVersions version,
// with a note saying so, instead of being reported as not there.
func TestKafkaTargetSpeaksDownToABrokenDowngrade(t *testing.T) {
	var port int
	addr := fakebroker.Start(t, func(_, _ int, key, version int16) ([]byte, bool) { return badDowngrade(port, key, version) })
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, _ = strconv.Atoi(p)
	target := &conformance.KafkaTarget{Bootstrap: []string{addr}}
	n, _, err := target.Probe(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, int16(2), target.MaxVersions[18])
	require.Len(t, target.Notes, 1)
	require.Contains(t, target.Notes[0], "speaks ApiVersions v2")
}

// badDowngrade takes ApiVersions v0-2 and Metadata v0-1; to a higher
// ApiVersions it answers error 35 in the flexible layout, not v0's.
func badDowngrade(port int, key, version int16) ([]byte, bool) {
	switch key {
	case 18:
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 2}, {ApiKey: 3, MaxVersion: 1}}
		if version > 2 {
			resp.Version, resp.ErrorCode = 3, 35 // the flexible layout
		} else {
			resp.Version = version
		}
		return resp.AppendTo(nil), true
	case 3:
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = version
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "127.0.0.1", Port: int32(port)}}
		return resp.AppendTo(nil), true
	}
	return nil, false
}

// apiVersionsV3 is the ApiVersions answer of a fake broker that speaks
// ApiVersions up to v3 (KIP-511's UNSUPPORTED_VERSION above it) and
// Metadata up to v1, and lists keys at version 0 besides.
func apiVersionsV3(version int16, keys ...kmsg.Key) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	if version > 3 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	} else {
		resp.Version = version
	}
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 3}, {ApiKey: 3, MaxVersion: 1}}
	for _, k := range keys {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.Int16(), MaxVersion: 0})
	}
	return resp.AppendTo(nil)
}

// listing is a fake broker that lists ApiVersions, Metadata v1 and the
// given keys, and answers Metadata with one broker.
func listing(t *testing.T, keys ...kmsg.Key) string {
	return fakebroker.Start(t, func(_, _ int, key, version int16) ([]byte, bool) {
		switch key {
		case kmsg.ApiVersions.Int16():
			return apiVersionsV3(version, keys...), true
		case kmsg.Metadata.Int16():
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = version
			resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "127.0.0.1", Port: 1}}
			return resp.AppendTo(nil), true
		}
		return nil, false
	})
}

// A case that needs an API the broker does not list in ApiVersions is
// skipped naming the API and what it is for, before anything is sent;
// a broker that does not list an API every Kafka broker serves violates
// the run, naming it. A broker that lists them all is asked to run.
func TestUnlistedAPIsSkipOrViolate(t *testing.T) {
	one := func(mod func(*run.Spec)) *cases.Case {
		return &cases.Case{Name: "apis", Spec: func(seed uint64) run.Spec {
			cfg := run.DefaultSpec(seed)
			cfg.Topics[0].ReplicationFactor = 1
			mod(&cfg)
			return cfg
		}}
	}
	opts := func(addr string) conformance.Options {
		return conformance.Options{Target: &conformance.KafkaTarget{Bootstrap: []string{addr}, DurationMs: 500, SettleMs: 500}, CheckTimeout: time.Minute}
	}
	core := []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.CreateTopics}

	idem := one(func(s *run.Spec) { s.Workload.Idempotent = true })
	r, err := conformance.RunOne(idem, 1, opts(listing(t, core...)))
	require.NoError(t, err)
	require.Equal(t, conformance.Skipped, r.Verdict, "%v", r.Reasons)
	require.Contains(t, r.Reasons[0], "InitProducerID (idempotent producers)")

	group := one(func(s *run.Spec) { s.Workload.Group, s.Workload.GroupConsumers = "g", 1 })
	r, err = conformance.RunOne(group, 1, opts(listing(t, append(core, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup)...)))
	require.NoError(t, err)
	require.Equal(t, conformance.Skipped, r.Verdict, "%v", r.Reasons)
	require.Contains(t, r.Reasons[0], "OffsetCommit (consumer groups), OffsetFetch (consumer groups)")

	plain := one(func(s *run.Spec) { s.Workload.Idempotent = false })
	r, err = conformance.RunOne(plain, 1, opts(listing(t, kmsg.Produce, kmsg.ListOffsets, kmsg.CreateTopics)))
	require.NoError(t, err)
	require.Equal(t, conformance.Violated, r.Verdict, "%v", r.Reasons)
	require.Contains(t, r.Reasons[0], "does not list Fetch (consumers)")

	// Every API listed: the run goes ahead (and, this fake broker creating
	// no topics, fails to be set up: an error, not a skip).
	r, err = conformance.RunOne(plain, 1, opts(listing(t, core...)))
	require.NoError(t, err)
	require.Equal(t, conformance.Error, r.Verdict, "%v", r.Reasons)
}
