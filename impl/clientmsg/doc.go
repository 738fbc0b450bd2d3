// Package clientmsg is the client plane of the reference: the messages a
// client and a broker exchange (produce, fetch, list offsets, metadata,
// producer ids, the group plane's FindCoordinator and the envelope that
// carries impl/groupmsg's requests to a coordinator), each with its Kind,
// its correlation and how it is refused or fails, and its registry row
// (kafka.Register); and the NodeID that names every node and the Envelope
// every message of the reference travels in.
//
// It is a package of its own, not impl/kafka, because its messages hold
// record batches (impl/record) and a producer's acks (impl/settings),
// which impl/kafka, below every package of impl/, does not import; and
// not impl/broker, because a client must compile it without the broker:
// the reference client (impl/client) and the harness's Kafka client
// (impl/kafkaclient), which turns these messages into Kafka requests and
// their answers back, are what a third party's build of the conformance
// kit compiles. impl/broker takes every type here under its old name
// (broker.ProduceRequest is an alias) and keeps the control plane's
// messages (RegisterBroker, Heartbeat, StateUpdate, ShutdownAnswer), which
// only the reference's own nodes speak. It imports impl/kafka,
// impl/record, impl/settings and impl/groupmsg, nothing else of impl/.
package clientmsg
