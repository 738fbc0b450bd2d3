package broker

import "fmt"

// The loop's steps and why each is where it is: the package doc, "The
// loop".

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
