// Package kafkawire is the Kafka wire-protocol server in front of one
// reference broker: it reads Kafka request frames from a client connection,
// turns each request into the broker's own client-plane messages
// (broker.ProduceRequest, broker.FetchRequest, ...), sends them through a
// Backend session, and turns the answers back into Kafka responses. The
// broker never sees the wire format: its errors are impl/kafka's, and this
// package sends their codes (kafka.CodeOf) and reads codes back into them
// (kafka.ForCode).
//
// # Connections
//
// One Session per connection. Requests are read, handled and answered one
// at a time, in order. A frame whose size is negative or over
// Server.MaxRequestBytes (default 100 MiB), or that does not parse, closes
// the connection. An ApiVersions request of a version newer than served gets
// the KIP-511 answer (v0, UNSUPPORTED_VERSION, ApiVersions' own range); any
// other api key or version not served closes the connection, as Kafka does,
// because the client could not parse an answer in a version it did not ask
// for.
//
// # Adding an api
//
// Each served api is one file holding its registry row (an api value: the
// kmsg key, the lowest and highest version served, and the handler), its
// handler, and its conversions between kmsg and the broker's messages:
// apiversions.go, metadata.go, createtopics.go, produce.go, fetch.go,
// listoffsets.go, epochs.go and initproducerid.go; the group apis share
// groups.go and groups_offsets.go. To add an api, write its file and list
// its row in the table in registry.go: that table is the whole registry.
// ParseRequest refuses a key or version it does not list, handle
// dispatches by the request's key through it, and ApiVersions answers with
// it. Then add the api to the list below.
//
// # Served apis and versions
//
//   - ApiVersions v0-3.
//   - Metadata v1-12, from the local broker's view. Brokers are the live
//     brokers with an advertised address (one without is left out). There
//     is no controller broker (the controller is its own node), so
//     ControllerID is the lowest live broker id listed. The cluster id is
//     ClusterID. Unknown topics get UNKNOWN_TOPIC_OR_PARTITION; topics are
//     never auto-created; topic ids are all zero and lookups by id fail.
//   - CreateTopics v0-7, forwarded to the controller. Partitions -1 means 1,
//     replication factor -1 means min(3, live brokers). Explicit replica
//     assignments get INVALID_REQUEST; of the topic configs
//     max.message.bytes, min.insync.replicas and
//     unclean.leader.election.enable are kept per topic (malformed:
//     INVALID_CONFIG), the others are ignored (those settings are
//     broker-wide). ValidateOnly checks arguments only.
//   - Produce v3-11: exactly one v2 record batch per partition per request,
//     since the broker appends one batch per ProduceRequest and splitting a
//     batch would break its sequence numbers; more gets INVALID_RECORD. The
//     batch's CRC32C is checked (CORRUPT_MESSAGE) and its records are
//     decompressed (gzip, snappy raw or xerial-framed, lz4 frames, zstd) up
//     to Server.MaxBatchBytes and decoded, to validate them, then dropped:
//     the broker keeps the batch's bytes (record.Batch.Wire), which alias
//     the request frame (never reused), and stores them as they came.
//     Transactional and control batches get INVALID_RECORD. acks=0 is
//     never answered; when the server itself refuses a partition of an
//     acks=0 produce it closes the connection, as Kafka does. The answer's
//     LogStartOffset is -1 (not reported). From v10 a partition refused
//     with NOT_LEADER_OR_FOLLOWER names the leader the broker knows, with
//     its epoch, and the leader's endpoint (KIP-951's CurrentLeader and
//     NodeEndpoints), so that clients move without a metadata round trip.
//   - Fetch v4-12. fetch.min.bytes and fetch.max.wait.ms apply to the whole
//     response: every partition is read once without waiting and, when that
//     is not enough, once more with the remaining wait. Batches go out as
//     they are stored, the producer's bytes (its codec) with the offset and
//     leader epoch the leader assigned;
//     LastStableOffset is the HW and LogStartOffset the leader's log start
//     offset, which retention moves; a fetch below it is
//     OFFSET_OUT_OF_RANGE. Fetch sessions (KIP-227) are not kept: the answer's session
//     id is 0, which makes clients send full fetches.
//   - ListOffsets v1-7: earliest (-2) is the log start offset, latest (-1)
//     is the HW; the
//     leader epoch is checked when given (KIP-320). Timestamp search is not
//     supported: any other timestamp gets offset -1, timestamp -1.
//   - OffsetForLeaderEpoch v2-4 (epochs.go; v0 and v1 went with Kafka 4.0,
//     KIP-896): the leader's epoch cache answers where an epoch ended (the
//     largest epoch at or below the one asked; -1 and -1 above its latest),
//     fenced by the current leader epoch unless that is -1; followers
//     answer NOT_LEADER_OR_FOLLOWER. Consumers ask it after a leader
//     change (KIP-320), and franz-go trusts the leader epochs of metadata
//     and of KIP-951's hints only from brokers that list it.
//   - InitProducerId v0-4 for idempotent producers. A transactional id gets
//     INVALID_REQUEST (transactions are not supported); a request carrying
//     its current producer id (KIP-360) gets a new producer id.
//   - Group apis (groups.go), served by the group coordinators the brokers
//     host on the leaders of the __consumer_offsets partitions (listed by
//     Metadata as internal). FindCoordinator v0-4 asks the local broker
//     for each key (v4 batches keys) and names the coordinator with its
//     advertised address; only group keys are served: a transaction key
//     gets INVALID_REQUEST. JoinGroup v0-9, SyncGroup v0-5, Heartbeat
//     v0-4, LeaveGroup v0-5 (one member before v3, a list from v3),
//     OffsetCommit v0-8 (v0 is a simple commit) and OffsetFetch v0-8 (v8
//     several groups; a nil topic list asks for all of the group's
//     offsets) go to the local broker, which answers NOT_COORDINATOR for
//     groups it does not coordinate. Error codes are the coordinator's, as
//     they are; protocol metadata and assignments pass through opaquely.
//     A join is awaited for its rebalance timeout plus slack, a sync for
//     the connection's last join of the group; a group request the broker
//     does not answer in time gets COORDINATOR_NOT_AVAILABLE, which sends
//     the client to FindCoordinator again. Before JoinGroup v4 a member
//     without an id gets one at once (the server rejoins for it, KIP-394).
//     Static membership (group instance ids), committed leader epochs and
//     RequireStable are ignored.
//
// # Not supported
//
// Transactions, timestamp search, fetch sessions, several batches per
// partition per produce, message format v0/v1, topic ids, static group
// membership, the KIP-848 consumer group protocol, SASL and TLS.
package kafkawire
