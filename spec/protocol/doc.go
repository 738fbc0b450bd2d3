// Package protocol is Kafka's replication protocol for one partition as an
// abstract state machine, small enough to explore every reachable state
// within bounds, and the explorer that does it.
//
// It is written from spec/SEMANTICS.md and the KIPs it cites
// (KIP-101, KIP-279, KIP-320, KIP-497, KIP-903), never from impl/: it is the
// judge of the reference broker, not a copy of it.
//
// # The model
//
// A State holds N replicas and a controller. A replica has a log of entries
// (a record value and the leader epoch that wrote it), an LEO (the log's
// length), a high watermark, the leader epoch it acts in, and, while it
// leads, what it knows of each follower's LEO and the ISR it believes in.
// The epoch cache (KIP-101) is not stored: it is the first offset of each
// epoch in the log, plus the current epoch at the LEO on a leader that has
// not written in it yet, which is what Kafka's cache holds after truncation
// keeps it in step with the log.
//
// The controller holds the leader, the leader epoch, the ISR, which brokers
// it believes alive and each broker's incarnation (KIP-903's broker epoch).
//
// Replica fetches, their answers, OffsetsForLeaderEpoch and its answers are
// messages in a bag: any may be delivered in any order, or lost. A follower
// times out and asks again, and a message sent by a process before it
// crashed can still arrive after it restarted. What the controller tells
// brokers (their role and epoch) arrives late and may skip epochs: a replica
// learns only the latest state.
//
// Faults, each bounded: a process crash (the log survives, as the page cache
// does), a power loss (the log keeps a prefix: what was synced), and a
// controller declaring a running broker dead (a pause or partition longer
// than the session timeout). A crashed broker restarts with a new
// incarnation.
//
// Time is abstracted away. Anything a timer allows eventually (a follower
// dropping out of the ISR after replica.lag.time.max.ms, a request timing
// out, a session expiring) is allowed at any step. That makes the model a
// superset of every timing, so "no violation" covers them all.
//
// # Steps
//
// Step(state, action) is the one transition function: it returns the next
// state, or an error saying why the action is not enabled. The explorer
// enumerates actions; trace validation (see Validate) replays the actions a
// broker's run reports and checks each is enabled and leads to the state the
// broker reports. Actions carry every choice (which message, which new
// leader, how much of a fetch answer to append), so Step is deterministic.
//
// # Variants
//
// The protocol variants of spec/SEMANTICS.md are parameters (Variant): how a
// follower truncates (to its HW, KIP-101 without KIP-279's end-offset rule,
// KIP-101+279+320, or without truncation on an epoch bump of the same leader
// as before KAFKA-7164), unclean election, whether HW may advance while the
// ISR is below min.insync.replicas, and whether a restarted broker keeps its
// ISR place (before KIP-903).
package protocol
