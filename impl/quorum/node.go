package quorum

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"sync"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/controller"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/impl/storage"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// NodeID names a node (impl/broker's).
type NodeID = broker.NodeID

// Config is one voter's configuration.
type Config struct {
	// Voter is this controller's number in the quorum, 1 to
	// Quorum.Voters; its node id is broker.VoterNode(Voter).
	Voter      int
	Quorum     settings.Quorum
	Controller controller.Config
	// Seed seeds the draws of the election backoff: the simulator passes
	// one from the run's seed, so that elections replay; a process, one
	// of its own.
	Seed uint64
}

// Node is one voter of the controller quorum. The host hands it messages
// (Handle) and time (Tick), then sends what TakeOutbox returns. It keeps
// its log on disk through storage.Disk, as a broker does, and starts no
// goroutine and reads no clock. A Node is not safe for concurrent use.
type Node struct {
	cfg Config
	id  NodeID
	st  *store
	rn  *raft.RawNode
	rng *rand.Rand
	now int64

	// img is the metadata as of applied: every committed record, in log
	// order.
	img      *controller.Image
	applied  uint64
	snapshot uint64 // index of the last snapshot

	term, lead uint64
	elect      elections
	// act is the active controller: set while this voter leads, has
	// applied its whole log and heard from a majority lately.
	act *active

	out    []broker.Envelope
	events []Event
	// halted is the error that stopped the node: a disk that failed, a
	// record that would take metadata back. The host stops the process.
	halted error
}

// Event is something a voter did or decided, for traces and checkers.
type Event struct {
	Now   int64
	Voter int
	Term  uint64
	// Kind: "active" (this voter became the active controller), "inactive"
	// (it stopped), "decided" (a controller.Event it decided, now
	// committed), "applied" (a batch of records applied at Index).
	Kind     string
	Index    uint64
	Decision controller.Event
	Proposer int
	Records  []controller.Record
	Why      string // "inactive": why it stopped
}

// Open starts voter cfg.Voter on disk: a new log if the disk holds none,
// else the log and snapshot it holds.
func Open(cfg Config, disk storage.Disk, now int64) (*Node, error) {
	if err := cfg.Quorum.Validate(); err != nil {
		return nil, err
	}
	if cfg.Voter < 1 || cfg.Voter > cfg.Quorum.Voters {
		return nil, fmt.Errorf("%w: voter %d of %d", settings.ErrInvalidQuorum, cfg.Voter, cfg.Quorum.Voters)
	}
	if err := cfg.Controller.Validate(); err != nil {
		return nil, err
	}
	st, err := openStore(disk, voters(cfg.Quorum.Voters))
	if err != nil {
		return nil, fmt.Errorf("controller %d: %w", cfg.Voter, err)
	}
	snap, err := st.mem.Snapshot()
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, id: broker.VoterNode(cfg.Voter), st: st, now: now,
		rng: rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Voter))), applied: snap.GetMetadata().GetIndex()}
	n.snapshot = n.applied
	if n.img, err = imageOf(snap.GetData()); err != nil {
		return nil, fmt.Errorf("controller %d: %s: %w", cfg.Voter, snapshotFile, err)
	}
	n.rn, err = raft.NewRawNode(&raft.Config{
		ID:              uint64(cfg.Voter),
		ElectionTick:    10, // unused: followers are never ticked (elect.go)
		HeartbeatTick:   1,  // the leader ticks once per HeartbeatMs
		Storage:         st.mem,
		Applied:         n.applied,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 64,
		PreVote:         true,
		// Followers never propose: only the active controller decides
		// (a proposal forwarded from a follower would be a decision made
		// on a stale image).
		DisableProposalForwarding: true,
		Logger:                    discard,
	})
	if err != nil {
		return nil, err
	}
	hs, _, _ := st.mem.InitialState()
	n.term = hs.GetTerm()
	n.elect.init(n)
	return n, nil
}

// discard is raft's logger: the node reports through Events. (Its
// Panic and Fatal still panic, as raft expects of any logger.)
var discard = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

func voters(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	return ids
}

// imageOf decodes a snapshot's data: an empty one is the bootstrap's.
func imageOf(data []byte) (*controller.Image, error) {
	if len(data) == 0 {
		return controller.NewImage(), nil
	}
	var s controller.Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return controller.ImageOf(s)
}

// ID is the node's id.
func (n *Node) ID() NodeID { return n.id }

// Halted is the error that stopped the node, nil while it runs.
func (n *Node) Halted() error { return n.halted }

// Term is the Raft term the node is in.
func (n *Node) Term() uint64 { return n.term }

// Leader is the voter the node takes for the quorum's leader, 0 if none.
func (n *Node) Leader() int { return int(n.lead) }

// Active reports whether the node is the active controller.
func (n *Node) Active() bool { return n.act != nil }

// Applied is the index of the last log entry applied to the image.
func (n *Node) Applied() uint64 { return n.applied }

// Image is the metadata as of Applied (read it, never change it).
func (n *Node) Image() *controller.Image { return n.img }

// Controller is the active controller's state machine, nil unless Active.
func (n *Node) Controller() *controller.Controller {
	if n.act == nil {
		return nil
	}
	return n.act.c
}

// TakeOutbox returns the messages to send since the last call.
func (n *Node) TakeOutbox() []broker.Envelope {
	out := n.out
	n.out = nil
	return out
}

// TakeEvents returns what the node did since the last call.
func (n *Node) TakeEvents() []Event {
	ev := n.events
	n.events = nil
	return ev
}

func (n *Node) send(to NodeID, msg kafka.Message) {
	n.out = append(n.out, broker.Envelope{From: n.id, To: to, Msg: msg})
}

func (n *Node) emit(e Event) {
	e.Now, e.Voter, e.Term = n.now, n.cfg.Voter, n.term
	n.events = append(n.events, e)
}

// Handle takes one message: from another voter (RaftMessage) or from a
// broker. A non-nil error means the node halted (Halted).
func (n *Node) Handle(env broker.Envelope, now int64) error {
	if n.halted != nil {
		return n.halted
	}
	n.now = max(n.now, now)
	if _, err := handlers().Handle(inbound{n: n, from: env.From}, env.Msg); err != nil {
		n.halt(err)
	}
	n.process()
	return n.halted
}

// Tick moves time: the leader's heartbeats, a follower's election timer,
// the active controller's broker sessions.
func (n *Node) Tick(now int64) error {
	if n.halted != nil {
		return n.halted
	}
	n.now = max(n.now, now)
	n.elect.tick(n)
	n.process()
	if n.act != nil && n.halted == nil {
		n.act.tick(n)
		n.process()
	}
	return n.halted
}

// Campaign starts an election at once: the simulator's bootstrap, so that
// every run starts from a settled quorum.
func (n *Node) Campaign() error {
	if err := n.rn.Campaign(); err != nil {
		return err
	}
	n.process()
	return n.halted
}

func (n *Node) halt(err error) {
	if n.halted == nil {
		n.halted = fmt.Errorf("controller %d: %w", n.cfg.Voter, err)
		n.deactivate("halted")
	}
}

// inbound is what a handler gets besides its message.
type inbound struct {
	n    *Node
	from NodeID
}

var handlers = sync.OnceValue(func() *kafka.Handlers[inbound] {
	h := &kafka.Handlers[inbound]{}
	kafka.On(h, func(in inbound, m RaftMessage) error { return in.n.step(in.from, m) })
	onBrokerRequests(h)
	return h
})

// step hands raft a message from another voter.
func (n *Node) step(from NodeID, m RaftMessage) error {
	msg := &pb.Message{}
	if err := proto.Unmarshal(m.Data, msg); err != nil || NodeID(-int64(msg.GetFrom())) != from {
		return nil // not a voter's message: dropped, as a network drops garbage
	}
	if n.elect.refuse(n, msg) {
		return nil
	}
	n.elect.heard(n, msg)
	err := n.rn.Step(msg)
	if errors.Is(err, raft.ErrStepPeerNotFound) || errors.Is(err, raft.ErrStepLocalMsg) {
		return nil
	}
	return err
}

// process carries out raft's Readys until it has none: persist, send,
// apply, in raft's order; then what the applied records let the active
// controller do.
func (n *Node) process() {
	for n.halted == nil {
		n.drain()
		if n.halted != nil {
			return
		}
		n.elect.roleChanged(n)
		n.maybeActivate() // an activation may propose
		if !n.rn.HasReady() {
			break
		}
	}
	if n.halted != nil {
		return
	}
	if n.act != nil {
		n.act.stamp(n)
		n.act.release(n)
	}
	if err := n.maybeSnapshot(); err != nil {
		n.halt(err)
	}
}

// drain carries out raft's Readys until it has none.
func (n *Node) drain() {
	for n.halted == nil && n.rn.HasReady() {
		rd := n.rn.Ready()
		if rd.SoftState != nil {
			n.lead = rd.SoftState.Lead
		}
		if rd.HardState != nil && rd.HardState.GetTerm() > n.term {
			n.term = rd.HardState.GetTerm()
		}
		if err := n.st.save(rd); err != nil {
			n.halt(fmt.Errorf("metadata log: %w", err))
			return
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			if err := n.restoreSnapshot(rd.Snapshot); err != nil {
				n.halt(err)
				return
			}
		}
		for _, m := range rd.Messages {
			n.sendRaft(m)
		}
		if err := n.apply(rd.CommittedEntries); err != nil {
			n.halt(err)
			return
		}
		n.rn.Advance(rd)
	}
}

func (n *Node) sendRaft(m *pb.Message) {
	n.elect.sent(n, m)
	data, err := proto.Marshal(m)
	if err != nil {
		n.halt(err)
		return
	}
	n.send(broker.VoterNode(int(m.GetTo())), RaftMessage{Data: data})
	if m.GetType() == pb.MsgSnap {
		// Sent is all the node can know: a lost snapshot shows up as a
		// follower that still lags, and raft probes it again.
		n.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
	}
}

// restoreSnapshot replaces the image by a snapshot the leader sent.
func (n *Node) restoreSnapshot(snap *pb.Snapshot) error {
	img, err := imageOf(snap.GetData())
	if err != nil {
		return fmt.Errorf("snapshot from the leader: %w", err)
	}
	n.img, n.applied, n.snapshot = img, snap.GetMetadata().GetIndex(), snap.GetMetadata().GetIndex()
	n.deactivate("its metadata was replaced by a snapshot")
	return nil
}

// apply applies committed entries to the image, in log order.
func (n *Node) apply(ents []*pb.Entry) error {
	for _, e := range ents {
		if e.GetIndex() <= n.applied {
			continue
		}
		n.applied = e.GetIndex()
		if e.GetType() != pb.EntryNormal || len(e.GetData()) == 0 {
			continue // a new leader's empty entry
		}
		var b Batch
		if err := json.Unmarshal(e.GetData(), &b); err != nil {
			return fmt.Errorf("%w: entry %d: %v", ErrCorrupt, e.GetIndex(), err)
		}
		for _, r := range b.Records {
			if err := n.img.Apply(r); err != nil {
				return fmt.Errorf("entry %d (term %d, from controller %d): %w", e.GetIndex(), e.GetTerm(), b.Proposer, err)
			}
		}
		n.emit(Event{Kind: "applied", Index: e.GetIndex(), Proposer: b.Proposer, Records: b.Records})
		if n.act != nil {
			n.act.committed(b.Records)
		}
	}
	return nil
}

// maybeSnapshot snapshots the image once SnapshotEntries entries were
// applied since the last one.
func (n *Node) maybeSnapshot() error {
	if n.applied-n.snapshot < n.cfg.Quorum.SnapshotEntries {
		return nil
	}
	data, err := json.Marshal(n.img.Snapshot())
	if err != nil {
		return err
	}
	if err := n.st.compact(n.applied, &pb.ConfState{Voters: voters(n.cfg.Quorum.Voters)}, data); err != nil {
		return fmt.Errorf("metadata snapshot: %w", err)
	}
	n.snapshot = n.applied
	return nil
}

// Batch is one log entry: the records of one decision of the active
// controller, applied together (KRaft's atomic record batches).
type Batch struct {
	// Proposer is the voter that proposed it, Term its term then.
	Proposer int
	Term     uint64
	Records  []controller.Record
}

// RaftMessage is one raft message between voters, protobuf-encoded.
type RaftMessage struct{ Data []byte }

// Kind implements kafka.Message.
func (RaftMessage) Kind() kafka.Kind { return "raft" }

func init() {
	kafka.Register(kafka.Row{Kind: "raft", Proto: RaftMessage{}, Wire: true})
}

// Single starts a quorum of one voter on a disk of its own in memory,
// active at once: the controller of tests that drive brokers by hand.
func Single(cfg controller.Config, now int64) (*Node, error) {
	n, err := Open(Config{Voter: 1, Quorum: settings.DefaultQuorum(), Controller: cfg}, storage.NewSimDisk(), now)
	if err != nil {
		return nil, err
	}
	if err := n.Campaign(); err != nil {
		return nil, err
	}
	if !n.Active() {
		return nil, errors.New("a quorum of one did not become active")
	}
	return n, nil
}

// String renders e for a process's log: "" for an applied batch (the
// decisions say what changed).
func (e Event) String() string {
	switch e.Kind {
	case "active":
		return fmt.Sprintf("controller %d: active controller in term %d, from log index %d", e.Voter, e.Term, e.Index)
	case "inactive":
		return fmt.Sprintf("controller %d: no longer active in term %d: %s", e.Voter, e.Term, e.Why)
	case "decided":
		return fmt.Sprintf("controller %d: %s", e.Voter, e.Decision)
	}
	return ""
}
