package groupmsg

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every coordinator request names its group, which routes it.
func TestEveryRequestNamesItsGroup(t *testing.T) {
	for _, r := range []Request{JoinRequest{Group: "g"}, SyncRequest{Group: "g"}, HeartbeatRequest{Group: "g"},
		LeaveRequest{Group: "g"}, CommitRequest{Group: "g"}, FetchOffsetsRequest{Group: "g"}} {
		assert.Equal(t, "g", r.GroupName(), "%T", r)
	}
}
