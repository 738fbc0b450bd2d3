package controller

import (
	"fmt"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// RegisterBroker records that broker id started a process with the given
// incarnation (Kafka's broker epoch). Incarnations must grow from one process
// start to the next, e.g. a boot counter or the logical start time, so that
// a registration delayed from an earlier process is refused with
// kafka.ErrStaleIncarnation instead of fencing the current one.
//
// Registering again with the same incarnation is a retry: it counts as a
// heartbeat, and revives the broker if it was declared dead. A new
// incarnation means the broker restarted and may have lost unsynced data: it
// is first treated as dead, leaving the ISRs and losing leadership exactly as
// on a session timeout (KIP-903), and then as alive, which lets it lead the
// offline partitions whose ISR it is the last member of.
//
// lost names the partitions whose logs this process recovered with
// committed records lost (its broker says so as it registers), and a new
// incarnation keeps what the previous one lost and had not copied back:
// it is not elected for them until it is back in their ISR, and a partition whose
// only ISR member it is stays offline rather than lose what it lost
// (unclean election, when on, prefers a replica that lost nothing).
//
// RegisterBroker is Register with a Registration of lost and no Synced.
func (c *Controller) RegisterBroker(id int32, incarnation int64, now int64, lost ...kafka.TopicPartition) error {
	return c.Register(id, incarnation, now, Registration{Lost: lost})
}

// Register is RegisterBroker with all a process says of itself: a new
// incarnation also leaves the eligible leader replicas it may no longer
// belong to (eligible.go, rule 4), and a registration that is accepted
// keeps the address it names (Addresses; none keeps the one before).
func (c *Controller) Register(id int32, incarnation int64, now int64, reg Registration) error {
	if err := c.register(id, incarnation, now, reg); err != nil {
		return err
	}
	if reg.Address != "" {
		c.brokers[id].address = reg.Address
	}
	return nil
}

func (c *Controller) register(id int32, incarnation int64, now int64, reg Registration) error {
	lost := reg.Lost
	if id < 0 {
		return fmt.Errorf("register broker %d: %w", id, kafka.ErrInvalidBrokerID)
	}
	b, ok := c.brokers[id]
	switch {
	case !ok:
		b = &broker{id: id, incarnation: incarnation, lastHeartbeat: now, alive: true, lost: lostSet(lost)}
		c.brokers[id] = b
		c.emit(Event{Kind: BrokerRegistered, Now: now, Broker: id, Incarnation: incarnation})
		c.becameAlive(id, now)
	case incarnation < b.incarnation:
		return fmt.Errorf("register broker %d incarnation %d, registered %d: %w",
			id, incarnation, b.incarnation, kafka.ErrStaleIncarnation)
	case incarnation == b.incarnation && b.shuttingDown && !b.alive:
		return fmt.Errorf("register broker %d incarnation %d: %w: it finished a controlled shutdown", id, incarnation, kafka.ErrStaleIncarnation)
	case incarnation == b.incarnation:
		c.heard(b, now)
	case c.cfg.KeepISROnRestart:
		// The unsafe variant: a restart is not noticed, nor what it lost.
		b.incarnation = incarnation
		c.emit(Event{Kind: BrokerRegistered, Now: now, Broker: id, Incarnation: incarnation})
		if b.alive {
			b.lastHeartbeat = max(b.lastHeartbeat, now)
			c.queueAll(id)
		} else {
			c.heard(b, now)
		}
	case b.alive && now-b.lastHeartbeat <= c.cfg.SessionTimeoutMs:
		// The previous process's session is live: as in KRaft, the new
		// one waits until that session ends (it registers again each
		// heartbeat interval). One that finished a controlled shutdown
		// is fenced, not alive: its successor registers at once.
		return fmt.Errorf("register broker %d incarnation %d, registered %d: %w",
			id, incarnation, b.incarnation, kafka.ErrDuplicateBrokerRegistration)
	default:
		clean := reg.Clean(b.incarnation)
		if b.alive {
			b.alive = false
			c.emit(Event{Kind: BrokerDead, Now: now, Broker: id, Incarnation: b.incarnation})
			c.reconcile(now)
		}
		// What the previous process lost and never copied back is still
		// missing from the same disk, whatever the new one recovered: a
		// clean stop after the loss does not make the log whole again.
		stillLost := b.lost
		b.incarnation, b.lost, b.suspect, b.shuttingDown = incarnation, lostSet(lost), nil, false
		for tp := range stillLost {
			if b.lost == nil {
				b.lost = map[kafka.TopicPartition]bool{}
			}
			b.lost[tp] = true
		}
		if !clean {
			b.suspect = lostSet(c.replicaOf(id))
		}
		c.leaveELR(id, reg, clean)
		b.lastHeartbeat = max(b.lastHeartbeat, now)
		b.alive = true
		c.emit(Event{Kind: BrokerRegistered, Now: now, Broker: id, Incarnation: incarnation})
		c.becameAlive(id, now)
	}
	return nil
}

func lostSet(tps []kafka.TopicPartition) map[kafka.TopicPartition]bool {
	if len(tps) == 0 {
		return nil
	}
	m := make(map[kafka.TopicPartition]bool, len(tps))
	for _, tp := range tps {
		m[tp] = true
	}
	return m
}

// Heartbeat records that broker id, of the given incarnation, was alive at
// now. A dead broker that heartbeats with its registered incarnation is
// revived (KRaft unfences it): it never restarted, so it lost nothing.
// A heartbeat from an unknown broker or another incarnation is refused
// with STALE_BROKER_EPOCH, as Kafka 4.1's ClusterControlManager
// (checkBrokerEpoch) refuses both; the broker must register.
func (c *Controller) Heartbeat(id int32, incarnation int64, now int64) error {
	b, ok := c.brokers[id]
	if !ok {
		return fmt.Errorf("heartbeat from broker %d, which never registered: %w", id, kafka.ErrStaleIncarnation)
	}
	if incarnation != b.incarnation {
		return fmt.Errorf("heartbeat from broker %d incarnation %d, registered %d: %w",
			id, incarnation, b.incarnation, kafka.ErrStaleIncarnation)
	}
	if b.shuttingDown && !b.alive {
		// Fenced by its controlled shutdown: that process is stopping.
		return fmt.Errorf("heartbeat from broker %d incarnation %d: %w: it finished a controlled shutdown", id, incarnation, kafka.ErrStaleIncarnation)
	}
	c.heard(b, now)
	return nil
}

// heard refreshes b's session and revives it if it was dead.
func (c *Controller) heard(b *broker, now int64) {
	b.lastHeartbeat = max(b.lastHeartbeat, now)
	if b.alive {
		return
	}
	b.alive = true
	c.emit(Event{Kind: BrokerRevived, Now: now, Broker: b.id, Incarnation: b.incarnation})
	c.becameAlive(b.id, now)
}

// becameAlive sends broker id everything it replicates and elects it where
// it may now lead.
func (c *Controller) becameAlive(id int32, now int64) {
	c.queueAll(id)
	c.reconcile(now)
}

// Tick advances logical time to now. Brokers whose last heartbeat is more
// than SessionTimeoutMs old are declared dead together, and the partitions
// they led are re-elected in one batch, so no election picks a broker that
// dies in the same Tick. With AutoLeaderRebalance, leadership then moves back
// to preferred replicas. Unclean recoveries whose wait timed out decide or
// ask again.
func (c *Controller) Tick(now int64) {
	died := false
	for _, id := range c.brokerIDs() {
		b := c.brokers[id]
		if b.alive && now-b.lastHeartbeat > c.cfg.SessionTimeoutMs {
			b.alive = false
			died = true
			c.emit(Event{Kind: BrokerDead, Now: now, Broker: id, Incarnation: b.incarnation})
		}
	}
	if died {
		c.reconcile(now)
	}
	if c.cfg.AutoLeaderRebalance {
		c.rebalance(now)
	}
	c.maybeRecover(now) // recoveries whose wait for answers timed out
}
