package linearizability

import (
	"cmp"
	"fmt"
	"slices"
)

// clientOp is an operation's sort key, copied out of the history so that
// sorting a partition's operations by client does not chase pointers.
type clientOp struct {
	client int
	call   int64
	id     int
	i      int32
}

// clientState is where one client stands on the partition.
type clientState struct {
	// last orders the client's operations: call, then ID.
	lastCall int64
	lastID   int
	// poll is the client's previous ok fetch (since its last assign or
	// assignment) and
	// next the offset that fetch left it at; send is its previous ok
	// produce. -1 when there is none.
	poll, send int32
	next       int64
}

// checkClients finds poll-skip, nonmonotonic-poll and nonmonotonic-send by
// following each client's operations on the partition in call order.
// Harnesses write each client's operations in that order, so the history
// order is tried first; if some client's operations are out of order, the
// walk starts again over the operations sorted by client and call.
func (c *partitionCheck) checkClients() {
	reported := len(c.out)
	if c.walkClients(c.ops) {
		return
	}
	c.out = c.out[:reported]
	ops := c.clientOps[:0]
	for _, i := range c.ops {
		op := &c.h[i]
		ops = append(ops, clientOp{op.Client, op.Call, op.ID, i})
	}
	slices.SortFunc(ops, func(a, b clientOp) int {
		return cmp.Or(cmp.Compare(a.client, b.client), cmp.Compare(a.call, b.call), cmp.Compare(a.id, b.id))
	})
	c.clientOps = ops
	for k := range ops {
		c.ops[k] = ops[k].i
	}
	c.walkClients(c.ops)
}

// walkClients applies the client rules to ops, in the order given, and
// reports false (having reported some anomalies, maybe) as soon as one
// client's operations are out of call order.
func (c *partitionCheck) walkClients(ops []int32) bool {
	clear(c.clients)
	for _, i := range ops {
		op := &c.h[i]
		st, seen := c.clients[op.Client]
		if !seen {
			st = &clientState{poll: -1, send: -1}
			c.clients[op.Client] = st
		} else if op.Call < st.lastCall || op.Call == st.lastCall && op.ID < st.lastID {
			return false
		}
		st.lastCall, st.lastID = op.Call, op.ID
		switch {
		case op.Kind == KindAssign || op.Kind == KindAssignment:
			st.poll = -1
		case op.Kind == KindFetch && op.Outcome == OutcomeOK:
			if op.Offset < 0 && len(op.Records) == 0 {
				continue // says nothing about where the consumer is
			}
			// The final reads start afresh, wherever the client was; only
			// their own consecutive fetches are compared.
			if st.poll >= 0 && (!op.Final || c.h[st.poll].Final) && !rejoined(c.joins, op.Client, &c.h[st.poll], op) {
				c.comparePolls(st.poll, i, st.next)
			}
			st.poll = i
			if n := len(op.Records); n > 0 {
				st.next = op.Records[n-1].Offset + 1
			} else {
				st.next = op.Offset
			}
		case op.Kind == KindProduce && op.Outcome == OutcomeOK && op.Offset >= 0:
			if st.send >= 0 && op.Offset <= c.h[st.send].Offset {
				prev := &c.h[st.send]
				c.report(AnomalyNonmonotonicSend, op.Offset, op.Value, []int32{st.send, i},
					"client %d's produce op %d landed at offset %d, at or before offset %d of its previous acknowledged produce (op %d)",
					op.Client, op.ID, op.Offset, prev.Offset, prev.ID)
			}
			st.send = i
		}
	}
	return true
}

// comparePolls judges fetch i against the client's previous fetch prev,
// which left the consumer at next.
func (c *partitionCheck) comparePolls(prev, i int32, next int64) {
	op := &c.h[i]
	start, how := op.Offset, "asked for offset"
	if start == next || start < 0 {
		start, how = next, "started at offset"
		if len(op.Records) > 0 {
			start, how = op.Records[0].Offset, "returned its first record at offset"
		}
	}
	if start == next {
		return
	}
	was := fmt.Sprintf("client %d was at offset %d after op %d, then op %d %s %d", op.Client, next, c.h[prev].ID, op.ID, how, start)
	if start > next {
		c.report(AnomalyPollSkip, next, "", []int32{prev, i}, "%s, skipping %s", was, span(next, start-1))
	} else {
		c.report(AnomalyNonmonotonicPoll, start, "", []int32{prev, i}, "%s, going back over %s", was, span(start, next-1))
	}
}
