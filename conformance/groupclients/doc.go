// Package groupclients runs unmodified consumer groups of third-party
// Kafka clients (franz-go's kgo and IBM's sarama) against a three-broker
// reference cluster of impl/node, on real TCP and real files.
//
// The tests check what a user of a consumer group relies on: two members
// share a topic's partitions; when one member crashes (its connections cut,
// no LeaveGroup) the coordinator expires it, the group rebalances and the
// survivor reads on, so that every record is consumed at least once; and
// when the broker coordinating the group crashes, the offsets committed
// before (replicated in __consumer_offsets) are served by the new
// coordinator and a new member resumes from them. The package holds tests
// only:
//
//	go test ./conformance/groupclients -count=1
package groupclients
