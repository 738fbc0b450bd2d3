package clientmsg

import (
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/settings"
)

// NodeID names a node: the controller, a broker or a client.
type NodeID int32

// ControllerID is the address of the active controller, whichever voter
// that is: a broker's sends to it go to the controller it follows. The
// voters themselves are VoterNode(1), VoterNode(2), ...: -1, -2, ...
// Brokers are 1..N; clients use ids from ClientIDBase up
// (settings.ControllerID, settings.ClientIDBase).
const (
	ControllerID NodeID = settings.ControllerID
	ClientIDBase NodeID = settings.ClientIDBase
)

// VoterNode is the node id of controller voter v (1-based): -v.
func VoterNode(v int) NodeID { return NodeID(-v) }

// Voter is the voter number of a controller's node id (VoterNode's
// inverse), 0 for any other node.
func (id NodeID) Voter() int {
	if id < 0 {
		return int(-id)
	}
	return 0
}

// IsBroker reports whether id names a broker.
func (id NodeID) IsBroker() bool { return id > ControllerID && id < ClientIDBase }

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
