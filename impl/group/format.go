package group

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
	return "sync assignment=" + describeAssignment(r.Assignment)
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

// String renders r on several lines, for scenario tests and traces.
func (r Ready) String() string {
	var b strings.Builder
	for _, e := range r.Events {
		fmt.Fprintf(&b, "event %s\n", e)
	}
	for _, a := range r.Appends {
		keys := make([]string, len(a.Records))
		for i, rec := range a.Records {
			keys[i] = strings.ReplaceAll(string(rec.Key), "\x00", "/")
		}
		fmt.Fprintf(&b, "append %d %v\n", a.ID, keys)
	}
	for _, a := range r.Answers {
		fmt.Fprintf(&b, "answer %d: %v\n", a.ID, a.Msg)
	}
	return b.String()
}
