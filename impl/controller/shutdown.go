package controller

import (
	"fmt"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// Controlled shutdown (KRaft's BrokerHeartbeat with WantShutDown;
// ReplicationControlManager.handleBrokerInControlledShutdown and
// BrokerHeartbeatManager in Kafka 4.1).
//
// A broker that is asked to stop (SIGTERM) asks the controller first. The
// controller marks it as shutting down and settles every partition at
// once, by the rules of a death but for the broker's session:
//  1. It leads nothing: each partition it leads goes to the first other
//     ISR member in assignment order that is active (alive, not shutting
//     down, holding the data), else to an eligible leader replica, else
//     offline until the broker is back (Kafka, with ELR: an empty ISR and
//     the broker in the ELR; here the ISR keeps it, which elects alike).
//  2. It leaves every ISR it is not the last member of, and joins none
//     (AlterPartition adding it is INELIGIBLE_REPLICA, KIP-841); leaving
//     an ISR that falls below min ISR makes it an eligible leader replica,
//     as any member leaving does (eligible.go rule 1): it stops cleanly,
//     with every committed record it holds.
//  3. Once it leads no partition, and the brokers that are to lead have
//     been told (the node's part: ControllerNode counts metadata
//     versions, as Kafka waits for every active broker to replay the
//     metadata offset of the moves), the controller fences it
//     (ShutDown) and answers that it may stop.
//  4. Fenced, its next process registers at once, without waiting for
//     the old session to end (Register), and keeps its places among the
//     eligible leader replicas if the registration says the stop was
//     clean (Registration.Clean).

// ControlledShutdown records that broker id, in the given incarnation,
// asks to shut down, and reports whether it leads no partition any more.
// The first call moves its leaderships and ISR memberships (see above);
// later calls only answer, and count as heartbeats. A broker already
// fenced by ShutDown is answered true and stays fenced.
func (c *Controller) ControlledShutdown(id int32, incarnation int64, now int64) (bool, error) {
	b, err := c.shutdownBroker(id, incarnation)
	if err != nil {
		return false, err
	}
	if b.shuttingDown && !b.alive {
		return true, nil // done: an answer that was lost, asked again
	}
	c.heard(b, now)
	if !b.shuttingDown {
		b.shuttingDown = true
		c.emit(Event{Kind: BrokerShuttingDown, Now: now, Broker: id, Incarnation: incarnation})
		c.reconcile(now)
	}
	return !c.leadsAny(id), nil
}

// ShutDown ends broker id's controlled shutdown: it is fenced (dead for
// the controller, as after a session timeout, but its next process may
// register at once). It must lead nothing (ControlledShutdown reported
// true).
func (c *Controller) ShutDown(id int32, incarnation int64, now int64) error {
	b, err := c.shutdownBroker(id, incarnation)
	if err != nil {
		return err
	}
	if !b.shuttingDown || c.leadsAny(id) {
		return fmt.Errorf("shut down broker %d: not in a controlled shutdown, or it still leads: %w", id, kafka.ErrInvalidRequest)
	}
	if !b.alive {
		return nil
	}
	b.alive = false
	c.emit(Event{Kind: BrokerShutDown, Now: now, Broker: id, Incarnation: incarnation})
	c.reconcile(now)
	return nil
}

func (c *Controller) shutdownBroker(id int32, incarnation int64) (*broker, error) {
	b, ok := c.brokers[id]
	if !ok {
		// Kafka asks by heartbeat, refused as any heartbeat of an
		// unregistered broker is (ClusterControlManager.checkBrokerEpoch).
		return nil, fmt.Errorf("controlled shutdown of broker %d, which never registered: %w", id, kafka.ErrStaleIncarnation)
	}
	if incarnation != b.incarnation {
		return nil, fmt.Errorf("controlled shutdown of broker %d incarnation %d, registered %d: %w",
			id, incarnation, b.incarnation, kafka.ErrStaleIncarnation)
	}
	return b, nil
}

// ShuttingDown reports whether broker id's current process is in a
// controlled shutdown (or has finished one).
func (c *Controller) ShuttingDown(id int32) bool {
	b, ok := c.brokers[id]
	return ok && b.shuttingDown
}

// leadsAny reports whether broker id leads a partition.
func (c *Controller) leadsAny(id int32) bool {
	for _, tp := range c.order {
		if c.partitions[tp].Leader == id {
			return true
		}
	}
	return false
}
