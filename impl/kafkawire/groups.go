package kafkawire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator is not implemented yet: every group api is answered
// in its own shape with COORDINATOR_NOT_AVAILABLE, which clients treat as
// "no coordinator now" and retry, so a group consumer waits rather than
// fails. This file is the one place to replace when groups arrive.

var noCoordinator = kerr.CoordinatorNotAvailable

// groupResponse answers a group api request; nil for any other request.
func groupResponse(req kmsg.Request) kmsg.Response {
	code := noCoordinator.Code
	msg := kmsg.StringPtr("group coordination is not implemented by this broker")
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		resp := kmsg.NewPtrFindCoordinatorResponse()
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Port = code, msg, -1, -1
		for _, key := range r.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode, c.ErrorMessage = key, -1, -1, code, msg
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	case *kmsg.JoinGroupRequest:
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, r.MemberID
		return resp
	case *kmsg.SyncGroupRequest:
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = code
		return resp
	case *kmsg.HeartbeatRequest:
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = code
		return resp
	case *kmsg.LeaveGroupRequest:
		resp := kmsg.NewPtrLeaveGroupResponse()
		resp.ErrorCode = code
		for _, m := range r.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, code
			resp.Members = append(resp.Members, rm)
		}
		return resp
	case *kmsg.OffsetCommitRequest:
		resp := kmsg.NewPtrOffsetCommitResponse()
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.OffsetFetchRequest:
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.ErrorCode = code
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
	return nil
}
