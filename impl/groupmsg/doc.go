// Package groupmsg is the classic group protocol as a client speaks it to
// a group's coordinator: its requests (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit, OffsetFetch) and their responses, with how
// each is refused and how long a coordinator may hold it (Request), and
// the consumer protocol's subscriptions and assignments that members carry
// in them as bytes (consumer.go), with the assignors a group's leader
// computes them by (Range, RoundRobin; assign.go).
//
// It is impl/group's vocabulary, moved out of the coordinator so that a
// client compiles it without the coordinator: the harness's Kafka client
// (impl/kafkaclient) and the reference client send these requests, and a
// third party's build of the conformance kit compiles neither impl/group
// nor the broker. impl/group takes every type here under its old name
// (group.JoinRequest is an alias), and its Coordinator takes each kind of
// request by its own method (Handler; Request.Dispatch picks it), so that a
// new kind does not compile until the coordinator handles it. It imports
// only impl/kafka.
package groupmsg
