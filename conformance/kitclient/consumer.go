package kitclient

// The reference consumer: Kafka's consumer protocol (metadata, group
// membership, offset fetch and reset, long-poll fetches, commits) as a pure
// state machine, like the Producer. Inputs are method calls carrying a
// logical time in ms (Handle, Tick, Assign, Seek, Commit, Close); Ready
// hands over the messages to send and the events the consumer learnt;
// Poll hands over the records fetched.
//
// Where it simplifies Kafka's Java consumer:
//   - One request per partition and per purpose: a fetch names one
//     partition, ListOffsets one partition, and each partition has at most
//     one fetch in flight.
//   - Only eager rebalancing: every rebalance revokes every partition
//     (no KIP-429 cooperative protocol, no static membership).
//   - No auto-commit: the application commits with Commit, which resolves
//     as an event; a commit is sent once, never retried (commitAsync).
//   - The leader does not rejoin when metadata shows a subscribed topic
//     grew; topics unknown to its metadata after one refresh are skipped
//     by the assignor.
//   - The position advances at Poll, as Kafka's does; fetching runs ahead
//     of it by at most MaxPartitionFetchBytes of unpolled records.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// ctl is one request in flight.
//
// Invariant: corr == 0 <=> no request in flight.
type ctl struct {
	corr     uint64
	to       clientmsg.NodeID
	sent     int64
	deadline int64
}

func (c ctl) busy() bool { return c.corr != 0 }

// phase is where a partition stands on its way to being fetched.
type phase uint8

const (
	phaseCommitted phase = iota + 1 // waiting for the group's committed offset
	phaseReset                      // waiting for ListOffsets (auto.offset.reset)
	phaseNoOffset                   // auto.offset.reset none: waiting for Seek
	phaseFetch                      // position known: fetching
)

// consumedPart is one assigned partition.
//
// Invariants:
//  1. phase == phaseFetch => position <= next, and buffered holds exactly
//     the records at offsets [position, next) that were fetched.
//  2. fetch.busy() => phase == phaseFetch; list.busy() => phase == phaseReset.
type consumedPart struct {
	tp        kafka.TopicPartition
	gen       int32
	phase     phase
	position  int64 // next offset to deliver; -1 unknown
	next      int64 // next offset to fetch; -1 unknown
	fetch     ctl
	list      ctl
	notBefore int64 // backoff after a failed fetch or ListOffsets
	// stale: the leader refused or did not answer, so the partition waits
	// for a metadata answer to a request sent after staleAfter requests.
	stale      bool
	staleAfter uint64
	buffered   []ConsumerRecord
	bufBytes   int
}

// Consumer is the reference consumer. It is not safe for concurrent use:
// the caller serializes every call.
type Consumer struct {
	id   clientmsg.NodeID
	cfg  ConsumerConfig
	rng  *rand.Rand
	now  int64
	corr uint64

	// Metadata.
	clusterView
	meta          ctl
	metaWanted    bool
	metaNotBefore int64
	metaRefreshAt int64
	metaAnswers   uint64 // metadata answers taken so far
	metaSent      uint64 // metadata requests sent so far
	metaNumber    uint64 // of the request in flight

	g consumerGroup

	parts  map[kafka.TopicPartition]*consumedPart
	order  []*consumedPart // sorted by topic, partition
	closed bool

	out    []clientmsg.Envelope
	events []ConsumerEvent
}

// NewConsumer returns a consumer that sends as node id, drawing every
// random choice (which broker to ask) from rng. With cfg.Group and
// cfg.Topics it starts joining the group at the first call carrying time.
func NewConsumer(id clientmsg.NodeID, cfg ConsumerConfig, rng *rand.Rand) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("%w: nil rng", ErrInvalidConsumerConfig)
	}
	cfg.Bootstrap = slices.Clone(cfg.Bootstrap)
	cfg.Topics = slices.Compact(slices.Sorted(slices.Values(cfg.Topics)))
	c := &Consumer{
		id:          id,
		cfg:         cfg,
		rng:         rng,
		clusterView: newClusterView(-1),
		parts:       map[kafka.TopicPartition]*consumedPart{},
		// As the producer's: a restarted client must not take its
		// predecessor's answers for its own.
		corr: rng.Uint64() >> 1,
	}
	c.g.generation = -1
	if c.subscribed() {
		c.g.state = gsJoining
		c.metaWanted = true
	}
	return c, nil
}

// subscribed reports whether the consumer takes its partitions from the
// group.
func (c *Consumer) subscribed() bool { return c.cfg.Group != "" && len(c.cfg.Topics) > 0 }

// Assign sets the partitions to consume by hand (assign()), replacing the
// previous ones: partitions kept keep their position, new ones start from
// the group's committed offset (with a Group) or per AutoOffsetReset.
func (c *Consumer) Assign(tps []kafka.TopicPartition, now int64) error {
	c.advance(now)
	if c.subscribed() {
		return ErrSubscribed
	}
	if c.closed {
		return ErrClosed
	}
	want := slices.SortedFunc(slices.Values(tps), kafka.TopicPartition.Compare)
	want = slices.Compact(want)
	var gone []kafka.TopicPartition
	for _, ps := range c.order {
		if _, ok := slices.BinarySearchFunc(want, ps.tp, kafka.TopicPartition.Compare); !ok {
			gone = append(gone, ps.tp)
		}
	}
	if len(gone) > 0 {
		c.emit(&Revoked{Span: Span{now, now}, Generation: -1, Partitions: gone})
	}
	kept := c.parts
	c.parts, c.order = map[kafka.TopicPartition]*consumedPart{}, nil
	for _, tp := range want {
		ps, ok := kept[tp]
		if !ok {
			ps = c.newPart(tp, -1)
		}
		c.parts[tp] = ps
		c.order = append(c.order, ps)
	}
	c.emit(&Assigned{Span: Span{now, now}, Generation: -1, Partitions: want})
	c.step()
	return nil
}

// newPart is tp's state on assignment: it starts from the committed
// offset when there is a group, else per auto.offset.reset.
func (c *Consumer) newPart(tp kafka.TopicPartition, gen int32) *consumedPart {
	ps := &consumedPart{tp: tp, gen: gen, phase: phaseCommitted, position: -1, next: -1}
	if c.cfg.Group == "" {
		c.startReset(ps, c.now)
	}
	return ps
}

// Seek sets tp's position: the next Poll returns records from offset on.
// Records are not deleted by consumption, so a seek back re-reads them.
func (c *Consumer) Seek(tp kafka.TopicPartition, offset int64, now int64) error {
	c.advance(now)
	ps, ok := c.parts[tp]
	if !ok {
		return fmt.Errorf("seek %s: %w", tp, ErrNotAssigned)
	}
	c.position(ps, offset)
	c.emit(&Positioned{Span: Span{now, now}, TP: tp, Offset: offset, Why: WhySeek})
	c.step()
	return nil
}

// position makes offset ps's position and next fetch offset, dropping
// whatever was in flight or buffered for the old one.
func (c *Consumer) position(ps *consumedPart, offset int64) {
	ps.phase = phaseFetch
	ps.position, ps.next = offset, offset
	ps.fetch, ps.list = ctl{}, ctl{}
	ps.buffered, ps.bufBytes = nil, 0
	ps.notBefore = 0
	ps.stale = false
}

// Poll returns the records fetched since the last call, per partition in
// partition order, each in offset order, and moves the positions past them.
func (c *Consumer) Poll() []Delivery {
	var out []Delivery
	for _, ps := range c.order {
		if len(ps.buffered) == 0 {
			continue
		}
		out = append(out, Delivery{TP: ps.tp, Generation: ps.gen, Records: ps.buffered})
		ps.position = ps.buffered[len(ps.buffered)-1].Offset + 1
		ps.buffered, ps.bufBytes = nil, 0
	}
	if len(out) > 0 {
		c.step() // partitions held back by a full buffer fetch again
	}
	return out
}

// Assignment returns the partitions the consumer holds, sorted.
func (c *Consumer) Assignment() []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, len(c.order))
	for i, ps := range c.order {
		out[i] = ps.tp
	}
	return out
}

// Position returns tp's position, the offset of the next record Poll will
// return, or false while it is not known or tp is not assigned.
func (c *Consumer) Position(tp kafka.TopicPartition) (int64, bool) {
	ps, ok := c.parts[tp]
	if !ok || ps.phase != phaseFetch {
		return -1, false
	}
	return ps.position, true
}

// Handle takes a message addressed to the consumer: MetadataResponse,
// FindCoordinatorResponse, GroupResponse, FetchResponse or
// ListOffsetsResponse. Answers to requests the consumer no longer waits
// for (timed out, superseded, for a revoked partition, from another node
// than the one asked) are dropped.
func (c *Consumer) Handle(from clientmsg.NodeID, msg kafka.Message, now int64) {
	c.advance(now)
	if c.closed {
		return
	}
	_, _ = consumerHandlers().Handle(toConsumer{c, from}, msg)
	c.step()
}

// toConsumer is what a consumer's handler gets besides its message.
type toConsumer struct {
	c    *Consumer
	from clientmsg.NodeID
}

// consumerHandlers is the consumer's table of what it does with each
// answer it receives.
var consumerHandlers = sync.OnceValue(func() *kafka.Handlers[toConsumer] {
	h := &kafka.Handlers[toConsumer]{}
	kafka.On(h, func(in toConsumer, m clientmsg.MetadataResponse) error { in.c.handleMetadata(in.from, m); return nil })
	kafka.On(h, func(in toConsumer, m clientmsg.FindCoordinatorResponse) error {
		in.c.handleFindCoordinator(in.from, m)
		return nil
	})
	kafka.On(h, func(in toConsumer, m clientmsg.GroupResponse) error { in.c.handleGroupResponse(in.from, m); return nil })
	kafka.On(h, func(in toConsumer, m clientmsg.FetchResponse) error { in.c.handleFetch(in.from, m); return nil })
	kafka.On(h, func(in toConsumer, m clientmsg.ListOffsetsResponse) error {
		in.c.handleListOffsets(in.from, m)
		return nil
	})
	return h
})

// handleMetadata applies the metadata a broker answered with.
func (c *Consumer) handleMetadata(from clientmsg.NodeID, m clientmsg.MetadataResponse) {
	if !c.meta.busy() || m.Correlation != c.meta.corr || from != c.meta.to {
		return
	}
	c.meta = ctl{}
	c.metaNotBefore = c.now + c.cfg.RetryBackoffMs
	if m.Err != nil {
		return // the connection broke: ask again after the backoff
	}
	c.metaRefreshAt = c.now + c.cfg.MetadataMaxAgeMs
	c.metaAnswers++
	c.applyMetadata(m.Partitions, m.LiveBrokers)
	for _, ps := range c.order {
		if ps.stale && ps.staleAfter < c.metaNumber {
			ps.stale = false
		}
	}
}

// Tick advances logical time: requests without an answer time out,
// backoffs end, heartbeats and metadata refreshes fall due.
func (c *Consumer) Tick(now int64) {
	c.advance(now)
	if c.closed {
		return
	}
	if c.meta.busy() && c.now >= c.meta.deadline {
		c.silent = c.meta.to
		c.meta = ctl{}
		c.metaWanted = true
	}
	c.tickGroup()
	for _, ps := range c.order {
		c.tickPart(ps)
	}
	c.step()
}

// Ready returns the messages to send, in order, and the events since the
// last call. The caller owns both slices.
func (c *Consumer) Ready() ([]clientmsg.Envelope, []ConsumerEvent) {
	out, ev := c.out, c.events
	c.out, c.events = nil, nil
	return out, ev
}

// Close leaves the group (LeaveGroup), revokes every partition and stops
// the consumer: commits not yet resolved end with ErrClosed (Unknown when
// already sent), and nothing is sent after the LeaveGroup.
func (c *Consumer) Close(now int64) {
	c.advance(now)
	if c.closed {
		return
	}
	if c.subscribed() && c.g.memberID != "" && c.g.coordKnown {
		c.sendGroup(&ctl{}, clientmsg.NodeID(c.g.coord), c.leaveRequest(), c.cfg.RequestTimeoutMs)
	}
	c.revoke()
	c.failCommits(ErrClosed)
	c.g.state = gsClosed
	c.closed = true
}

// step sends whatever is due: metadata, group requests, offset resets and
// fetches.
func (c *Consumer) step() {
	if c.closed {
		return
	}
	c.stepGroup()
	for _, ps := range c.order {
		c.stepPart(ps)
	}
	c.maybeRequestMetadata()
}

func (c *Consumer) advance(now int64) {
	if now > c.now {
		c.now = now
	}
}

func (c *Consumer) nextCorr() uint64 {
	c.corr++
	return c.corr
}

func (c *Consumer) send(to clientmsg.NodeID, msg kafka.Message) {
	c.out = append(c.out, clientmsg.Envelope{From: c.id, To: to, Msg: msg})
}

func (c *Consumer) emit(e ConsumerEvent) { c.events = append(c.events, e) }

// maybeRequestMetadata asks a broker for metadata when some is wanted (a
// leader is missing, an error said metadata is stale, or it is old), none
// is in flight and the backoff has passed.
func (c *Consumer) maybeRequestMetadata() {
	if !c.subscribed() && len(c.order) == 0 {
		return
	}
	if c.now >= c.metaRefreshAt {
		c.metaWanted = true
	}
	if !c.metaWanted || c.meta.busy() || c.now < c.metaNotBefore {
		return
	}
	to, ok := c.pickBroker()
	if !ok {
		return
	}
	c.meta = ctl{corr: c.nextCorr(), to: to, sent: c.now, deadline: c.now + c.cfg.MetadataTimeoutMs}
	c.metaSent++
	c.metaNumber = c.metaSent
	c.metaWanted = false
	c.send(to, clientmsg.MetadataRequest{Correlation: c.meta.corr})
}

// pickBroker chooses a broker to ask for metadata or the coordinator.
func (c *Consumer) pickBroker() (clientmsg.NodeID, bool) { return c.pick(c.cfg.Bootstrap, c.rng) }

// applyMetadata merges partition states (clusterView.merge), then lets a
// leader waiting for partition counts assign.
func (c *Consumer) applyMetadata(parts []kafka.PartitionState, live []int32) {
	c.merge(parts, live)
	c.maybeAssign()
}

// leaderOf returns tp's leader and epoch, asking for metadata when there
// is none.
func (c *Consumer) leaderOf(tp kafka.TopicPartition) (leaderInfo, bool) {
	l, ok := c.leaders[tp]
	if !ok || l.leader < 0 {
		c.metaWanted = true
		return leaderInfo{}, false
	}
	return l, true
}

// flatten returns the records of batches at offsets >= from, in order:
// Kafka may answer with a batch that starts before the fetch offset. A
// batch served as its bytes is decoded here, as a client does.
func flatten(batches []record.Batch, from int64) ([]ConsumerRecord, error) {
	var out []ConsumerRecord
	for i := range batches {
		b := &batches[i]
		recs, err := b.DecodeRecords(nil)
		if err != nil {
			return nil, fmt.Errorf("%w: batch at offset %d: %v", kafka.ErrCorruptMessage, b.BaseOffset, err)
		}
		for j, r := range recs {
			off := b.BaseOffset + int64(j)
			if off < from {
				continue
			}
			out = append(out, ConsumerRecord{Offset: off, Key: cloneBytes(r.Key), Value: cloneBytes(r.Value), Timestamp: r.Timestamp})
		}
	}
	return out, nil
}
