// Package kafka is the vocabulary every part of the reference shares, the
// way Kafka names it: a topic-partition, the state the controller publishes
// for a partition, and the errors a node answers with, each tied to its
// Kafka error code by one table (errors.go), with what a code tells a
// client (Retriable; CommitOutcomeUnknown, shared by the reference client
// and the checkers so that both read a commit's answer alike).
//
// It sits below every other package of impl/ and holds no behaviour of its
// own: what crosses a package line (a core's answer, a message between
// brokers, a response on the Kafka wire) uses these types, and is converted
// only at the wire. The Kafka wire server sends CodeOf(err); the Kafka
// client and the internal transport turn a code back into the same error.
//
// Every message between the reference's nodes is a Message (message.go):
// its Kind, and, by the interfaces it implements, its partition
// (Partitioned) and, for an answer, the correlation it answers and its
// error (Answer). Each kind has one registry row (Register), written by the
// package that defines the type: what answers it, whether it crosses
// between processes (impl/node registers those with gob), and the family a
// run file's messages fault selects it by. A node routes what it receives
// through a Handlers table (handlers.go) filled by Go type, so a handler
// gets its own type and a message no table knows is ignored in one place,
// not forgotten by one of many type switches.
package kafka
