package kafkawire

import (
	"context"
	"github.com/watermarkhq/watermark/impl/kafka"

	"github.com/watermarkhq/watermark/impl/broker"
)

// Backend is the broker process behind the wire server (impl/node provides
// it). The server turns each Kafka request into the broker's own client-plane
// messages (broker.ProduceRequest, broker.FetchRequest, ...) and each answer
// back into a Kafka response; the backend only moves envelopes.
type Backend interface {
	// NodeID is this broker's id: requests for the broker itself go To it.
	NodeID() broker.NodeID
	// Open starts a session for one connection: a client node id unique in
	// the cluster, through which the connection sends messages and gets the
	// answers addressed to that id. The backend keeps routing answers to the
	// session until Close.
	Open() Session
}

// Session is one connection's mailbox at the broker.
type Session interface {
	// ID is the session's client node id (>= broker.ClientIDBase).
	ID() broker.NodeID
	// Send delivers msg from this session to node `to`: the local broker
	// (NodeID()) for client requests, or broker.ControllerID for
	// broker.CreateTopic, which the backend forwards to the controller.
	// It never blocks for long and never fails: a message that cannot be
	// delivered is lost, as on a network, and the caller's wait times out.
	Send(to broker.NodeID, msg kafka.Message)
	// Recv returns the next envelope addressed to this session, in the
	// order the broker sent them, or ctx's error.
	Recv(ctx context.Context) (broker.Envelope, error)
	// Close ends the session; answers still on their way are dropped.
	Close()
}
