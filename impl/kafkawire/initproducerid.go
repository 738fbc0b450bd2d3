package kafkawire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// initProducerIDAPI serves InitProducerId v0-4.
var initProducerIDAPI = api{key: int16(kmsg.InitProducerID), min: 0, max: 4, serve: withBody((*handler).initProducerID)}

// initProducerID hands out a producer id for an idempotent producer.
// Transactions are not supported: a transactional id gets INVALID_REQUEST,
// which clients report as a request error rather than retry. A v3+ request
// carrying its current producer id (an epoch bump after an error, KIP-360)
// gets a new producer id, which is a new producer identity.
func (h *handler) initProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	answer, err := h.ask(ctx, h.s.Backend.NodeID(), backendTimeout, func(corr uint64) kafka.Message {
		return broker.InitProducerIDRequest{Correlation: corr}
	})
	if err != nil {
		return nil, err
	}
	a, ok := answer.(broker.InitProducerIDResponse)
	switch {
	case !ok:
		resp.ErrorCode = kerr.RequestTimedOut.Code
	case a.Err != nil:
		resp.ErrorCode = kafka.CodeOf(a.Err)
	default:
		resp.ProducerID, resp.ProducerEpoch = a.ProducerID, a.ProducerEpoch
	}
	return resp, nil
}
