package cases

import (
	"fmt"
	"slices"

	"github.com/watermarkhq/watermark/conformance/run"
)

// diskCases damage what brokers keep on disk, with the processes down:
// each recovers its log, finds the damage, and the cluster must lose no
// acknowledged record while an intact replica exists (spec/SEMANTICS.md,
// Durability, "Lost data").
var diskCases = []Case{
	{
		Name:    "damaged-log",
		Summary: "logs synced every 500 ms; one broker at a time, leader or follower, goes down and comes back with 8 bytes flipped in the middle of its synced log: it truncates at the damage, leads nothing it lost, and copies the rest again",
		Spec:    func(seed uint64) run.Spec { return damagedLogs(seed, 0) },
		Require: reached(run.SitDamagedLog),
	},
	{
		Name: "damaged-trusted-segment",
		Summary: "damaged-log with 2 KiB segments: the damage lands in a synced segment below the recovery point, which a start trusts without reading (as Kafka does); " +
			"the read that meets it crashes the broker, whose next start reads every segment, truncates at the damage and leads nothing it lost",
		Spec:    func(seed uint64) run.Spec { return damagedLogs(seed, 2048) },
		Require: reached(run.SitDamagedLog),
	},
	{
		Name:    "segment-roll-power-loss",
		Summary: "logs in 1 KiB segments, synced every second; one broker at a time loses power, often with a segment rolled since its last sync: recovery joins what each segment kept into one log with no gap, and nothing acknowledged is lost",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			// A segment rolls every ten batches or so, several times a
			// second: a power loss often finds the end of one segment and
			// the start of the next both unsynced.
			cfg.Broker.LogSegmentBytes = 1024
			cfg.Broker.LogIndexIntervalBytes = 256
			cfg.Broker.FlushIntervalMs = 1000
			// Rolled segments are synced with the checkpoints (Kafka's
			// background flush); every 5 s, Kafka's default, not with
			// each flush, so a flush is what has to cover them.
			cfg.Broker.HWCheckpointIntervalMs = 5000
			cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultPowerLoss}, IntervalMs: 2500, FaultMs: 1500, MaxFaulty: 1, PowerLossOnlyInSync: true}
			return cfg
		},
		Require: reached(run.SitRollPowerLoss),
	},
	{
		Name: "retention-follower-behind",
		Summary: "logs in 512-byte segments kept to 1 KiB, checked every 200 ms; followers crash and stay down for 4 s, long enough for the leader to delete past their end: " +
			"a fetch below the log start offset is OFFSET_OUT_OF_RANGE and moves the reader to it, a follower below its leader's log start empties its log and begins there, and nothing retention keeps is lost",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Broker.LogSegmentBytes = 512
			cfg.Broker.LogIndexIntervalBytes = 128
			cfg.Broker.LogRetentionBytes = 1024
			cfg.Broker.LogRetentionCheckIntervalMs = 200
			cfg.Nemesis = crashes(run.RoleFollower, 5000, 4000)
			return cfg
		},
		Require: reached(run.SitRetention, run.SitFetchBelowLogStart, run.SitFollowerReset),
	},
	{
		Name: "damaged-last-isr-member",
		Summary: "RF 3, min ISR 2, every append synced; both followers go down, the ISR shrinks to the leader, and the leader goes down and comes back with its log damaged (in its first, middle, last or any batch, by seed: the last looks like a torn write); " +
			"the follower that left the ISR last holds every committed record (an eligible leader replica, KIP-966) and leads: none is lost, none is truncated to the damaged log",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
			cfg.Broker.FlushEveryAppend = true
			session := cfg.Controller.SessionTimeoutMs
			back := int64(7000) + 2*session
			cfg.Faults = []run.Fault{
				// Broker 1 is t-0's preferred replica: it leads from the start.
				{When: run.Trigger{AtMs: 2000}, Kind: run.FaultCrash, Node: 3, ForMs: back - 2000},
				{When: run.Trigger{AtMs: 3000 + session}, Kind: run.FaultCrash, Node: 2, ForMs: back - 3000 - session},
				// The damaged leader comes back a second before the others:
				// alone, it must not lead what it lost.
				{When: run.Trigger{AtMs: 4000 + 2*session}, Kind: run.FaultDamageLog, Role: run.RoleLeader, ForMs: back - 5000 - 2*session,
					DamageAt: damageAtFor(seed)},
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			if err := reached(run.SitDamagedLastISR)(r); err != nil {
				return err
			}
			for _, n := range r.Notes {
				if n.Kind == run.NoteFault && n.Fault == run.FaultDamageLog {
					return electedAfter(r, n.AtMs)
				}
			}
			return fmt.Errorf("no log was damaged")
		},
	},
	{
		Name: "eligible-replica-lost-power",
		Summary: "the followers stop fetching one after the other; the second out, the one eligible leader replica (KIP-966), loses power, its unsynced log shortened where no checkpoint shows it, and the leader crashes: " +
			"a replica that restarted without syncing what it reported may not lead from the ELR; the partition waits for the leader",
		Spec: eligibleLostPower,
		Require: func(r *run.Result) error {
			shrunk := false
			for _, n := range r.Notes {
				switch {
				case n.Kind == run.NoteISR && n.AtMs < 7000 && slices.Equal(n.ISR, []int32{1}) && slices.Contains(n.OldISR, 2):
					shrunk = true
				case n.Kind == run.NoteElection && n.AtMs > 8000 && n.Leader != 1:
					return fmt.Errorf("broker %d led after the leader's crash: it lost power, and no replica but broker 1 is known to hold every committed record", n.Leader)
				}
			}
			if !shrunk || r.Stats.PowerLosses == 0 {
				return fmt.Errorf("broker 2 did not leave the ISR last and then lose power (left last: %v, power losses: %d)", shrunk, r.Stats.PowerLosses)
			}
			return nil
		},
	},
	{
		Name: "last-isr-unclean-restart",
		Summary: "both followers cut off until the ISR is the leader alone; it loses power with logs left to the OS and HW checkpoints every 30 s: only the one it wrote as its ISR shrank shows what it lost; " +
			"restarted uncleanly, it does not lead while a follower that left the ISR with every committed record (an eligible leader replica) can come back, and that one leads",
		Spec: func(seed uint64) run.Spec {
			cfg := onePartition(seed)
			cfg.Broker.HWCheckpointIntervalMs = 30_000
			// Partition 0's replicas are [1 2 3], led by broker 1.
			cfg.Faults = []run.Fault{
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultIsolate, Node: 2, ForMs: 7000},
				{When: run.Trigger{AtMs: 3000}, Kind: run.FaultIsolate, Node: 3, ForMs: 7000},
				{When: run.Trigger{AtMs: 7500}, Kind: run.FaultPowerLoss, Node: 1, ForMs: 1000},
			}
			return cfg
		},
		Require: func(r *run.Result) error {
			for _, n := range r.Notes {
				if n.Kind == run.NoteElection && n.AtMs > 7500 {
					if n.Leader == 1 {
						return fmt.Errorf("broker 1 led again at %d ms after its unclean restart, though eligible replicas held every committed record", n.AtMs)
					}
					return nil
				}
			}
			return fmt.Errorf("no replica led after broker 1's power loss")
		},
	},
}

// electedAfter requires an election after atMs: a partition whose only
// ISR member lost its data is led again by a replica that holds it.
func electedAfter(r *run.Result, atMs int64) error {
	for _, n := range r.Notes {
		if n.Kind == run.NoteElection && n.AtMs > atMs {
			return nil
		}
	}
	return fmt.Errorf("no replica led after the damage at %d ms: the partition stayed offline, though the follower that left the ISR last held every committed record (an eligible leader replica)", atMs)
}

// eligibleLostPower: the followers stop fetching, broker 3 first, so the
// leader drops 3 from the ISR (still at min ISR) and then 2 (below it: 2
// is an eligible leader replica); broker 2 loses power, which shortens its
// unsynced log where no checkpoint shows it (logs left to the OS, Kafka's
// default; HWs checkpointed every 10 s); then the leader crashes until the
// end of the workload. No replica is known to hold every committed record:
// the partition must wait for broker 1.
func eligibleLostPower(seed uint64) run.Spec {
	cfg := base(seed)
	cfg.Topics = []run.Topic{{Name: "t", Partitions: 1, ReplicationFactor: 3}}
	cfg.Broker.FlushIntervalMs = 0
	cfg.Broker.HWCheckpointIntervalMs = 10_000
	noFetch := &run.MessageFault{Kinds: []string{"replica-fetch"}, Direction: "out", Drop: 1}
	cfg.Faults = []run.Fault{
		{When: run.Trigger{AtMs: 1500}, Kind: run.FaultMessages, Node: 3, ForMs: 8500, Messages: noFetch},
		{When: run.Trigger{AtMs: 2500}, Kind: run.FaultMessages, Node: 2, ForMs: 7500, Messages: noFetch.Clone()},
		{When: run.Trigger{AtMs: 7000}, Kind: run.FaultPowerLoss, Node: 2, ForMs: 500},
		{When: run.Trigger{AtMs: 8000}, Kind: run.FaultCrash, Node: 1, ForMs: 12_000},
	}
	return cfg
}

// damagedLogs is damaged-log's run: logs synced every 500 ms, one broker
// at a time down and back with bytes flipped in its synced log, in
// segments of segmentBytes (0: Kafka's 1 GiB, so the damage is in the
// segment a start scans; small, it lands below the recovery point).
func damagedLogs(seed uint64, segmentBytes int64) run.Spec {
	cfg := base(seed)
	cfg.Broker.FlushIntervalMs = 500
	if segmentBytes > 0 {
		cfg.Broker.LogSegmentBytes = segmentBytes
		cfg.Broker.LogIndexIntervalBytes = segmentBytes / 4
	}
	cfg.Nemesis = run.Nemesis{Kinds: []run.FaultKind{run.FaultDamageLog, run.FaultDamageLog, run.FaultCrash}, IntervalMs: 3000, FaultMs: 1000, MaxFaulty: 1}
	return cfg
}
