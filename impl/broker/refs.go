package broker

import (
	"fmt"

	"github.com/watermarkhq/watermark/impl/partition"
)

// A request the broker hands a replica gets one ref, the request's one
// identity on this broker, and one entry here: what to do with the answer.
// The replica answers every ref exactly once, in its Ready, and apply
// delivers the answer here; what waits (an acks=all produce) waits in the
// replica, not here. A Kafka correlation id and the connection it came on
// are the wire server's; a ref never leaves the broker.

// await returns the ref to hand a replica with a request whose answer, of
// type R, then receives.
func await[R partition.Reply](b *Broker, then func(R) error) uint64 {
	b.nextRef++
	ref := b.nextRef
	b.waiting[ref] = func(reply partition.Reply) error {
		a, ok := reply.(R)
		if !ok {
			return fmt.Errorf("broker %d: request %d was answered with %T, not %T", b.cfg.ID, ref, reply, a)
		}
		return then(a)
	}
	return ref
}

// deliver hands a replica's answer to what waits for it.
func (b *Broker) deliver(a partition.Answer) error {
	then, ok := b.waiting[a.Ref]
	if !ok {
		return fmt.Errorf("broker %d: a replica answered request %d, which nothing waits for", b.cfg.ID, a.Ref)
	}
	delete(b.waiting, a.Ref)
	return then(a.Reply)
}

// ask hands h's replica a request through fn and returns its answer,
// for the requests the broker answers in the same step (reads, epoch
// ends): the answer still comes out of the replica's Ready, after what
// the request made it persist.
func ask[R partition.Reply](b *Broker, h *hosted, fn func(ref uint64)) (R, error) {
	var got R
	answered := false
	ref := await(b, func(a R) error { got, answered = a, true; return nil })
	fn(ref)
	if err := b.apply(h); err != nil {
		return got, err
	}
	if !answered {
		return got, fmt.Errorf("broker %d: %s left request %d unanswered", b.cfg.ID, h.tp, ref)
	}
	return got, nil
}
