// Package spec states what watermark's checkers hold a broker to, as
// executable specifications written from the protocol's rules
// (spec/SEMANTICS.md, the KIPs it cites), never from the code they
// judge.
//
// The spec is the judge; impl/ is the accused. That is why spec/ imports
// nothing under impl/ (nor linearizability/, which builds on spec/): a rule
// copied from the implementation would agree with the implementation's bugs.
// When the spec and the reference broker disagree, the disagreement is read
// against spec/SEMANTICS.md, and one of the two is wrong.
//
// The partition log as clients may observe it (log.go) is a sequential
// specification: its state is the committed log of one partition, and Produce,
// Fetch and ListOffsets say which client observations that state allows and
// which states may follow. It is nondeterministic where the protocol is (a
// write whose outcome the client could not learn may or may not have taken
// effect), and every function is pure, so a linearizability checker
// (linearizability/, with porcupine) can search the orders in which a
// concurrent history's operations could have taken effect.
//
// Package spec/protocol is the other half: the replication protocol itself
// (replicas, controller, messages, faults) as an abstract state machine,
// with an explorer that checks the protocol invariants in every state
// reachable within bounds, and the transition check the simulator's trace
// validation uses. See spec/protocol/README.md.
package spec
