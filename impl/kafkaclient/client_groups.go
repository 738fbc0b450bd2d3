package kafkaclient

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/groupmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// findCoordinator asks broker `to` for the group's coordinator, in either
// shape of FindCoordinator (one key before v4, a batch of one from v4).
func (c *Client) findCoordinator(ctx context.Context, to clientmsg.NodeID, m clientmsg.FindCoordinatorRequest) (kafka.Message, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = m.Group
	req.CoordinatorKeys = []string{m.Group}
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.FindCoordinatorResponse)
	out := clientmsg.FindCoordinatorResponse{Correlation: m.Correlation, Coordinator: -1}
	if resp.Version < 4 {
		out.Err = wireError(resp.ErrorCode, resp.ErrorMessage)
		if out.Err == nil {
			out.Coordinator = c.in(resp.NodeID)
		}
		return out, nil
	}
	for _, a := range resp.Coordinators {
		if a.Key != m.Group {
			continue
		}
		out.Err = wireError(a.ErrorCode, a.ErrorMessage)
		if out.Err == nil {
			out.Coordinator = c.in(a.NodeID)
		}
		return out, nil
	}
	return nil, fmt.Errorf("find coordinator of %q: the answer does not name the group", m.Group)
}

// groupRequest sends one group request (impl/groupmsg) as its Kafka
// request and turns the answer into the matching group response; Kafka
// error codes are error values as they are.
func (c *Client) groupRequest(ctx context.Context, to clientmsg.NodeID, r groupmsg.Request) (groupmsg.Response, error) {
	s := &groupSender{c: c, ctx: ctx, to: to}
	r.Dispatch(s, 0, 0)
	if s.resp == nil && s.err == nil {
		return nil, fmt.Errorf("kafkawire client: cannot send group request %T", r)
	}
	return s.resp, s.err
}

// groupSender sends each kind of group request by its own method: it is a
// groupmsg.Handler, so a new kind of group request does not compile until
// the client can send it. The id and time a coordinator takes are unused.
type groupSender struct {
	c    *Client
	ctx  context.Context
	to   clientmsg.NodeID
	resp groupmsg.Response
	err  error
}

// JoinGroup implements groupmsg.Handler.
func (s *groupSender) JoinGroup(_ uint64, r groupmsg.JoinRequest, _ int64) {
	s.resp, s.err = s.c.joinGroup(s.ctx, s.to, r)
}

// SyncGroup implements groupmsg.Handler.
func (s *groupSender) SyncGroup(_ uint64, r groupmsg.SyncRequest, _ int64) {
	s.resp, s.err = s.c.syncGroup(s.ctx, s.to, r)
}

// Heartbeat implements groupmsg.Handler.
func (s *groupSender) Heartbeat(_ uint64, r groupmsg.HeartbeatRequest, _ int64) {
	s.resp, s.err = s.c.heartbeat(s.ctx, s.to, r)
}

// LeaveGroup implements groupmsg.Handler.
func (s *groupSender) LeaveGroup(_ uint64, r groupmsg.LeaveRequest, _ int64) {
	s.resp, s.err = s.c.leaveGroup(s.ctx, s.to, r)
}

// OffsetCommit implements groupmsg.Handler.
func (s *groupSender) OffsetCommit(_ uint64, r groupmsg.CommitRequest, _ int64) {
	s.resp, s.err = s.c.offsetCommit(s.ctx, s.to, r)
}

// OffsetFetch implements groupmsg.Handler.
func (s *groupSender) OffsetFetch(_ uint64, r groupmsg.FetchOffsetsRequest, _ int64) {
	s.resp, s.err = s.c.offsetFetch(s.ctx, s.to, r)
}

func (c *Client) heartbeat(ctx context.Context, to clientmsg.NodeID, r groupmsg.HeartbeatRequest) (groupmsg.Response, error) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = r.Group, r.MemberID, r.Generation
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	return groupmsg.HeartbeatResponse{Err: kafka.ForCode(raw.(*kmsg.HeartbeatResponse).ErrorCode)}, nil
}

func (c *Client) joinGroup(ctx context.Context, to clientmsg.NodeID, r groupmsg.JoinRequest) (groupmsg.Response, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = r.Group, r.MemberID, r.ProtocolType
	req.SessionTimeoutMillis = int32(r.SessionTimeoutMs)
	req.RebalanceTimeoutMillis = int32(r.RebalanceTimeoutMs)
	if r.RebalanceTimeoutMs == 0 {
		req.RebalanceTimeoutMillis = int32(r.SessionTimeoutMs) // what 0 means to the coordinator
	}
	for _, p := range r.Protocols {
		rp := kmsg.NewJoinGroupRequestProtocol()
		rp.Name, rp.Metadata = p.Name, p.Metadata
		req.Protocols = append(req.Protocols, rp)
	}
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.JoinGroupResponse)
	out := groupmsg.JoinResponse{
		Err: kafka.ForCode(resp.ErrorCode), Generation: resp.Generation,
		LeaderID: resp.LeaderID, MemberID: resp.MemberID,
	}
	if resp.ProtocolType != nil {
		out.ProtocolType = *resp.ProtocolType
	}
	if resp.Protocol != nil {
		out.Protocol = *resp.Protocol
	}
	for _, m := range resp.Members {
		out.Members = append(out.Members, groupmsg.JoinMember{MemberID: m.MemberID, Metadata: m.ProtocolMetadata})
	}
	return out, nil
}

func (c *Client) syncGroup(ctx context.Context, to clientmsg.NodeID, r groupmsg.SyncRequest) (groupmsg.Response, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = r.Group, r.MemberID, r.Generation
	if r.ProtocolType != "" {
		req.ProtocolType = kmsg.StringPtr(r.ProtocolType)
	}
	if r.Protocol != "" {
		req.Protocol = kmsg.StringPtr(r.Protocol)
	}
	for id, a := range r.Assignments {
		ra := kmsg.NewSyncGroupRequestGroupAssignment()
		ra.MemberID, ra.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ra)
	}
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.SyncGroupResponse)
	out := groupmsg.SyncResponse{Err: kafka.ForCode(resp.ErrorCode), Assignment: resp.MemberAssignment}
	if resp.ProtocolType != nil {
		out.ProtocolType = *resp.ProtocolType
	}
	if resp.Protocol != nil {
		out.Protocol = *resp.Protocol
	}
	return out, nil
}

// leaveGroup sends a LeaveGroup; a broker answering below v3 takes one
// member only, so a request for several members is then refused.
func (c *Client) leaveGroup(ctx context.Context, to clientmsg.NodeID, r groupmsg.LeaveRequest) (groupmsg.Response, error) {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = r.Group
	if len(r.Members) > 0 {
		req.MemberID = r.Members[0] // v0-v2
	}
	for _, id := range r.Members {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		req.Members = append(req.Members, m)
	}
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.LeaveGroupResponse)
	out := groupmsg.LeaveResponse{Err: kafka.ForCode(resp.ErrorCode)}
	if resp.Version < 3 {
		if len(r.Members) > 1 {
			return nil, fmt.Errorf("leave group %q: the broker answered v%d, which takes one member", r.Group, resp.Version)
		}
		for _, id := range r.Members {
			out.Members = append(out.Members, groupmsg.LeaveMember{MemberID: id, Err: out.Err})
		}
		return out, nil
	}
	for _, m := range resp.Members {
		out.Members = append(out.Members, groupmsg.LeaveMember{MemberID: m.MemberID, Err: kafka.ForCode(m.ErrorCode)})
	}
	return out, nil
}

func (c *Client) offsetCommit(ctx context.Context, to clientmsg.NodeID, r groupmsg.CommitRequest) (groupmsg.Response, error) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = r.Group, r.MemberID, r.Generation
	index := map[string]int{}
	for _, o := range r.Offsets {
		i, ok := index[o.Topic]
		if !ok {
			i = len(req.Topics)
			index[o.Topic] = i
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = o.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = o.Partition, o.Offset, -1
		p.Metadata = kmsg.StringPtr(o.Metadata)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.OffsetCommitResponse)
	codes := map[kafka.TopicPartition]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes[kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = kafka.ForCode(p.ErrorCode)
		}
	}
	var out groupmsg.CommitResponse
	for _, o := range r.Offsets {
		code, ok := codes[o.TopicPartition]
		if !ok {
			return nil, fmt.Errorf("commit for %q: the answer does not name %s", r.Group, o.TopicPartition)
		}
		out.Partitions = append(out.Partitions, groupmsg.PartitionError{TopicPartition: o.TopicPartition, Err: code})
	}
	return out, nil
}

// offsetFetch asks for one group's offsets. A group-level error of v0-v1
// (carried by every partition) comes back as the response's Err; all of a
// group's offsets come back sorted by topic and partition.
func (c *Client) offsetFetch(ctx context.Context, to clientmsg.NodeID, r groupmsg.FetchOffsetsRequest) (groupmsg.Response, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = r.Group
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = r.Group
	if r.Partitions != nil {
		index := map[string]int{}
		req.Topics = []kmsg.OffsetFetchRequestTopic{}
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		for _, tp := range r.Partitions {
			i, ok := index[tp.Topic]
			if !ok {
				i = len(req.Topics)
				index[tp.Topic] = i
				req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: tp.Topic})
				g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: tp.Topic})
			}
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
			g.Topics[i].Partitions = append(g.Topics[i].Partitions, tp.Partition)
		}
	}
	req.Groups = append(req.Groups, g)
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.OffsetFetchResponse)
	out := groupmsg.FetchOffsetsResponse{Err: kafka.ForCode(resp.ErrorCode)}
	var got []groupmsg.FetchedOffset
	var codes []error
	if resp.Version >= 8 {
		found := false
		for _, rg := range resp.Groups {
			if rg.Group != r.Group {
				continue
			}
			found = true
			out.Err = kafka.ForCode(rg.ErrorCode)
			for _, t := range rg.Topics {
				for _, p := range t.Partitions {
					got = append(got, fetched(t.Topic, p.Partition, p.Offset, p.Metadata))
					codes = append(codes, kafka.ForCode(p.ErrorCode))
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("offset fetch for %q: the answer does not name the group", r.Group)
		}
	} else {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				got = append(got, fetched(t.Topic, p.Partition, p.Offset, p.Metadata))
				codes = append(codes, kafka.ForCode(p.ErrorCode))
			}
		}
	}
	for i, code := range codes {
		if code != nil {
			if out.Err == nil {
				out.Err = code // v0-v1 carry the group's error per partition
			}
			continue
		}
		out.Partitions = append(out.Partitions, got[i])
	}
	if out.Err != nil {
		out.Partitions = nil
	}
	if r.Partitions == nil {
		// groupmsg.FetchOffsetsResponse's order for "all"; Kafka promises none.
		slices.SortFunc(out.Partitions, func(a, b groupmsg.FetchedOffset) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
	}
	return out, nil
}

func fetched(topic string, partition int32, offset int64, metadata *string) groupmsg.FetchedOffset {
	f := groupmsg.FetchedOffset{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: partition}, Offset: offset}
	if metadata != nil {
		f.Metadata = *metadata
	}
	return f
}
