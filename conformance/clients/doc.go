// Package clients runs unmodified third-party Kafka clients (franz-go's kgo
// and IBM's sarama) against the reference brokers of impl/node, on real TCP
// and real files, and benchmarks the reference against franz-go's in-memory
// fake (kfake) with the same client.
//
// The tests check what a user of those clients relies on across a leader
// crash: an idempotent acks=all producer gets every record acknowledged,
// and a consumer reads each acknowledged record exactly once, in order per
// partition. The package holds tests and benchmarks only:
//
//	go test ./conformance/clients -count=1
//	go test ./conformance/clients -run '^$' -bench Produce -benchtime 20000x
package clients
