package sim

import (
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/partition"
)

// KIP101DataLoss is the first scenario of KIP-101, driven by failpoints.
// Broker 1 leads, broker 2 follows, min ISR 1, acks=all:
//
//  1. m1 and m2 are acknowledged: follower 2 fetched m2, and its next fetch
//     told the leader so, which moved the leader's HW past m2.
//  2. Follower 2 learns HW=2 and crashes as it writes that HW checkpoint
//     (hwCheckpointWrite): its checkpoint still says HW=1.
//  3. It restarts. Kafka before KIP-903 keeps it in the ISR. As it becomes a
//     follower again, leader 1 crashes (becomeFollower with "crash:1").
//     With truncation=hw it has just truncated to its checkpointed HW,
//     dropping m2.
//  4. The controller elects broker 2, the only ISR member alive. With
//     truncation=hw the acknowledged m2 is gone and offset 1 will be reused;
//     with truncation=epoch broker 2 kept m2 and nothing is lost.
//
// Reference: KIP-101, "Scenario 1: High Watermark Truncation followed by
// Immediate Leader Election".
func KIP101DataLoss(seed uint64, truncation partition.Truncation) Config {
	cfg := DefaultConfig(seed)
	cfg.Brokers = 2
	cfg.Topics = []Topic{{Name: "t", Partitions: 1, ReplicationFactor: 2}}
	cfg.Broker.MinInsyncReplicas = 1
	cfg.Broker.Truncation = truncation
	cfg.Broker.HWCheckpointIntervalMs = 0
	cfg.Controller.KeepISROnRestart = true
	cfg.Workload = Workload{Producers: 1, Acks: partition.AcksAll, ProduceIntervalMs: 100, RequestTimeoutMs: 3000, FetchMaxWaitMs: 200}
	cfg.DurationMs = 8000
	cfg.SettleMs = 5000
	after := Trigger{AfterAcks: 2}
	cfg.Failpoints = []Failpoint{
		// Broker 2 is back before its session ends, so it keeps its place.
		{Name: broker.FPHWCheckpointWrite, Term: `1*return("crash")`, Node: 2, When: after, DownMs: 500},
		// Leader 1 stays down past its session, so broker 2 is elected.
		{Name: broker.FPBecomeFollower, Term: `1*return("crash:1")`, Node: 2, When: after, DownMs: 5000},
	}
	return cfg
}
