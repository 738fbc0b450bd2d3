package kafkawire

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupApisEveryVersion sends every served version of every group api
// to the server over a fake coordinator and checks each answer's shape: the
// coordinator's answer in the fields that version has.
func TestGroupApisEveryVersion(t *testing.T) {
	c := newWireClient(t)
	for key := int16(8); key <= 14; key++ {
		r := served[key]
		for v := r.min; v <= r.max; v++ {
			req := groupRequestAt(key, v)
			resp := c.roundTrip(req)
			name := kmsg.NameForKey(key)
			switch resp := resp.(type) {
			case *kmsg.FindCoordinatorResponse:
				if v >= 4 {
					require.Len(t, resp.Coordinators, 1, "%s v%d", name, v)
					co := resp.Coordinators[0]
					require.Equal(t, "g", co.Key)
					require.Zero(t, co.ErrorCode)
					require.Equal(t, []any{int32(1), "127.0.0.1", int32(9092)}, []any{co.NodeID, co.Host, co.Port})
				} else {
					require.Zero(t, resp.ErrorCode, "%s v%d", name, v)
					require.Equal(t, []any{int32(1), "127.0.0.1", int32(9092)}, []any{resp.NodeID, resp.Host, resp.Port})
				}
			case *kmsg.JoinGroupResponse:
				require.Zero(t, resp.ErrorCode, "%s v%d", name, v)
				require.Equal(t, int32(1), resp.Generation)
				require.Equal(t, "m-1", resp.MemberID)
				require.Equal(t, "m-1", resp.LeaderID)
				require.Equal(t, "range", *resp.Protocol)
				require.Len(t, resp.Members, 1)
				require.Equal(t, []byte("meta"), resp.Members[0].ProtocolMetadata, "opaque metadata passes through")
				if v >= 7 {
					require.Equal(t, "consumer", *resp.ProtocolType)
				}
			case *kmsg.SyncGroupResponse:
				require.Zero(t, resp.ErrorCode, "%s v%d", name, v)
				require.Equal(t, []byte("assigned"), resp.MemberAssignment, "opaque assignment passes through")
			case *kmsg.HeartbeatResponse:
				require.Zero(t, resp.ErrorCode, "%s v%d", name, v)
			case *kmsg.LeaveGroupResponse:
				require.Zero(t, resp.ErrorCode, "%s v%d", name, v)
				if v >= 3 {
					require.Len(t, resp.Members, 2)
					require.Equal(t, "m-2", resp.Members[1].MemberID)
					require.Zero(t, resp.Members[1].ErrorCode)
				}
			case *kmsg.OffsetCommitResponse:
				require.Len(t, resp.Topics, 2, "%s v%d", name, v)
				require.Equal(t, "t", resp.Topics[0].Topic)
				require.Len(t, resp.Topics[0].Partitions, 2)
				require.Equal(t, int32(1), resp.Topics[0].Partitions[1].Partition)
				require.Equal(t, "u", resp.Topics[1].Topic)
			case *kmsg.OffsetFetchResponse:
				if v >= 8 {
					require.Len(t, resp.Groups, 2, "%s v%d", name, v)
					require.Equal(t, "g", resp.Groups[0].Group)
					require.Equal(t, int64(5), resp.Groups[0].Topics[0].Partitions[0].Offset, "nil topics: all of the group's offsets")
					require.Equal(t, fakeElsewhere, resp.Groups[1].Group)
					require.Equal(t, int16(16), resp.Groups[1].ErrorCode)
				} else {
					require.Zero(t, resp.ErrorCode, "%s v%d", name, v)
					require.Len(t, resp.Topics, 1)
					require.Equal(t, int64(-1), resp.Topics[0].Partitions[0].Offset)
				}
			default:
				t.Fatalf("%s v%d: answered with %T", name, v, resp)
			}
		}
	}
}

// groupRequestAt is a realistic request of group api key at version v.
func groupRequestAt(key, v int16) kmsg.Request {
	var req kmsg.Request
	switch key {
	case 8:
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.MemberID, r.Generation = "g", "m-1", 1
		r.Topics = []kmsg.OffsetCommitRequestTopic{
			{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}, {Partition: 1, Offset: 4}}},
			{Topic: "u", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, Metadata: kmsg.StringPtr("x")}}},
		}
		req = r
	case 9:
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = "g"
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: fakeElsewhere, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
		req = r
	case 10:
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKey, r.CoordinatorKeys = "g", []string{"g"}
		req = r
	case 11:
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = "g", 10_000, 10_000, "consumer"
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("meta")}, {Name: "roundrobin"}}
		if v >= 4 {
			r.MemberID = "m-1" // the rejoin after MEMBER_ID_REQUIRED
		}
		req = r
	case 12:
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.MemberID, r.Generation = "g", "m-1", 1
		req = r
	case 13:
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group, r.MemberID = "g", "m-1"
		r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m-1"}, {MemberID: "m-2"}}
		req = r
	case 14:
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.MemberID, r.Generation = "g", "m-1", 1
		r.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m-1", MemberAssignment: []byte("assigned")}}
		req = r
	}
	req.SetVersion(v)
	return req
}

// TestFindCoordinatorEachKey checks that FindCoordinator v4 answers each
// key on its own, that a transaction key is refused (transactions are not
// supported) and that an unavailable or unreachable coordinator is
// COORDINATOR_NOT_AVAILABLE, which clients retry. Reference: KIP-699.
func TestFindCoordinatorEachKey(t *testing.T) {
	c := newWireClient(t)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{"g1", fakeNoCoordinator, "g2", fakeUnreachable}
	fr := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse)
	require.Len(t, fr.Coordinators, 4)
	require.Equal(t, int16(15), fr.Coordinators[3].ErrorCode, "a coordinator clients cannot reach")
	require.Equal(t, int32(-1), fr.Coordinators[3].NodeID)
	require.Equal(t, "g1", fr.Coordinators[0].Key)
	require.Zero(t, fr.Coordinators[0].ErrorCode)
	require.Equal(t, int32(1), fr.Coordinators[0].NodeID)
	require.Equal(t, int16(15), fr.Coordinators[1].ErrorCode)
	require.Equal(t, int32(-1), fr.Coordinators[1].NodeID)
	require.Zero(t, fr.Coordinators[2].ErrorCode)

	fc.CoordinatorType = 1
	fr = c.roundTrip(fc).(*kmsg.FindCoordinatorResponse)
	for _, co := range fr.Coordinators {
		require.Equal(t, int16(42), co.ErrorCode, "INVALID_REQUEST: no transactions")
	}

	old := kmsg.NewPtrFindCoordinatorRequest()
	old.SetVersion(2)
	old.CoordinatorKey = fakeNoCoordinator
	or := c.roundTrip(old).(*kmsg.FindCoordinatorResponse)
	require.Equal(t, int16(15), or.ErrorCode)
	require.NotNil(t, or.ErrorMessage)
}

// TestJoinGroupBeforeV4GetsAMemberIDAtOnce: a v0-v3 client does not know
// MEMBER_ID_REQUIRED, so its first join, without a member id, must come
// back with one and the group's answer. Reference: KIP-394.
func TestJoinGroupBeforeV4GetsAMemberIDAtOnce(t *testing.T) {
	c := newWireClient(t)
	for v := int16(0); v <= 9; v++ {
		j := groupRequestAt(11, v).(*kmsg.JoinGroupRequest)
		j.MemberID = ""
		resp := c.roundTrip(j).(*kmsg.JoinGroupResponse)
		if v < 4 {
			require.Zero(t, resp.ErrorCode, "v%d", v)
			require.Equal(t, "m-1", resp.MemberID)
			require.Equal(t, int32(1), resp.Generation)
		} else {
			require.Equal(t, int16(79), resp.ErrorCode, "v%d: MEMBER_ID_REQUIRED", v)
			require.Equal(t, "m-1", resp.MemberID)
		}
	}
}

// TestGroupRequestsElsewhereGetNotCoordinator: a broker that does not
// coordinate the group answers NOT_COORDINATOR in every response shape,
// which makes clients find the coordinator again.
func TestGroupRequestsElsewhereGetNotCoordinator(t *testing.T) {
	c := newWireClient(t)
	for key := int16(8); key <= 14; key++ {
		if key == 10 {
			continue
		}
		r := served[key]
		for _, v := range []int16{r.min, r.max} {
			req := groupRequestAt(key, v)
			setGroup(req, fakeElsewhere)
			var codes []int16
			switch resp := c.roundTrip(req).(type) {
			case *kmsg.JoinGroupResponse:
				codes = append(codes, resp.ErrorCode)
			case *kmsg.SyncGroupResponse:
				codes = append(codes, resp.ErrorCode)
			case *kmsg.HeartbeatResponse:
				codes = append(codes, resp.ErrorCode)
			case *kmsg.LeaveGroupResponse:
				codes = append(codes, resp.ErrorCode)
				require.Empty(t, resp.Members, "a group-level error has no member list")
			case *kmsg.OffsetCommitResponse:
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						codes = append(codes, p.ErrorCode)
					}
				}
			case *kmsg.OffsetFetchResponse:
				if v >= 8 {
					codes = append(codes, resp.Groups[0].ErrorCode)
				} else if v >= 2 {
					codes = append(codes, resp.ErrorCode)
				} else {
					for _, t := range resp.Topics {
						for _, p := range t.Partitions {
							codes = append(codes, p.ErrorCode)
						}
					}
				}
			}
			require.NotEmpty(t, codes, "%s v%d", kmsg.NameForKey(key), v)
			for _, code := range codes {
				require.Equal(t, int16(16), code, "%s v%d", kmsg.NameForKey(key), v)
			}
		}
	}
}

func setGroup(req kmsg.Request, g string) {
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		r.Group = g
	case *kmsg.SyncGroupRequest:
		r.Group = g
	case *kmsg.HeartbeatRequest:
		r.Group = g
	case *kmsg.LeaveGroupRequest:
		r.Group = g
	case *kmsg.OffsetCommitRequest:
		r.Group = g
	case *kmsg.OffsetFetchRequest:
		r.Group = g
		r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: g}}
	}
}
