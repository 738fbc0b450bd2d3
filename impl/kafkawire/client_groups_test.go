package kafkawire

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/group"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/kafkaclient"
)

// findCoordinator asks through cl until the offsets topic exists and the
// group's coordinator is named.
func findCoordinator(t *testing.T, cl *kafkaclient.Client, g string) broker.NodeID {
	t.Helper()
	var coord broker.NodeID
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := cl.Exchange(ctx, testBrokerID, broker.FindCoordinatorRequest{Correlation: 9, Group: g})
		require.NoError(t, err)
		a := out.(broker.FindCoordinatorResponse)
		require.Equal(t, uint64(9), a.Correlation)
		if errors.Is(a.Err, kafka.ErrCoordinatorNotAvailable) {
			return false
		}
		require.NoError(t, a.Err)
		coord = broker.NodeID(a.Coordinator)
		return true
	}, 30*time.Second, 50*time.Millisecond, "no coordinator for %s", g)
	return coord
}

// TestClientGroupExchanges drives one group through its whole life with
// the kafkaclient.Client's conversions against the real broker behind the server, at
// the newest versions both sides serve and at the oldest: each step is a
// group request and the group response the coordinator must give.
func TestClientGroupExchanges(t *testing.T) {
	c := startTestCluster(t)
	oldest := kversion.Stable()
	for key := int16(8); key <= 14; key++ {
		oldest.SetMaxKeyVersion(key, served[key].min)
	}
	// OffsetCommit v0 has no member: it is a simple commit, which a group
	// with members refuses (UNKNOWN_MEMBER_ID).
	oldest.SetMaxKeyVersion(8, 1)
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"newest", nil},
		{"oldest", []kgo.Opt{kgo.MaxVersions(oldest)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := kafkaclient.NewClient([]string{c.addr}, tc.opts...)
			require.NoError(t, err)
			defer cl.Close()
			g := "group-" + tc.name
			coord := findCoordinator(t, cl, g)
			require.Equal(t, testBrokerID, coord)

			exchangeGroupLifecycle(t, cl, coord, g, tc.name == "newest")
		})
	}
}

// exchangeGroupLifecycle drives group g through one member's whole life
// with cl's conversions against coordinator coord: each step is a group
// request and the group response the coordinator must give. modern says
// the versions are new enough for KIP-394 (JoinGroup v4+) and a nil topic
// list (OffsetFetch v2+). Topics "t" (two partitions) and "u" may need to
// exist at the broker.
func exchangeGroupLifecycle(t *testing.T, cl *kafkaclient.Client, coord broker.NodeID, g string, modern bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ask := func(req group.Request) group.Response {
		t.Helper()
		out, err := cl.Exchange(ctx, coord, broker.GroupRequest{Correlation: 3, Req: req})
		require.NoError(t, err)
		require.Equal(t, uint64(3), out.(broker.GroupResponse).Correlation)
		return out.(broker.GroupResponse).Resp
	}
	tp0 := kafka.TopicPartition{Topic: "t", Partition: 0}
	tp1 := kafka.TopicPartition{Topic: "t", Partition: 1}
	join := group.JoinRequest{Group: g, ClientID: "c", SessionTimeoutMs: 10_000, RebalanceTimeoutMs: 10_000,
		ProtocolType: "consumer", Protocols: []group.Protocol{{Name: "range", Metadata: []byte{1, 2, 3}}}}

	first := ask(join).(group.JoinResponse)
	member := first.MemberID
	require.NotEmpty(t, member)
	if modern {
		require.Equal(t, kafka.ErrMemberIDRequired, first.Err, "KIP-394 from JoinGroup v4")
		join.MemberID = member
		first = ask(join).(group.JoinResponse)
	}
	require.Equal(t, nil, first.Err)
	require.Equal(t, member, first.MemberID)
	require.Equal(t, member, first.LeaderID)
	require.Equal(t, "range", first.Protocol)
	require.Equal(t, []group.JoinMember{{MemberID: member, Metadata: []byte{1, 2, 3}}}, first.Members)
	gen := first.Generation

	steps := []struct {
		name string
		req  group.Request
		want group.Response
	}{
		{"sync", group.SyncRequest{Group: g, MemberID: member, Generation: gen, Assignments: map[string][]byte{member: {9, 9}}},
			group.SyncResponse{Assignment: []byte{9, 9}}},
		{"heartbeat", group.HeartbeatRequest{Group: g, MemberID: member, Generation: gen}, group.HeartbeatResponse{}},
		{"heartbeat of an old generation", group.HeartbeatRequest{Group: g, MemberID: member, Generation: gen - 1},
			group.HeartbeatResponse{Err: kafka.ErrIllegalGeneration}},
		{"commit", group.CommitRequest{Group: g, MemberID: member, Generation: gen, Offsets: []group.OffsetToCommit{
			{TopicPartition: tp0, Offset: 7, Metadata: "m"}, {TopicPartition: tp1, Offset: 8}}},
			group.CommitResponse{Partitions: []group.PartitionError{{TopicPartition: tp0}, {TopicPartition: tp1}}}},
		{"commit of an unknown member", group.CommitRequest{Group: g, MemberID: "nobody", Generation: gen, Offsets: []group.OffsetToCommit{
			{TopicPartition: tp0, Offset: 1}}},
			group.CommitResponse{Partitions: []group.PartitionError{{TopicPartition: tp0, Err: kafka.ErrUnknownMemberID}}}},
		{"fetch named partitions", group.FetchOffsetsRequest{Group: g, Partitions: []kafka.TopicPartition{tp1, {Topic: "u"}}},
			group.FetchOffsetsResponse{Partitions: []group.FetchedOffset{{TopicPartition: tp1, Offset: 8}, {TopicPartition: kafka.TopicPartition{Topic: "u"}, Offset: -1}}}},
		{"leave", group.LeaveRequest{Group: g, Members: []string{member}},
			group.LeaveResponse{Members: []group.LeaveMember{{MemberID: member}}}},
		{"heartbeat after leaving", group.HeartbeatRequest{Group: g, MemberID: member, Generation: gen},
			group.HeartbeatResponse{Err: kafka.ErrUnknownMemberID}},
	}
	if modern { // a nil topic list needs OffsetFetch v2+
		steps = append(steps, struct {
			name string
			req  group.Request
			want group.Response
		}{"fetch all", group.FetchOffsetsRequest{Group: g},
			group.FetchOffsetsResponse{Partitions: []group.FetchedOffset{{TopicPartition: tp0, Offset: 7, Metadata: "m"}, {TopicPartition: tp1, Offset: 8}}}})
	}
	for _, s := range steps {
		got := ask(s.req)
		if want, ok := s.want.(group.SyncResponse); ok {
			got := got.(group.SyncResponse)
			require.Equal(t, want.Err, got.Err, s.name)
			require.Equal(t, want.Assignment, got.Assignment, s.name)
			continue
		}
		require.Equal(t, s.want, got, s.name)
	}
}

// TestClientGroupElsewhere: the kafkaclient.Client turns NOT_COORDINATOR into the
// error the harness branches on, and COORDINATOR_NOT_AVAILABLE into
// kafka.ErrCoordinatorNotAvailable.
func TestClientGroupElsewhere(t *testing.T) {
	srv := startFakeServer(t)
	cl, err := kafkaclient.NewClient([]string{srv})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := cl.Exchange(ctx, 1, broker.FindCoordinatorRequest{Correlation: 1, Group: fakeNoCoordinator})
	require.NoError(t, err)
	require.ErrorIs(t, out.(broker.FindCoordinatorResponse).Err, kafka.ErrCoordinatorNotAvailable)
	require.Equal(t, int32(-1), out.(broker.FindCoordinatorResponse).Coordinator)
	for _, req := range []group.Request{
		group.JoinRequest{Group: fakeElsewhere, MemberID: "m"},
		group.SyncRequest{Group: fakeElsewhere},
		group.HeartbeatRequest{Group: fakeElsewhere},
		group.LeaveRequest{Group: fakeElsewhere, Members: []string{"m"}},
		group.CommitRequest{Group: fakeElsewhere, Offsets: []group.OffsetToCommit{{TopicPartition: kafka.TopicPartition{Topic: "t"}}}},
		group.FetchOffsetsRequest{Group: fakeElsewhere},
	} {
		out, err := cl.Exchange(ctx, 1, broker.GroupRequest{Req: req})
		require.NoError(t, err)
		require.Equal(t, req.Refuse(kafka.ErrNotCoordinator), normalize(out.(broker.GroupResponse).Resp), "%T", req)
	}
}

// normalize drops what refusal does not set, so answers compare.
func normalize(resp group.Response) group.Response {
	switch r := resp.(type) {
	case group.JoinResponse:
		r.Generation = -1
		return r
	case group.SyncResponse:
		r.Assignment = nil
		return r
	}
	return resp
}

// startFakeServer serves the fake backend on a TCP listener, for clients
// that need an address; it returns the address.
func startFakeServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &Server{Backend: &fakeBackend{addr: ln.Addr().String()}, Logf: t.Logf}
	serveForTest(t, ln, srv)
	return ln.Addr().String()
}

// TestHeldJoinOutlastsTheServersOwnWait: a join the coordinator holds
// while an old member has its rebalance timeout to rejoin must be
// answered when the coordinator answers it, not cut off by the server's
// backend timeout. Member 1 (rebalance timeout 12 s, longer than the
// server's 10 s) never rejoins; member 2's join is held until the
// coordinator expels member 1, then it leads the next generation alone.
// Reference: KIP-62 (rebalance timeout).
func TestHeldJoinOutlastsTheServersOwnWait(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 12 s rebalance timeout")
	}
	c := startTestCluster(t)
	cl, err := kafkaclient.NewClient([]string{c.addr})
	require.NoError(t, err)
	defer cl.Close()
	const g = "held"
	coord := findCoordinator(t, cl, g)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	join := func(member string, rebalanceMs int64) group.JoinResponse {
		t.Helper()
		req := group.JoinRequest{Group: g, MemberID: member, ClientID: "c", SessionTimeoutMs: 30_000, RebalanceTimeoutMs: rebalanceMs,
			ProtocolType: "consumer", Protocols: []group.Protocol{{Name: "range"}}}
		out, err := cl.Exchange(ctx, coord, broker.GroupRequest{Req: req})
		require.NoError(t, err)
		a := out.(broker.GroupResponse).Resp.(group.JoinResponse)
		if a.Err == kafka.ErrMemberIDRequired {
			req.MemberID = a.MemberID
			out, err = cl.Exchange(ctx, coord, broker.GroupRequest{Req: req})
			require.NoError(t, err)
			a = out.(broker.GroupResponse).Resp.(group.JoinResponse)
		}
		return a
	}
	first := join("", 12_000)
	require.Equal(t, nil, first.Err)
	out, err := cl.Exchange(ctx, coord, broker.GroupRequest{Req: group.SyncRequest{Group: g, MemberID: first.MemberID, Generation: first.Generation,
		Assignments: map[string][]byte{first.MemberID: nil}}})
	require.NoError(t, err)
	require.Equal(t, nil, out.(broker.GroupResponse).Resp.(group.SyncResponse).Err)

	start := time.Now()
	second := join("", 12_000)
	held := time.Since(start)
	require.Equal(t, nil, second.Err, "answered after %v", held)
	require.Greater(t, held, backendTimeout, "the coordinator held the join past the server's own wait")
	require.Equal(t, first.Generation+1, second.Generation)
	require.Equal(t, second.MemberID, second.LeaderID, "member 1 was expelled")
	require.Len(t, second.Members, 1)
}

// TestClientGroupExchangesAgainstKfake runs the same group life through
// the kafkaclient.Client against franz-go's in-memory Kafka (kfake), another
// implementation of the protocol: the conversions must hold for any
// Kafka-compatible broker, not only for the server in this package.
func TestClientGroupExchangesAgainstKfake(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t", "u"))
	require.NoError(t, err)
	defer kc.Close()
	cl, err := kafkaclient.NewClient(kc.ListenAddrs())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := cl.Exchange(ctx, 0, broker.MetadataRequest{})
	require.NoError(t, err)
	var id broker.NodeID = -1
	for _, b := range out.(broker.MetadataResponse).LiveBrokers {
		id = broker.NodeID(b)
	}
	require.GreaterOrEqual(t, id, broker.NodeID(0))
	out, err = cl.Exchange(ctx, id, broker.FindCoordinatorRequest{Correlation: 4, Group: "kfake-group"})
	require.NoError(t, err)
	fc := out.(broker.FindCoordinatorResponse)
	require.NoError(t, fc.Err)
	require.Equal(t, uint64(4), fc.Correlation)
	exchangeGroupLifecycle(t, cl, broker.NodeID(fc.Coordinator), "kfake-group", true)
}
