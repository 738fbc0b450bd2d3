// Package traffic is the harness's workload: the clients that produce,
// consume and join groups during a run, and the history they record. The
// simulator (conformance/sim) and the live runner (conformance/live) both
// drive the very same clients, through a World and the Host behind it, so
// that a run on real processes records the same kind of history as a
// simulated one.
package traffic

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/watermarkhq/watermark/conformance/nemesis"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// World is what the clients share with whoever runs them: the run's
// spec, its random source and clock, and what the run recorded.
type World struct {
	Spec run.Spec
	Rng  *rand.Rand
	// Now is the run's time in milliseconds; the runner sets it before
	// every step.
	Now int64
	// Over is set when the workload's time is up: producers stop, and the
	// faults heal.
	Over    bool
	History []linearizability.Op
	Stats   run.Stats
	// Situations counts the protocol situations reached (Reached).
	Situations map[run.Situation]int
	// LossByFault says why the run's faults may cost a correct broker
	// committed records (run.Result.LossByFault).
	LossByFault []string
	Notes       []run.Note
	Host        Host

	clients []*client
	leaders map[kafka.TopicPartition][]int32 // every leader of each partition in turn (Elected)
}

// Host is the runner behind a World.
type Host interface {
	// Send puts a client's message on the network.
	Send(env clientmsg.Envelope)
	// ScheduleClientTick asks for client id's first tick at time at; the
	// runner ticks every client every TickMs after that.
	ScheduleClientTick(id clientmsg.NodeID, at int64)
	// LiveBrokers lists the brokers a client may ask for metadata.
	LiveBrokers() []clientmsg.NodeID
	// OnAck counts an acknowledged produce.
	OnAck()
	// Noted hears of every note, after it is recorded.
	Noted(n run.Note)
	// After runs fn at time at, in the runner's loop.
	After(at int64, fn func())
	// Cluster is the cluster as the runner knows it, for the broker a
	// fault strikes (Broker) and the steps it unfolds into (Unfold). The
	// World provides its ConsumersUp.
	nemesis.Cluster
}

// Note records n at the current time.
func (w *World) Note(n run.Note) {
	n.AtMs = w.Now
	w.Notes = append(w.Notes, n)
	w.Host.Noted(n)
}

// TickClient runs client id's timer.
func (w *World) TickClient(id clientmsg.NodeID) {
	if i := int(id - clientmsg.ClientIDBase); i >= 0 && i < len(w.clients) {
		w.clients[i].tick()
	}
}

// Deliver hands a message to the client it is addressed to.
func (w *World) Deliver(env clientmsg.Envelope) {
	if i := int(env.To - clientmsg.ClientIDBase); i >= 0 && i < len(w.clients) {
		w.clients[i].handle(env)
	}
}

// Clients lists the clients' node ids.
func (w *World) Clients() []clientmsg.NodeID {
	ids := make([]clientmsg.NodeID, len(w.clients))
	for i, c := range w.clients {
		ids[i] = c.id
	}
	return ids
}

// RestartProducer implements run.Striker: producer i (0-based) restarts,
// a new process with a new producer id, which sends its last
// unacknowledged record again.
func (w *World) RestartProducer(i int) error {
	w.clients[i].restartProducer()
	w.Stats.Faults++
	return nil
}

// CrashConsumer implements run.Striker: group consumer i (0-based) dies,
// and a new member starts after downMs.
func (w *World) CrashConsumer(i int, downMs int64) error {
	w.groupConsumer(i).crashGroupConsumer(downMs)
	w.Stats.Faults++
	return nil
}

// Broker implements run.Striker, the same way for every runner: the
// broker f strikes now (nemesis.Strike, on the Host's cluster), noted as
// skipped when there is none.
func (w *World) Broker(f run.Fault) (int, bool) {
	id, ok := nemesis.Strike(&w.Spec, w.Host, f, w.Rng)
	if !ok {
		w.Notef(run.NoteHarness, 0, "%s of the %s: no such broker now, skipped", f.Kind, f.Role)
	}
	return id, ok
}

// Unfold implements run.Striker: f's steps on the Host's cluster now
// (nemesis.Unfold).
func (w *World) Unfold(f run.Fault) []run.Step {
	return nemesis.Unfold(&w.Spec, w.Host, f, w.Rng)
}

// Elected records that leader leads tp now (the first call for tp gives
// its first leader): leadership back at a broker that led tp before
// another did reaches run.SitLeaderReturned.
func (w *World) Elected(tp kafka.TopicPartition, leader int32) {
	if w.leaders == nil {
		w.leaders = map[kafka.TopicPartition][]int32{}
	}
	past := w.leaders[tp]
	n := len(past)
	if n > 0 && past[n-1] == leader {
		return
	}
	if n > 0 && slices.Contains(past[:n-1], leader) {
		w.Reached(run.SitLeaderReturned)
	}
	w.leaders[tp] = append(past, leader)
}

// Reached records that the run reached situation sit.
func (w *World) Reached(sit run.Situation) {
	if w.Situations == nil {
		w.Situations = map[run.Situation]int{}
	}
	w.Situations[sit]++
}

// Notef records a note of kind about node (0: none) now.
func (w *World) Notef(kind run.NoteKind, node int, format string, args ...any) {
	w.Note(run.Note{Kind: kind, Node: node, Text: fmt.Sprintf(format, args...)})
}

// ConsumersUp lists the group consumers whose process runs.
func (w *World) ConsumersUp() []int {
	var up []int
	for i := range w.Spec.Workload.GroupConsumers {
		if !w.groupConsumer(i).group.down {
			up = append(up, i)
		}
	}
	return up
}

// Close ends the run's history: an operation still open never learnt its
// outcome.
func (w *World) Close() {
	for i := range w.History {
		if w.History[i].Return < 0 {
			w.History[i].Outcome = linearizability.OutcomeUnknown
		}
	}
}

func (w *World) send(env clientmsg.Envelope)            { w.Host.Send(env) }
func (w *World) schedule(id clientmsg.NodeID, at int64) { w.Host.ScheduleClientTick(id, at) }
