package kafka

import "fmt"

// Handlers routes each kind of message to the function that handles it
// on one kind of node: a broker, the controller, a client. A node fills
// its table once (On), by the message's Go type, so a handler receives
// its own type and never asserts one; Handle then finds it by Kind.
// C is what a handler needs besides the message: its node and the sender.
type Handlers[C any] struct {
	byKind map[Kind]func(C, Message) error
}

// On makes fn handle every registered kind whose messages are of type M
// (a type can have several kinds: a group request is "group" or
// "offset-commit"). M must be registered (Register) and not already
// handled: either is a programming error, and panics.
func On[M Message, C any](h *Handlers[C], fn func(C, M) error) {
	if h.byKind == nil {
		h.byKind = map[Kind]func(C, Message) error{}
	}
	found := false
	for _, r := range Rows() {
		if _, ok := r.Proto.(M); !ok {
			continue
		}
		if _, dup := h.byKind[r.Kind]; dup {
			panic(fmt.Sprintf("kafka.On: kind %q handled twice", r.Kind))
		}
		h.byKind[r.Kind] = func(c C, m Message) error { return fn(c, m.(M)) }
		found = true
	}
	if !found {
		var zero M
		panic(fmt.Sprintf("kafka.On: %T is not a registered message", zero))
	}
}

// Handle gives m to its kind's handler. handled is false when the table
// has none: the node has nothing to do with such a message.
func (h *Handlers[C]) Handle(c C, m Message) (handled bool, err error) {
	fn, ok := h.byKind[m.Kind()]
	if !ok {
		return false, nil
	}
	return true, fn(c, m)
}

// Kinds lists the kinds the table handles.
func (h *Handlers[C]) Kinds() []Kind {
	out := make([]Kind, 0, len(h.byKind))
	for k := range h.byKind {
		out = append(out, k)
	}
	return out
}
