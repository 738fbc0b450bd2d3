package groupmsg

import "errors"

// Request is a request to a group coordinator. Every one names its group,
// which picks the coordinator (impl/group's PartitionFor), says how it is
// refused, and is handed to the coordinator's method for it by Dispatch;
// a new request type that misses one of these does not compile where a
// Request is wanted.
type Request interface {
	GroupName() string
	// Refuse is the request's answer with every error in it set to err:
	// what a broker that does not coordinate the group answers, or a wire
	// server whose broker did not answer in time.
	Refuse(err error) Response
	// HoldMs is how long the coordinator may hold the request before it
	// answers, which a client's timeout for it must add: a JoinGroup up to
	// its rebalance timeout (its session timeout, if longer); a SyncGroup
	// until the leader's assignment, which the rebalance bounds
	// (UntilRebalance); 0 for a request answered at once.
	HoldMs() int64
	// Dispatch hands the request, under the caller's id, to h's method
	// for its type (impl/group's Coordinator.Handle).
	Dispatch(h Handler, id uint64, now int64)
}

// Handler takes every kind of Request, each by its own method: impl/group's
// Coordinator. A new kind of request adds its method here and calls it
// from its Dispatch, and the compiler then asks the coordinator for it
// (impl/group asserts that *Coordinator is a Handler): what the sealed
// interface's unexported method did when the requests lived in impl/group,
// without a type switch.
type Handler interface {
	JoinGroup(id uint64, req JoinRequest, now int64)
	SyncGroup(id uint64, req SyncRequest, now int64)
	Heartbeat(id uint64, req HeartbeatRequest, now int64)
	LeaveGroup(id uint64, req LeaveRequest, now int64)
	OffsetCommit(id uint64, req CommitRequest, now int64)
	OffsetFetch(id uint64, req FetchOffsetsRequest, now int64)
}

// Response is a coordinator's answer to a Request: JoinResponse,
// SyncResponse, HeartbeatResponse, LeaveResponse, CommitResponse or
// FetchOffsetsResponse.
type Response interface {
	// Failure is the answer's error, nil when none; a CommitResponse's
	// joins its partitions' errors.
	Failure() error
}

// UntilRebalance is the HoldMs of a request held until the rebalance in
// progress ends, however long the JoinGroup before it allowed.
const UntilRebalance int64 = -1

// HoldMs implements Request.
func (r JoinRequest) HoldMs() int64 { return max(r.RebalanceTimeoutMs, r.SessionTimeoutMs) }

// HoldMs implements Request.
func (SyncRequest) HoldMs() int64 { return UntilRebalance }

// HoldMs implements Request.
func (HeartbeatRequest) HoldMs() int64 { return 0 }

// HoldMs implements Request.
func (LeaveRequest) HoldMs() int64 { return 0 }

// HoldMs implements Request.
func (CommitRequest) HoldMs() int64 { return 0 }

// HoldMs implements Request.
func (FetchOffsetsRequest) HoldMs() int64 { return 0 }

// GroupName implements Request.
func (r JoinRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r SyncRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r HeartbeatRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r LeaveRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r CommitRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r FetchOffsetsRequest) GroupName() string { return r.Group }

// Refuse implements Request: no member id is assigned, and the
// generation is -1.
func (r JoinRequest) Refuse(err error) Response {
	return JoinResponse{Err: err, MemberID: r.MemberID, Generation: -1}
}

// Refuse implements Request.
func (r SyncRequest) Refuse(err error) Response { return SyncResponse{Err: err} }

// Refuse implements Request.
func (r HeartbeatRequest) Refuse(err error) Response { return HeartbeatResponse{Err: err} }

// Refuse implements Request: a group-level error, with no member list.
func (r LeaveRequest) Refuse(err error) Response { return LeaveResponse{Err: err} }

// Refuse implements Request: every partition of the commit gets err.
func (r CommitRequest) Refuse(err error) Response {
	var resp CommitResponse
	for _, o := range r.Offsets {
		resp.Partitions = append(resp.Partitions, PartitionError{TopicPartition: o.TopicPartition, Err: err})
	}
	return resp
}

// Refuse implements Request.
func (r FetchOffsetsRequest) Refuse(err error) Response { return FetchOffsetsResponse{Err: err} }

// Dispatch implements Request.
func (r JoinRequest) Dispatch(h Handler, id uint64, now int64) { h.JoinGroup(id, r, now) }

// Dispatch implements Request.
func (r SyncRequest) Dispatch(h Handler, id uint64, now int64) { h.SyncGroup(id, r, now) }

// Dispatch implements Request.
func (r HeartbeatRequest) Dispatch(h Handler, id uint64, now int64) { h.Heartbeat(id, r, now) }

// Dispatch implements Request.
func (r LeaveRequest) Dispatch(h Handler, id uint64, now int64) { h.LeaveGroup(id, r, now) }

// Dispatch implements Request.
func (r CommitRequest) Dispatch(h Handler, id uint64, now int64) { h.OffsetCommit(id, r, now) }

// Dispatch implements Request.
func (r FetchOffsetsRequest) Dispatch(h Handler, id uint64, now int64) { h.OffsetFetch(id, r, now) }

// Failure implements Response.
func (r JoinResponse) Failure() error { return r.Err }

// Failure implements Response.
func (r SyncResponse) Failure() error { return r.Err }

// Failure implements Response.
func (r HeartbeatResponse) Failure() error { return r.Err }

// Failure implements Response: the group-level error (each member's
// outcome is in Members).
func (r LeaveResponse) Failure() error { return r.Err }

// Failure implements Response: the partitions' errors, joined.
func (r CommitResponse) Failure() error {
	var err error
	for _, p := range r.Partitions {
		err = errors.Join(err, p.Err)
	}
	return err
}

// Failure implements Response.
func (r FetchOffsetsResponse) Failure() error { return r.Err }

// AnswerAs is resp as the answer type T that req expects; when resp is
// missing or of another type, req refused with err (which must then be
// of type T: a Request's Refuse answers with its own response type).
func AnswerAs[T Response](req Request, resp Response, err error) T {
	if r, ok := resp.(T); ok {
		return r
	}
	return req.Refuse(err).(T)
}
