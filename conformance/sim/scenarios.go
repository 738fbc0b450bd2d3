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

// KIP101Divergence is the second scenario of KIP-101, driven by a failpoint.
// Broker 1 leads, broker 2 follows, min ISR 1, acks=all; logs are synced
// once a second (log.flush.interval.ms), so m1 is durable everywhere and
// m2, just replicated, is not:
//
//  1. Broker 2 fetches m2 and acknowledges it; leader 1 moves HW to 2 and
//     checkpoints it. As it is about to acknowledge m2 to the producer
//     (beforeProduceResponse), leader 1 crashes and broker 2 loses power:
//     broker 2 comes back at once with only m1; broker 1 stays down.
//  2. Broker 2 is elected (it kept its ISR place, as before KIP-903) and
//     writes m3 at offset 1.
//  3. Broker 1 returns holding m2 at offset 1 and HW 2. With
//     truncation=hw it keeps m2 and fetches from offset 2: the replicas
//     diverge for good. With truncation=epoch it asks where epoch 0 ended
//     (offset 1), truncates m2 and copies m3.
//  4. Broker 2 crashes later, broker 1 leads again, and clients see which
//     record stands at offset 1.
//
// Reference: KIP-101, "Scenario 2: Replica Divergence on Restart after
// Multiple Hard Failures".
func KIP101Divergence(seed uint64, truncation partition.Truncation) Config {
	cfg := DefaultConfig(seed)
	cfg.Brokers = 2
	cfg.Topics = []Topic{{Name: "t", Partitions: 1, ReplicationFactor: 2}}
	cfg.Broker.MinInsyncReplicas = 1
	cfg.Broker.Truncation = truncation
	cfg.Broker.HWCheckpointIntervalMs = 0
	cfg.Broker.FlushIntervalMs = 1000
	cfg.Controller.KeepISROnRestart = true
	cfg.Workload = Workload{Producers: 1, Consumers: 1, Acks: partition.AcksAll, ProduceIntervalMs: 1500, RequestTimeoutMs: 3000, FetchMaxWaitMs: 200}
	cfg.DurationMs = 28000
	cfg.SettleMs = 10000
	cfg.Failpoints = []Failpoint{
		{Name: broker.FPBeforeProduceResp, Term: `1*return("crash@10000,powerloss-worst:2@300")`, Node: 1, When: Trigger{AfterAcks: 1}},
	}
	// Long enough down for broker 2 to lead and take m3 whatever the
	// producer's timing, then broker 2 goes down so broker 1 leads again.
	cfg.Faults = []Fault{{When: Trigger{AtMs: 20000}, Kind: FaultCrash, Node: 2, ForMs: 4000}}
	return cfg
}
