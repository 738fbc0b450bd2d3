package conformance_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cases"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafkaclient"
	"github.com/watermarkhq/watermark/impl/node"
)

// crashOnly offers an in-process cluster's crashes, and says it offers
// nothing else (its Pause and Isolate only return errors). It creates
// topics itself (a TopicCreator), through the wire all the same, counting.
type crashOnly struct {
	*node.LocalCluster
	created *int
}

func (crashOnly) Capabilities() conformance.Capabilities {
	return conformance.Capabilities{Crash: true}
}

func (c crashOnly) CreateTopic(ctx context.Context, name string, partitions int32, rf int, configs map[string]string) error {
	cl, err := kafkaclient.NewClient(c.Bootstrap())
	if err != nil {
		return err
	}
	defer cl.Close()
	*c.created++
	return cl.CreateTopicWithConfigs(ctx, name, partitions, rf, configs)
}

// TestAGoImplementationChecksItself is the kit as a Go implementation
// uses it from its own go test: its brokers in the test's process (here
// the reference's own, on real TCP), its Kill and Restart as the crash
// capability, and conformance.Run.
func TestAGoImplementationChecksItself(t *testing.T) {
	if testing.Short() {
		t.Skip("real time; run without -short")
	}
	d := run.DefaultSpec(1)
	lc, err := node.StartLocalCluster(node.LocalOptions{
		Brokers:    3,
		Dir:        t.TempDir(),
		Broker:     func(int) broker.Config { return broker.Config{Settings: d.Broker} },
		Controller: d.Controller,
	})
	require.NoError(t, err)
	defer lc.Close()

	created := 0
	// The cluster's timing, declared as a target file's settings: say so,
	// the failover is judged by Kafka's default 9 s sessions (the reference
	// does not serve DescribeConfigs yet), too long for a 10 s run.
	settings := map[string]string{"session_timeout_ms": fmt.Sprint(d.Controller.SessionTimeoutMs),
		"replica_lag_time_max_ms": fmt.Sprint(d.Broker.ReplicaLagTimeMaxMs)}
	target := &conformance.KafkaTarget{Bootstrap: lc.Bootstrap(), Faults: crashOnly{lc, &created}, DurationMs: 10000, SettleMs: 6000, Settings: settings}
	require.Equal(t, conformance.Capabilities{Crash: true, Slow: true}, target.Capabilities())
	list, err := cases.Lookup([]string{"acks-all-leader-crash", "isr-shrink-expand"})
	require.NoError(t, err)
	conformance.Run(t, target, conformance.RunOptions{Cases: list}) // isr-shrink-expand needs pauses: skipped
	require.Equal(t, 1, created, "the run's topic came from the system's TopicCreator")
}
