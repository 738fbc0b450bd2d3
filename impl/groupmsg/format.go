package groupmsg

import (
	"fmt"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// String renders r on one line.
func (r JoinResponse) String() string {
	if r.Err != nil {
		return fmt.Sprintf("join %s member=%s", kafka.Name(r.Err), r.MemberID)
	}
	s := fmt.Sprintf("join generation=%d protocol=%s/%s leader=%s member=%s",
		r.Generation, r.ProtocolType, r.Protocol, r.LeaderID, r.MemberID)
	if r.Members != nil {
		ids := make([]string, len(r.Members))
		for i, m := range r.Members {
			ids[i] = m.MemberID
		}
		s += fmt.Sprintf(" members=%v", ids)
	}
	return s
}

// String renders r on one line; a ConsumerProtocol assignment is decoded.
func (r SyncResponse) String() string {
	if r.Err != nil {
		return fmt.Sprintf("sync %s", kafka.Name(r.Err))
	}
	return "sync assignment=" + DescribeAssignment(r.Assignment)
}

// String renders r on one line.
func (r HeartbeatResponse) String() string { return fmt.Sprintf("heartbeat %s", kafka.Name(r.Err)) }

// String renders r on one line.
func (r LeaveResponse) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "leave %s", kafka.Name(r.Err))
	for _, m := range r.Members {
		fmt.Fprintf(&b, " %s=%s", m.MemberID, kafka.Name(m.Err))
	}
	return b.String()
}

// String renders r on one line.
func (r CommitResponse) String() string {
	var b strings.Builder
	b.WriteString("commit")
	for _, p := range r.Partitions {
		fmt.Fprintf(&b, " %s=%s", p.TopicPartition, kafka.Name(p.Err))
	}
	return b.String()
}

// String renders r on one line.
func (r FetchOffsetsResponse) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fetch %s", kafka.Name(r.Err))
	for _, p := range r.Partitions {
		fmt.Fprintf(&b, " %s=%d", p.TopicPartition, p.Offset)
	}
	return b.String()
}
