package broker

import "fmt"

// The broker's one loop. Every input, a message (Handle) or a tick (Tick),
// changes the cores it reaches (replicas, group coordinators) and ends in
// settle, which carries out every Ready they queued, core by core, until
// none has one left. Each core's Ready is carried out by one function of
// the same shape (take Ready, persist, Advance, send): apply for a replica
// (apply.go), flushCoordinator for a coordinator (groups.go); the
// controller node does the same with the controller's (controllernode.go).
//
// The steps, and why each is where it is:
//
//  1. Replicas, in partition order (settleReplicas). First, because what
//     a replica decided is what everything after follows: its records are
//     stored before any answer about them leaves (apply's own order), and
//     its new role is what the coordinators follow in step 2.
//  2. Coordinators follow leadership (syncCoordinators): a coordinator is
//     loaded from its offsets partition's log where this broker now leads
//     it, and unloaded (what waited answered NOT_COORDINATOR) where it no
//     longer does. After step 1, so that a coordinator loads the log the
//     replica has stored, and before step 3, so that no answer leaves a
//     coordinator for a partition this broker no longer leads.
//  3. Coordinators, in partition order, while one has output: answers,
//     then appends handed to the offsets partition's replica, whose Ready
//     is applied at once, so that the append's answer (a refusal at once,
//     or the release when HW passes it) reaches the coordinator in the
//     same loop. A refused append makes more output (its waiting answers),
//     hence the repetition; it ends, because an append's answer makes none.
//  4. After a message, held follower fetches whose leader's log moved are
//     released (a tick releases them in expireParked, with the expired ones).
//
// Some inputs apply a replica's Ready before the step ends, where the
// order inside the step is the protocol's: a state update applies each
// replica in turn, so that each new role passes its failpoint before the
// next partition is touched; a read (ask) needs its answer to decide
// whether the fetch waits; a released follower fetch and a coordinator's
// append are each answered before the next. The loop finds those replicas
// settled and goes on.

// settleRounds bounds step 3: a round's output is answers and appends, and
// only a refused append feeds back, so draining ends in a few rounds; more
// means a core that feeds itself, reported as an error (the process
// crashes, loudly) rather than left half-drained.
const settleRounds = 100

// settle runs steps 1 to 3 of the loop.
func (b *Broker) settle() error {
	if err := b.settleReplicas(); err != nil {
		return err
	}
	if err := b.syncCoordinators(); err != nil {
		return err
	}
	for range settleRounds {
		busy := false
		for _, tp := range b.order {
			c, ok := b.coords[tp]
			if !ok || !c.HasReady() {
				continue
			}
			busy = true
			if err := b.flushCoordinator(tp, c); err != nil {
				return err
			}
		}
		if !busy {
			return nil
		}
	}
	return fmt.Errorf("broker %d: cores still had output after %d rounds of the loop: a core that answers its own output with more", b.cfg.ID, settleRounds)
}

// settleReplicas applies every replica's Ready, in partition order.
func (b *Broker) settleReplicas() error {
	for _, tp := range b.order {
		if h := b.parts[tp]; h.replica.HasReady() {
			if err := b.apply(h); err != nil {
				return err
			}
		}
	}
	return nil
}
