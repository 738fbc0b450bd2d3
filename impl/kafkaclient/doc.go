// Package kafkaclient is the Kafka client the harness drives brokers
// with: Client speaks the reference broker's client-plane messages
// (broker.ProduceRequest, broker.FetchRequest, group requests, ...) to any
// Kafka-compatible broker over its wire protocol, negotiating versions
// with ApiVersions (Handshake), and Conn pipelines requests on one
// connection in the order they were issued, as an idempotent producer
// needs. It shares only impl/wireformat with the broker's wire server,
// impl/kafkawire: a third party's build of the conformance kit compiles
// the client, not the server.
package kafkaclient
