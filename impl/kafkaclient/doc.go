// Package kafkaclient is the Kafka client the harness drives brokers
// with: Client speaks the reference's client-plane messages
// (impl/clientmsg: clientmsg.ProduceRequest, clientmsg.FetchRequest, ...,
// and impl/groupmsg's group requests) to any Kafka-compatible broker over
// its wire protocol, negotiating versions with ApiVersions (Handshake),
// and Conn pipelines requests on one connection in the order they were
// issued, as an idempotent producer needs. From impl/ it imports only
// those message packages, impl/kafka, impl/record and impl/wireformat,
// which it shares with the broker's wire server, impl/kafkawire: a third
// party's build of the conformance kit compiles the client, not the
// server, and none of the reference's cores.
package kafkaclient
