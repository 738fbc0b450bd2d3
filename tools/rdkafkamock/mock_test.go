package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/wire"
	"github.com/watermarkhq/watermark/linearizability"
)

// mockFailures are the wire stage's findings on librdkafka's mock
// cluster (conformance/KIT.md has them with their evidence): the test
// fails when they change, so the table stays true.
var mockFailures = []string{
	"ApiVersions v3 (unsupported: KIP-511 downgrade)", "ApiVersions v4 (unsupported: KIP-511 downgrade)", "ApiVersions v5 (unsupported: KIP-511 downgrade)",
	"FindCoordinator v0", "FindCoordinator v1", "FindCoordinator v2", "FindCoordinator v3",
	"JoinGroup v6", "LeaveGroup v3", "LeaveGroup v4", "SyncGroup v4",
	"Produce v5 (unknown topic)",
	"Metadata v9 (null topics)", "Metadata v9 (empty topics)", "Metadata v9 (unknown topic)",
	"Metadata v10 (null topics)", "Metadata v10 (empty topics)", "Metadata v10 (unknown topic)",
	"Metadata v11 (null topics)", "Metadata v11 (empty topics)", "Metadata v11 (unknown topic)",
	"Metadata v12 (null topics)", "Metadata v12 (empty topics)", "Metadata v12 (unknown topic)",
}

// faults are the mock's controls, as the kit's Crasher and TopicCreator.
type faults struct{ mc *kafka.MockCluster }

func (f faults) Kill(id int) error    { return f.mc.SetBrokerDown(id) }
func (f faults) Restart(id int) error { return f.mc.SetBrokerUp(id) }
func (f faults) CreateTopic(_ context.Context, name string, partitions int32, rf int, _ map[string]string) error {
	return f.mc.CreateTopic(name, int(partitions), rf)
}

// The kit connects to the mock with no shim; the wire stage finds what
// it gets wrong; an acks=0 run whose leaders crash holds (it sends each
// record once: the mock does not deduplicate, so any retry breaks a
// case, and its group coordinator decides the group cases by which
// SyncGroup comes first, conformance/KIT.md, so none is asserted here);
// and the idempotent producer's retries, which the mock writes again at
// new offsets, are violated with the anomalies that say so.
func TestKitAgainstTheMock(t *testing.T) {
	mc, err := kafka.NewMockCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	boot := strings.Split(mc.BootstrapServers(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	res, err := wire.Run(ctx, boot[0], wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, c := range res.Failed() {
		failed = append(failed, c.Name())
	}
	slices.Sort(failed)
	want := slices.Clone(mockFailures)
	slices.Sort(want)
	if !slices.Equal(failed, want) {
		t.Fatalf("the mock's wire table changed: update mockFailures and conformance/KIT.md\ngot  %q\nwant %q\n%s", failed, want, res.Render())
	}

	target := &conformance.KafkaTarget{Bootstrap: boot, MaxVersions: res.Pins(), Faults: faults{mc},
		Prefix: "mock"}
	for _, tc := range []struct {
		name    string
		verdict conformance.Verdict
		found   []string
	}{
		{"at-most-once", conformance.Holds, nil},
		{"lost-answers", conformance.Violated, []string{linearizability.AnomalyDuplicate, linearizability.AnomalyDedupFailure}},
	} {
		c, err := cases.Lookup([]string{tc.name})
		if err != nil {
			t.Fatal(err)
		}
		r, err := conformance.RunOne(&c[0], 1, conformance.Options{Target: target, Context: ctx, CheckTimeout: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Verdict != tc.verdict {
			t.Fatalf("%s on the mock: %s (%v), want %s", tc.name, r.Verdict, r.Reasons, tc.verdict)
		}
		for _, a := range tc.found {
			if !slices.ContainsFunc(r.Found, func(x linearizability.Anomaly) bool { return x.Name == a }) {
				t.Fatalf("%s on the mock: no %s among %v", tc.name, a, r.Reasons)
			}
		}
	}
}
