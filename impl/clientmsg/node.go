package clientmsg

import (
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/settings"
)

// NodeID names a node: the controller, a broker or a client.
type NodeID int32

// ControllerID is the controller's node id. Brokers are 1..N; clients use
// ids from ClientIDBase up (settings.ControllerID, settings.ClientIDBase).
const (
	ControllerID NodeID = settings.ControllerID
	ClientIDBase NodeID = settings.ClientIDBase
)

// Envelope is one message on the network.
type Envelope struct {
	From, To NodeID
	Msg      kafka.Message
}

// Request is a client's request to a broker: the client plane, and the
// metadata and topic requests a broker also sends the controller. Its
// answer carries its correlation.
type Request interface {
	kafka.Message
	// Corr is the request's correlation, which its answer echoes.
	Corr() uint64
	// Refuse is the answer that refuses the request with err: what a
	// client takes for an answer when the network, not the broker, failed
	// it (kafka.ErrNetwork).
	Refuse(err error) kafka.Answer
}
