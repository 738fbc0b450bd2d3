package cases

import (
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/fpname"
	"github.com/watermarkhq/watermark/impl/settings"
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
func KIP101DataLoss(seed uint64, truncation settings.Truncation) run.Spec {
	cfg := truncationScenario(seed, 2, 1, truncation)
	cfg.Broker.HWCheckpointIntervalMs = 0
	cfg.Controller.KeepISROnRestart = true
	cfg.Workload = run.Workload{Producers: 1, Acks: settings.AcksAll, ProduceIntervalMs: 100, RequestTimeoutMs: 3000, FetchMaxWaitMs: 200}
	cfg.DurationMs = 8000
	cfg.SettleMs = 5000
	after := run.Trigger{AfterAcks: 2}
	cfg.Failpoints = []run.Failpoint{
		// Broker 2 is back before its session ends, so it keeps its place.
		{Name: fpname.HWCheckpointWrite, Term: `1*return("crash")`, Node: 2, When: after, DownMs: 500},
		// Leader 1 stays down past its session, so broker 2 is elected.
		{Name: fpname.BecomeFollower, Term: `1*return("crash:1")`, Node: 2, When: after, DownMs: 5000},
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
func KIP101Divergence(seed uint64, truncation settings.Truncation) run.Spec {
	cfg := truncationScenario(seed, 2, 1, truncation)
	cfg.Broker.HWCheckpointIntervalMs = 0
	cfg.Broker.FlushIntervalMs = 1000
	cfg.Controller.KeepISROnRestart = true
	cfg.Workload = run.Workload{Producers: 1, Consumers: 1, Acks: settings.AcksAll, ProduceIntervalMs: 1500, RequestTimeoutMs: 3000, FetchMaxWaitMs: 200}
	cfg.DurationMs = 28000
	cfg.SettleMs = 10000
	cfg.Failpoints = []run.Failpoint{
		{Name: fpname.BeforeProduceResp, Term: `1*return("crash@10000,powerloss-worst:2@300")`, Node: 1, When: run.Trigger{AfterAcks: 1}},
	}
	// Long enough down for broker 2 to lead and take m3 whatever the
	// producer's timing, then broker 2 goes down so broker 1 leads again.
	cfg.Faults = []run.Fault{{When: run.Trigger{AtMs: 20000}, Kind: run.FaultCrash, Node: 2, ForMs: 4000}}
	return cfg
}

// KAFKA6361 is KAFKA-6361 (fixed by KIP-279), driven by failpoints: leaders
// change twice in quick succession, and a follower asks the newest leader
// about an epoch that leader never saw. Two brokers, min ISR 2, acks=1, and
// unclean leader election on, so that the leader of the first epoch can
// lead again before it has copied anything of the second (as the JIRA's
// fast fail-over does):
//
//  1. Leader 1 appends b at offset n, which nobody copies, and crashes there
//     (leaderAfterAppend); b was never acknowledged nor committed.
//  2. Broker 2 is elected (epoch e2, ISR [2]) and appends c at offset n; it
//     crashes as it is about to answer (beforeProduceResponse). With ISR 1 below
//     min ISR 2, the HW never passed c: c is not committed either.
//  3. Broker 1 returns to an offline partition and is elected uncleanly
//     (epoch e3), still holding b at n, and takes new writes after it.
//  4. Broker 2 returns and asks where e2 ended. With truncation=epoch-kip101
//     broker 1, which never saw e2, answers with the start of e3, n+1;
//     broker 2 keeps c and fetches from n+1: offset n holds b on one replica
//     and c on the other, for good (LogMatching once broker 2 is back in the
//     ISR). With truncation=epoch the answer is (e1, n+1), broker 2 ends e1
//     at n, truncates c and copies b.
//
// Reference: KAFKA-6361, KIP-279.
func KAFKA6361(seed uint64, truncation settings.Truncation) run.Spec {
	cfg := truncationScenario(seed, 2, 2, truncation)
	cfg.Controller.UncleanLeaderElection = true
	cfg.Workload = run.Workload{Producers: 1, Consumers: 1, Acks: settings.AcksLeader, ProduceIntervalMs: 200, RequestTimeoutMs: 1000, FetchMaxWaitMs: 200}
	cfg.DurationMs = 20000
	cfg.SettleMs = 10000
	after := run.Trigger{AfterAcks: 3}
	cfg.Failpoints = []run.Failpoint{
		// Leader 1 stays down until broker 2 has led and crashed.
		{Name: fpname.LeaderAfterAppend, Term: `1*return("crash")`, Node: 1, When: after, DownMs: 5000},
		// Broker 2's first produce as leader is c: it crashes as it is about
		// to answer, and stays down until broker 1 leads again.
		{Name: fpname.BeforeProduceResp, Term: `1*return("crash")`, Node: 2, When: after, DownMs: 6000},
	}
	return cfg
}

// KAFKA7164 is KAFKA-7164, driven by scheduled faults: a replica copies from
// one epoch, misses the next, and the same leader returns in a newer epoch.
// Three brokers (partition 0's replicas in order 1, 2, 3), min ISR 1,
// acks=1:
//
//  1. Broker 1 leads epoch e1. Broker 2 is cut off for 800 ms (less than a
//     session or the lag time, so it stays alive and in the ISR): broker 3
//     copies the last records of e1 and broker 2 does not; none of them is
//     committed, as broker 2 is in the ISR.
//  2. At 4 s broker 1 crashes and broker 3 is cut off from everyone: it
//     still follows 1 in e1. Broker 2 is elected (e2) and writes new
//     records, committed, at the offsets where broker 3 holds e1's last.
//  3. Broker 1 returns, truncates as 2's follower and catches up; at 9 s
//     broker 2 crashes and broker 1 is elected (e3).
//  4. At 12 s broker 3 is reconnected; the controller tells it to follow 1
//     in e3. With truncation=epoch-no-bump its leader did not
//     change, so it skips truncation, keeps e1's last records and fetches
//     after them: it diverges from broker 1 (StrongIsr, LogMatching). With
//     truncation=epoch it asks where e1 ended and drops them.
//
// Reference: KAFKA-7164.
func KAFKA7164(seed uint64, truncation settings.Truncation) run.Spec {
	cfg := truncationScenario(seed, 3, 1, truncation)
	cfg.Workload = run.Workload{Producers: 1, Consumers: 1, Acks: settings.AcksLeader, ProduceIntervalMs: 50, RequestTimeoutMs: 1000, FetchMaxWaitMs: 200}
	cfg.DurationMs = 20000
	cfg.SettleMs = 10000
	cfg.Faults = []run.Fault{
		{When: run.Trigger{AtMs: 3200}, Kind: run.FaultIsolate, Node: 2, ForMs: 800},
		{When: run.Trigger{AtMs: 4000}, Kind: run.FaultCrash, Node: 1, ForMs: 2000},
		{When: run.Trigger{AtMs: 4000}, Kind: run.FaultIsolate, Node: 3, ForMs: 8000},
		{When: run.Trigger{AtMs: 9000}, Kind: run.FaultCrash, Node: 2, ForMs: 2000},
	}
	return cfg
}

// KAFKA14139 is KAFKA-14139 (fixed by KIP-903), driven by scheduled faults
// and failpoints: a leader's ISR expansion, decided on the fetches of one
// process of a follower, reaches the controller after that follower's
// machine came back on an empty disk. Three brokers (partition 0's replicas
// in order 1, 2, 3), min ISR 2, acks=all, the strong recipe otherwise;
// replica fetches carry one batch each, so that refilling an empty replica
// takes many round trips, as a real log of gigabytes takes minutes:
//
//  1. Broker 2 crashes at 3 s and is back 2 s later, once its session
//     has ended (a new process registers only then), under a new
//     incarnation, which takes it out of the ISR (KIP-903's restart rule,
//     kept by both runs). It catches up, and leader 1 proposes adding it
//     back; the proposal is held on its way to the controller for 2.5 s
//     (a controller slow to take it), longer than a session.
//  2. Meanwhile, at 5.3 s, broker 2's machine dies and comes back 200 ms
//     later on an empty disk (replace-disk); its third incarnation
//     registers once the second one's session has ended and asks leader
//     1 for the log from offset 0.
//  3. The proposal, naming broker 2's second incarnation, reaches the
//     controller, and leader 1 goes on sending broker 2 the log, a batch
//     a fetch, slowly (broker 2's links are slowed by 300 ms from 6 s).
//     As broker 2 writes its first batch after that (followerAfterAppend),
//     leader 1 crashes for 6 s.
//  4. With isrWithoutBrokerEpoch (Kafka before KIP-903) the controller
//     accepts the proposal: broker 2, nearly empty, is in the ISR
//     (StrongIsr), and once leader 1's session ends it is elected ahead of
//     broker 3, which holds every committed record. The committed records
//     are gone, and their offsets are written again (TrueHWNeverDecreases,
//     lost-write).
//     With KIP-903 the proposal is refused (INELIGIBLE_REPLICA), the ISR
//     stays {1, 3}, and broker 3 is elected with nothing lost.
//
// Reference: KAFKA-14139, KIP-903.
func KAFKA14139(seed uint64, isrWithoutBrokerEpoch bool) run.Spec {
	cfg := run.DefaultSpec(seed)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
	cfg.Broker.ReplicaFetchMaxBytes = 1 // at least one batch: one batch per fetch
	cfg.Controller.ISRWithoutBrokerEpoch = isrWithoutBrokerEpoch
	cfg.Workload = run.Workload{Producers: 1, Consumers: 1, Acks: settings.AcksAll, ProduceIntervalMs: 100,
		RequestTimeoutMs: 3000, FetchMaxWaitMs: 200, Idempotent: true, Retries: true, MaxInFlight: 5}
	cfg.DurationMs = 16000
	cfg.SettleMs = 10000
	cfg.Faults = []run.Fault{
		{When: run.Trigger{AtMs: 3000}, Kind: run.FaultCrash, Node: 2, ForMs: 2000},
		// Leader 1's proposals wait 2.5 s on their way to the controller,
		// out of their link's order (its heartbeats are not held).
		{When: run.Trigger{AtMs: 4000}, Kind: run.FaultMessages, Node: 1, ForMs: 4000,
			Messages: &run.MessageFault{Kinds: []string{"alter-partition"}, Peer: "controller", Direction: "out", Reorder: 1, HoldMs: 2500}},
		{When: run.Trigger{AtMs: 5300}, Kind: run.FaultReplaceDisk, Node: 2, ForMs: 200},
		// Broker 2's third process refills slowly (a log of gigabytes
		// takes minutes): it holds a few batches when the proposal lands.
		{When: run.Trigger{AtMs: 6000}, Kind: run.FaultSlow, Node: 2, ForMs: 6000, DelayMs: 300},
	}
	cfg.Failpoints = []run.Failpoint{
		// Broker 2's first write on its new disk after the proposal has
		// reached the controller (its third process registers at about
		// 6.8 s, the proposal arrives at about 7.5 s), before the leader
		// finds it lagging and takes it out again.
		{Name: fpname.FollowerAfterAppend, Term: `1*return("crash:1")`, Node: 2, When: run.Trigger{AtMs: 7600}, DownMs: 6000},
	}
	return cfg
}

// truncationScenario is where each truncation scenario starts: brokers
// brokers holding one partition of topic t on every one of them, min ISR
// minISR, and the truncation rule under test.
func truncationScenario(seed uint64, brokers, minISR int, truncation settings.Truncation) run.Spec {
	cfg := run.DefaultSpec(seed)
	cfg.Brokers = brokers
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: brokers}}
	cfg.Broker.MinInsyncReplicas = minISR
	cfg.Broker.Truncation = truncation
	return cfg
}
