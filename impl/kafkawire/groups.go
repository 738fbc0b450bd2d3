package kafkawire

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// Group apis. FindCoordinator goes to the local broker, which names the
// leader of the group's __consumer_offsets partition; every other group
// request goes to the local broker as a broker.GroupRequest carrying the
// impl/group request, and the broker answers it itself when it hosts the
// group's coordinator, or with NOT_COORDINATOR, which sends the client back
// to FindCoordinator. error values are Kafka error codes and go on the
// wire as they are. Protocol metadata and assignments are opaque bytes here
// as at the coordinator.
//
// Static membership (KIP-345) is not supported: group instance ids are
// ignored, so a member with one is a dynamic member.

const (
	// groupSlack is added to the client-given time a coordinator may hold
	// a request (the rebalance timeout of a join), so that the server's
	// own wait never ends first.
	groupSlack = 5 * time.Second
	// defaultSyncWait bounds a SyncGroup on a connection that has not
	// joined the group (5 minutes is the Java consumer's rebalance timeout).
	defaultSyncWait = 5 * time.Minute
)

// askGroup sends each of reqs to the local broker at once and returns the
// answers in the same order; a request not answered within wait, or
// answered with another request's type, gets req.Refuse(
// COORDINATOR_NOT_AVAILABLE), so that a caller can rely on each answer's
// type. It fails only when ctx ends.
func (h *handler) askGroup(ctx context.Context, wait time.Duration, reqs ...group.Request) ([]group.Response, error) {
	out := make([]group.Response, len(reqs))
	index := map[uint64]int{}
	want := map[uint64]bool{}
	for i, r := range reqs {
		corr := h.send(h.s.Backend.NodeID(), func(corr uint64) kafka.Message {
			return broker.GroupRequest{Correlation: corr, Req: r}
		})
		index[corr], want[corr] = i, true
	}
	err := h.collect(ctx, want, time.Now().Add(wait), func(corr uint64, msg kafka.Message) bool {
		if a, ok := msg.(broker.GroupResponse); ok {
			out[index[corr]] = a.Resp
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	for i, r := range reqs {
		refused := r.Refuse(kafka.ErrCoordinatorNotAvailable)
		if out[i] == nil || reflect.TypeOf(out[i]) != reflect.TypeOf(refused) {
			out[i] = refused
		}
	}
	return out, nil
}

// findCoordinatorAPI serves FindCoordinator v0-4.
var findCoordinatorAPI = api{key: int16(kmsg.FindCoordinator), min: 0, max: 4, serve: withBody((*handler).findCoordinator)}

// findCoordinator answers each key (one before v4, a list from v4) with
// the leader of the key's offsets partition, as the local broker sees it.
// Only group keys (type 0) are served: transactions are not supported, so
// a transaction key gets INVALID_REQUEST, as does an unknown key type.
func (h *handler) findCoordinator(ctx context.Context, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	answers := make([]kmsg.FindCoordinatorResponseCoordinator, len(keys))
	pending := map[uint64]int{}
	want := map[uint64]bool{}
	for i, key := range keys {
		a := kmsg.NewFindCoordinatorResponseCoordinator()
		a.Key, a.NodeID, a.Port = key, -1, -1
		answers[i] = a
		switch req.CoordinatorType {
		case 0:
		case 1:
			a := &answers[i]
			a.ErrorCode, a.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("transactions are not supported by this broker")
			continue
		default:
			a := &answers[i]
			a.ErrorCode, a.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("unknown coordinator type")
			continue
		}
		corr := h.send(h.s.Backend.NodeID(), func(corr uint64) kafka.Message {
			return broker.FindCoordinatorRequest{Correlation: corr, Group: key}
		})
		pending[corr], want[corr] = i, true
	}
	found := false
	err := h.collect(ctx, want, time.Now().Add(backendTimeout), func(corr uint64, msg kafka.Message) bool {
		a := &answers[pending[corr]]
		m, ok := msg.(broker.FindCoordinatorResponse)
		switch {
		case !ok:
			a.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case m.Err != nil:
			a.ErrorCode, a.ErrorMessage = kafka.CodeOf(m.Err), errorMessage(m.Err)
		default:
			a.NodeID = m.Coordinator
			found = true
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	for corr := range want { // no answer in time
		a := &answers[pending[corr]]
		a.ErrorCode, a.ErrorMessage = kerr.CoordinatorNotAvailable.Code, errorMessage(errTimedOut)
	}
	if found {
		m, err := h.brokerMetadata(ctx)
		if err != nil {
			return nil, err
		}
		for i := range answers {
			a := &answers[i]
			if a.ErrorCode != 0 || a.NodeID < 0 {
				continue
			}
			host, port, ok := splitAddress(m.Addresses[a.NodeID])
			if !ok || !slices.Contains(m.LiveBrokers, a.NodeID) {
				// A coordinator clients cannot reach (one Metadata does
				// not list) is none to them.
				a.NodeID, a.ErrorCode = -1, kerr.CoordinatorNotAvailable.Code
				a.ErrorMessage = kmsg.StringPtr("the coordinator is not a live broker with an address")
				continue
			}
			a.Host, a.Port = host, port
		}
	}
	resp := kmsg.NewPtrFindCoordinatorResponse()
	if req.Version >= 4 {
		resp.Coordinators = answers
		return resp, nil
	}
	a := answers[0]
	resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = a.ErrorCode, a.ErrorMessage, a.NodeID, a.Host, a.Port
	return resp, nil
}

// joinGroupAPI serves JoinGroup v0-9; the member's client id is the
// request header's.
var joinGroupAPI = api{key: int16(kmsg.JoinGroup), min: 0, max: 9, serve: func(h *handler, ctx context.Context, req *Request) (kmsg.Response, error) {
	clientID := ""
	if req.ClientID != nil {
		clientID = *req.ClientID
	}
	return h.joinGroup(ctx, req.Body.(*kmsg.JoinGroupRequest), clientID)
}}

// joinGroup forwards a JoinGroup. The coordinator may hold it until the
// rebalance timeout (the session timeout before v1) while other members
// join, so the wait is that plus slack. Before v4 a member without an id
// is given one at once (KIP-394 came with v4): when the coordinator asks
// for a rejoin with the id it chose, the join is sent again with it.
func (h *handler) joinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, clientID string) (kmsg.Response, error) {
	j := group.JoinRequest{
		Group:              req.Group,
		MemberID:           req.MemberID,
		ClientID:           clientID,
		SessionTimeoutMs:   int64(req.SessionTimeoutMillis),
		RebalanceTimeoutMs: int64(req.RebalanceTimeoutMillis),
		ProtocolType:       req.ProtocolType,
	}
	if req.Version < 1 || j.RebalanceTimeoutMs < 0 {
		j.RebalanceTimeoutMs = 0 // the session timeout, as v0 means
	}
	for _, p := range req.Protocols {
		j.Protocols = append(j.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	hold := max(j.RebalanceTimeoutMs, j.SessionTimeoutMs, 0)
	wait := time.Duration(hold)*time.Millisecond + groupSlack
	h.rememberRebalance(req.Group, wait)
	answers, err := h.askGroup(ctx, wait, j)
	if err != nil {
		return nil, err
	}
	a := answers[0].(group.JoinResponse)
	if req.Version < 4 && j.MemberID == "" && errors.Is(a.Err, kafka.ErrMemberIDRequired) && a.MemberID != "" {
		j.MemberID = a.MemberID
		if answers, err = h.askGroup(ctx, wait, j); err != nil {
			return nil, err
		}
		a = answers[0].(group.JoinResponse)
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode, resp.Generation = kafka.CodeOf(a.Err), a.Generation
	resp.LeaderID, resp.MemberID = a.LeaderID, a.MemberID
	if a.ProtocolType != "" {
		resp.ProtocolType = kmsg.StringPtr(a.ProtocolType)
	}
	if a.Protocol != "" || a.Err == nil {
		resp.Protocol = kmsg.StringPtr(a.Protocol)
	}
	for _, m := range a.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.ProtocolMetadata = m.MemberID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

// rememberRebalance keeps how long a join of g may be held on this
// connection: a SyncGroup that follows may be held as long (a follower's
// sync waits for the leader's assignment).
func (h *handler) rememberRebalance(g string, wait time.Duration) {
	if h.rebalance == nil {
		h.rebalance = map[string]time.Duration{}
	}
	if len(h.rebalance) > 1024 { // a connection joins a handful of groups
		clear(h.rebalance)
	}
	h.rebalance[g] = wait
}

// syncGroupAPI serves SyncGroup v0-5.
var syncGroupAPI = api{key: int16(kmsg.SyncGroup), min: 0, max: 5, serve: withBody((*handler).syncGroup)}

// syncGroup forwards a SyncGroup; the leader's assignments pass through.
func (h *handler) syncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	s := group.SyncRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	if req.ProtocolType != nil {
		s.ProtocolType = *req.ProtocolType
	}
	if req.Protocol != nil {
		s.Protocol = *req.Protocol
	}
	if len(req.GroupAssignment) > 0 {
		s.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			s.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	wait, ok := h.rebalance[req.Group]
	if !ok {
		wait = defaultSyncWait
	}
	answers, err := h.askGroup(ctx, wait, s)
	if err != nil {
		return nil, err
	}
	a := answers[0].(group.SyncResponse)
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode, resp.MemberAssignment = kafka.CodeOf(a.Err), a.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	if a.ProtocolType != "" {
		resp.ProtocolType = kmsg.StringPtr(a.ProtocolType)
	}
	if a.Protocol != "" {
		resp.Protocol = kmsg.StringPtr(a.Protocol)
	}
	return resp, nil
}

// heartbeatAPI serves Heartbeat v0-4.
var heartbeatAPI = api{key: int16(kmsg.Heartbeat), min: 0, max: 4, serve: withBody((*handler).heartbeat)}

func (h *handler) heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	answers, err := h.askGroup(ctx, backendTimeout, group.HeartbeatRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation})
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = kafka.CodeOf(answers[0].(group.HeartbeatResponse).Err)
	return resp, nil
}

// leaveGroupAPI serves LeaveGroup v0-5.
var leaveGroupAPI = api{key: int16(kmsg.LeaveGroup), min: 0, max: 5, serve: withBody((*handler).leaveGroup)}

// leaveGroup forwards a LeaveGroup: one member before v3, a list from v3.
// Before v3 the member's own error is the response's error, as Kafka
// answers those versions.
func (h *handler) leaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	l := group.LeaveRequest{Group: req.Group}
	if req.Version < 3 {
		l.Members = []string{req.MemberID}
	} else {
		for _, m := range req.Members {
			l.Members = append(l.Members, m.MemberID)
		}
	}
	answers, err := h.askGroup(ctx, backendTimeout, l)
	if err != nil {
		return nil, err
	}
	a := answers[0].(group.LeaveResponse)
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.ErrorCode = kafka.CodeOf(a.Err)
	if req.Version < 3 {
		if a.Err == nil && len(a.Members) > 0 {
			resp.ErrorCode = kafka.CodeOf(a.Members[0].Err)
		}
		return resp, nil
	}
	if a.Err != nil {
		return resp, nil // a group-level error has no member list, as Kafka answers
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		rm.ErrorCode = kafka.CodeOf(kafka.ErrUnknownMemberID) // unless the coordinator answered for it
		if i < len(a.Members) && a.Members[i].MemberID == m.MemberID {
			rm.ErrorCode = kafka.CodeOf(a.Members[i].Err)
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
