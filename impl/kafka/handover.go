package kafka

import "fmt"

// Handover is the contract every pure core (impl/partition, impl/controller,
// impl/group) keeps with its driver, after go.etcd.io/raft's RawNode: Ready
// hands over everything the core decided since the previous Ready — what
// to persist, what to send, the answers — and the driver carries it out,
// in the order the core's Ready documents, then calls Advance, and only
// then asks for the next Ready. Inputs may arrive between Ready and
// Advance; what they decide waits for the next Ready.
//
// A core embeds a Handover and calls Take in its Ready and Done in its
// Advance; a driver that asks for a second Ready before Advance, or
// advances what it was not handed, has a bug, and the core panics rather
// than hand the same output over twice or lose it.
type Handover struct {
	out bool // a Ready was handed over and not yet advanced
}

// Take marks a Ready handed over; core names the core in the panic.
func (h *Handover) Take(core string) {
	if h.out {
		panic(fmt.Sprintf("%s: Ready called before the previous Ready was advanced", core))
	}
	h.out = true
}

// Done marks the Ready handed over carried out.
func (h *Handover) Done(core string) {
	if !h.out {
		panic(fmt.Sprintf("%s: Advance without a Ready handed over", core))
	}
	h.out = false
}
