// Package sim runs the reference broker as a whole cluster in one goroutine:
// the controller, N brokers, the clients, the network, the disks and the
// clock, with every random choice drawn from one seed. The same run.Spec runs
// the same way, event for event, so any failure replays exactly.
//
// A fault strikes as its definition says (run.Def: one per kind, shared
// with the live runner), through the simulator's primitives (striker in
// inject.go): crashes, power losses and replaced disks on its simulated
// machines, pauses, isolations, slowness and single-message faults on its
// network.
//
// After every step (one delivered message, one timer) the simulator checks
// the protocol invariants of spec/SEMANTICS.md on the cluster's global state and
// stops at the first violation, keeping the steps that led to it.
package sim
