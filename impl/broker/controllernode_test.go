package broker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
)

// The controller node passes a broker's address to the controller,
// which keeps it (an empty one keeps the one before) and carries it in
// its snapshot; a snapshot written before the controller kept addresses
// has them beside its brokers only, and restores them too.
// Reference: spec/SEMANTICS.md, Replication (Controller).
func TestControllerNodeKeepsAddresses(t *testing.T) {
	cfg := controller.Config{SessionTimeoutMs: 1000}
	n, err := broker.NewControllerNode(cfg)
	require.NoError(t, err)
	register := func(n *broker.ControllerNode, address string) broker.StateUpdate {
		n.Handle(broker.Envelope{From: 1, To: broker.VoterNode(1), Msg: broker.RegisterBroker{Incarnation: 1, Address: address}}, 0)
		var last broker.StateUpdate
		for _, env := range n.TakeOutbox() {
			if u, ok := env.Msg.(broker.StateUpdate); ok {
				last = u
			}
		}
		return last
	}
	want := map[int32]string{1: "h1:9092"}
	assert.Equal(t, want, register(n, "h1:9092").Addresses)
	assert.Equal(t, want, register(n, "").Addresses, "a registration without an address keeps the one before")
	snap := n.Snapshot()
	assert.Equal(t, want, snap.Addresses)
	require.Len(t, snap.Controller.Brokers, 1)
	assert.Equal(t, "h1:9092", snap.Controller.Brokers[0].Address)

	snap.Controller.Brokers[0].Address = "" // as written before
	r, err := broker.RestoreControllerNode(cfg, snap, 0)
	require.NoError(t, err)
	assert.Equal(t, want, r.Controller().Addresses())
	assert.Equal(t, want, r.Snapshot().Addresses)
}
