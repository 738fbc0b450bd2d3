package group

import "github.com/watermarkhq/watermark/impl/groupmsg"

// Request is a request to a group coordinator, Response its answer
// (impl/groupmsg's, which see).
type (
	Request  = groupmsg.Request
	Response = groupmsg.Response
)

// UntilRebalance is the HoldMs of a request held until the rebalance in
// progress ends (groupmsg.UntilRebalance).
const UntilRebalance = groupmsg.UntilRebalance

// The Coordinator takes every kind of group request by its own method:
// a new kind added to groupmsg.Handler does not compile until it does.
var _ groupmsg.Handler = (*Coordinator)(nil)

// Handle hands req to the coordinator, which answers it through Ready
// under id (an Answer), now or once what it waits for is done.
func (c *Coordinator) Handle(id uint64, req Request, now int64) { req.Dispatch(c, id, now) }

// AnswerAs is resp as the answer type T that req expects; when resp is
// missing or of another type, req refused with err (groupmsg.AnswerAs).
func AnswerAs[T Response](req Request, resp Response, err error) T {
	return groupmsg.AnswerAs[T](req, resp, err)
}
