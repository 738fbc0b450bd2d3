// Package live runs a conformance run against real processes in real
// time: the harness's clients (conformance/traffic) speak the Kafka
// protocol to a running cluster, and the faults of the run's schedule and
// nemesis (conformance/nemesis) strike through signals, proxies or the
// user's commands. The same run.Spec the simulator runs drives it, and
// each fault strikes as its definition says (run.Def, shared with the
// simulator), through the live runner's primitives (faults.go). A fault
// whose primitive real processes lack (power loss, single messages) is
// refused before the run (Capabilities, Unsupported).
package live

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/watermarkhq/watermark/conformance/nemesis"
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/conformance/traffic"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/groupmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// Cluster is a cluster of real processes that the live runner can fault
// (conformance/cluster implements it for the reference; a third-party
// target implements what it can). Brokers are numbered 1..N.
type Cluster interface {
	Brokers() int
	Kill(id int) error
	Restart(id int) error
	Pause(id int) error
	Resume(id int) error
	Isolate(id int) error
	Heal() error
	// SetLatency adds d to every message to or from the broker; 0 clears it.
	SetLatency(id int, d time.Duration) error
	// How says, for the run's notes, how the cluster carries out a fault
	// of kind on broker id: "SIGKILL", or the user's command as run.
	How(kind run.FaultKind, id int) string
}

// DiskReplacer is a Cluster that owns its brokers' data directories: it
// can kill a broker and empty its directory (replace-disk), or kill it
// and damage its logs (damage-log); Restart then starts it on what is
// left.
type DiskReplacer interface {
	ReplaceDisk(id int) error
	// DamageLog stops broker id (kills it, or with clean stops it as
	// Stopper does) and flips n bytes of its log of each partition in
	// tps, at the byte pick chooses in the file's bytes; it says what it
	// flipped, per log.
	DamageLog(id int, tps []kafka.TopicPartition, n int, pick func(data []byte) (int64, bool), clean bool) ([]string, error)
}

// Stopper is a Cluster that can stop a broker as an operator does
// (SIGTERM: a controlled shutdown, then a flush and a clean-shutdown
// marker) and wait until it is down; Restart then starts it again.
type Stopper interface {
	Stop(id int) error
}

// Exchanger carries the clients' requests to a real cluster over the
// Kafka protocol: it takes the broker's own client-plane messages
// (clientmsg.ProduceRequest, FetchRequest, ListOffsetsRequest,
// MetadataRequest, InitProducerIDRequest) and returns the answer as the
// broker's own response type, with Kafka error codes turned back into the
// reference's errors. It returns nil, nil for an acks=0 produce.
type Exchanger interface {
	Exchange(ctx context.Context, to clientmsg.NodeID, msg kafka.Message) (kafka.Message, error)
	CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int) error
}

// Issuer is an Exchanger that can put a request on the wire at once, in
// the order issued, and wait for its answer later: what a real client's
// connection does with pipelined requests. The runner issues produces
// through it, so that an idempotent producer's batches reach the broker
// in sequence order.
type Issuer interface {
	Issue(to clientmsg.NodeID, msg kafka.Message) func(ctx context.Context) (kafka.Message, error)
}

// Options are what the live runner needs besides the run's Spec.
type Options struct {
	Cluster Cluster
	Net     Exchanger
	// NetFor, when set, gives each client its own connections (as separate
	// processes would have): a client's JoinGroup, which the coordinator
	// holds for a whole rebalance, must not hold up another client's
	// heartbeats on a shared connection (Kafka answers a connection's
	// requests in order). Net is then used for the runner's own requests.
	NetFor func(client clientmsg.NodeID) (Exchanger, error)
	// Progress, if set, is called about once a second with the run's time.
	Progress func(nowMs, endMs int64)
}

// live runs a workload against real processes in real time. It shares the
// clients with the simulator (traffic.World); what differs is the network
// (a real Kafka connection per request), the clock, and the faults, which
// are signals and proxy cuts instead of simulated ones.
type live struct {
	traffic.World
	opts    Options
	ctx     context.Context
	start   time.Time
	answers chan answer
	wg      sync.WaitGroup

	ticks   []liveTimer
	faulted []int // by broker id: faults in force
	down    []bool
	paused  []bool
	acked   int
	leaders map[kafka.TopicPartition]kafka.PartitionState
	metaDue int64
	metaOut bool
	// firstTick is when each client starts ticking.
	firstTick map[clientmsg.NodeID]int64
	nets      map[clientmsg.NodeID]Exchanger
	// joinWaitMs is the longest rebalance a JoinGroup asked for: how long
	// a SyncGroup may be held.
	joinWaitMs int64
	// electedAt is when the runner first saw each partition's current
	// leader epoch (zombie.go).
	electedAt map[kafka.TopicPartition]int64
	// hws and seenBy: the HWs and ISRs seen from outside (outside.go).
	hws    map[kafka.TopicPartition]*hwView
	seenBy map[clientmsg.NodeID]map[kafka.TopicPartition]kafka.PartitionState
	// posts carries what work done off the loop (async) leaves for it.
	posts   chan func()
	offLoop sync.WaitGroup
	// stopping marks the brokers a clean stop is under way on.
	stopping []bool
}

// async runs work off the loop (a clean stop takes seconds, and the
// clients must go on meanwhile); what it returns runs on the loop once
// it is done.
func (l *live) async(work func() func()) {
	l.offLoop.Add(1)
	go func() {
		defer l.offLoop.Done()
		l.posts <- work()
	}()
}

// drainAsync waits for the work async started and runs what it posted.
func (l *live) drainAsync() {
	l.offLoop.Wait()
	for len(l.posts) > 0 {
		(<-l.posts)()
	}
}

type liveTimer struct {
	at int64
	do func()
}

// Run runs cfg against a real cluster: the topics are created, the
// clients produce and consume through opts.Net, and the faults of cfg's
// schedule and nemesis strike through opts.Cluster, in real time. The
// run.Result has the history and the notes; protocol invariants cannot be
// checked from outside and are left empty.
func Run(ctx context.Context, cfg run.Spec, opts Options) (*run.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if why := Unsupported(cfg); why != "" {
		return nil, errors.New(why)
	}
	if opts.Cluster == nil || opts.Net == nil {
		return nil, errors.New("live run: a cluster and a network are required")
	}
	if n := opts.Cluster.Brokers(); n != cfg.Brokers {
		return nil, fmt.Errorf("live run: the config has %d brokers, the cluster %d", cfg.Brokers, n)
	}
	l := &live{
		World: traffic.World{
			Spec: cfg,
			Rng:  rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		},
		opts:    opts,
		ctx:     ctx,
		answers: make(chan answer, 4096),
		faulted: make([]int, cfg.Brokers+1),
		down:    make([]bool, cfg.Brokers+1),
		paused:  make([]bool, cfg.Brokers+1),
		posts:   make(chan func(), 4*cfg.Brokers+4),

		stopping: make([]bool, cfg.Brokers+1),
		leaders:  map[kafka.TopicPartition]kafka.PartitionState{},
		nets:     map[clientmsg.NodeID]Exchanger{},
	}
	l.Host = l
	for _, t := range cfg.Topics {
		tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := opts.Net.CreateTopic(tctx, t.Name, t.Partitions, t.ReplicationFactor)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("live run: create topic %q: %w", t.Name, err)
		}
	}
	if err := l.awaitLeaders(ctx); err != nil {
		return nil, err
	}
	l.start = time.Now()
	l.Start()
	for _, f := range cfg.Faults {
		l.at(f.When.AtMs, func() { l.inject(f) })
	}
	if len(cfg.Nemesis.Kinds) > 0 {
		var next func()
		next = func() {
			if l.Over {
				return
			}
			if f, ok := nemesis.Next(&l.Spec, l, l.Rng); ok {
				l.inject(f)
			}
			l.at(l.Now+nemesis.Delay(cfg.Nemesis, l.Rng), next)
		}
		l.at(nemesis.Delay(cfg.Nemesis, l.Rng), next)
	}
	l.at(cfg.DurationMs, func() {
		l.Over = true
		l.healAll()
	})
	if !cfg.NoFinalRead {
		l.at(cfg.DurationMs+cfg.SettleMs/2, l.StartFinalRead)
	}
	err := l.loop()
	l.drainAsync()
	l.healAll()
	for id := 1; id <= cfg.Brokers; id++ {
		if l.down[id] {
			_ = opts.Cluster.Restart(id)
		}
	}
	l.wg.Wait()
	l.Close()
	l.Stats.EndMs = l.Now
	l.noteRefusedAfterAppend()
	return &run.Result{Spec: cfg, History: l.History, Notes: l.Notes, Stats: l.Stats, Live: true, Reached: l.Situations, LossByFault: l.LossByFault}, err
}

// awaitLeaders waits until every partition of the run has a leader.
func (l *live) awaitLeaders(ctx context.Context) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		l.refreshLeaders(ctx)
		led := 0
		for _, tp := range l.Spec.Partitions() {
			if p, ok := l.leaders[tp]; ok && p.Leader > 0 {
				led++
			}
		}
		if led == len(l.Spec.Partitions()) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("live run: partitions without a leader 20 s after creating the topics (%d of %d led; brokers must be numbered 1..%d, or from 0 with the ids shifted)", led, len(l.Spec.Partitions()), l.Spec.Brokers)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// refreshLeaders asks a broker that is up for metadata, synchronously.
func (l *live) refreshLeaders(ctx context.Context) {
	for id := 1; id <= l.Spec.Brokers; id++ {
		if l.down[id] || l.paused[id] {
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := l.opts.Net.Exchange(mctx, clientmsg.NodeID(id), clientmsg.MetadataRequest{})
		cancel()
		if m, ok := resp.(clientmsg.MetadataResponse); ok && err == nil {
			l.learnLeaders(m)
			return
		}
	}
}

// learnLeaders notes leadership changes the way the simulator notes
// elections, so timelines read the same: of the run's own topics only
// (a cluster a user runs checks on holds other runs' topics, and its own).
func (l *live) learnLeaders(m clientmsg.MetadataResponse) {
	ours := map[string]bool{}
	for _, t := range l.Spec.Topics {
		ours[t.Name] = true
	}
	for _, p := range m.Partitions {
		tp := p.TopicPartition
		if !ours[tp.Topic] && (l.Spec.Workload.Group == "" || tp != l.Spec.GroupPartition()) {
			continue
		}
		old, seen := l.leaders[tp]
		if p.Leader < 0 {
			continue
		}
		if !seen {
			l.leaders[tp] = p.Clone()
			l.Elected(tp, p.Leader)
			continue
		}
		if p.LeaderEpoch < old.LeaderEpoch {
			continue // a broker behind the others
		}
		started := l.start != (time.Time{})
		if p.LeaderEpoch > old.LeaderEpoch {
			if l.electedAt == nil {
				l.electedAt = map[kafka.TopicPartition]int64{}
			}
			l.electedAt[tp] = l.Now
		}
		if p.LeaderEpoch > old.LeaderEpoch && started {
			// Seen from outside, an election is unclean when the new
			// leader was not in the last ISR we saw and leads an ISR of
			// itself alone, as an unclean election leaves it. Polls miss
			// ISR changes between them, so either test alone misleads: a
			// preferred leader that rejoined the ISR and took over between
			// two polls was not in the last ISR seen, and an ISR member
			// left alone is elected cleanly with an ISR of one. Both
			// together can still miss an unclean election (the leader
			// left the ISR between polls), and invent one only if, between
			// two polls, the leader joined the ISR and every other member
			// left it.
			l.Stats.Elections++
			if id := int(old.Leader); id > 0 && id < len(l.stopping) && l.stopping[id] {
				// Seen from outside: the leader was asked to stop and is
				// still up, and another leads now.
				l.Reached(run.SitLeaderMovedByShutdown)
			}
			unclean := !slices.Contains(old.ISR, p.Leader) && slices.Equal(p.ISR, []int32{p.Leader})
			if unclean {
				l.Stats.UncleanElections++
			}
			l.Note(run.ElectionNote(tp, p.Leader, p.LeaderEpoch, unclean))
			l.Elected(tp, p.Leader)
		}
		if started && !slices.Equal(sorted(old.ISR), sorted(p.ISR)) {
			if len(p.ISR) < len(old.ISR) {
				l.Stats.ISRShrinks++
			} else if len(p.ISR) > len(old.ISR) {
				l.Stats.ISRExpands++
			}
			l.Note(run.ISRNote(tp, sorted(old.ISR), sorted(p.ISR), -1))
		}
		l.leaders[tp] = p.Clone()
	}
}

func sorted(ids []int32) []int32 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

func (l *live) at(t int64, do func()) {
	l.ticks = append(l.ticks, liveTimer{at: t, do: do})
}

func (l *live) end() int64 { return l.Spec.DurationMs + l.Spec.SettleMs }

func (l *live) loop() error {
	tick := time.NewTicker(time.Duration(l.Spec.TickMs) * time.Millisecond)
	defer tick.Stop()
	lastProgress := int64(-1000)
	for {
		select {
		case <-l.ctx.Done():
			return l.ctx.Err()
		case fn := <-l.posts:
			l.Now = time.Since(l.start).Milliseconds()
			fn()
			continue
		case a := <-l.answers:
			env := a.env
			l.Now = time.Since(l.start).Milliseconds()
			l.noteZombie(a)
			l.noteHW(a)
			if m, ok := env.Msg.(clientmsg.MetadataResponse); ok && env.To == metadataWatcher {
				l.metaOut = false
				l.noteISRGrowth(env.From, m)
				l.learnLeaders(m)
				continue
			}
			l.Deliver(env)
			continue
		case <-tick.C:
		}
		l.Now = time.Since(l.start).Milliseconds()
		if l.Now >= l.end() || (l.Over && l.Stats.FinalReadDone) {
			return nil
		}
		// Timers, in time order; a timer may add timers.
		slices.SortStableFunc(l.ticks, func(a, b liveTimer) int { return int(a.at - b.at) })
		for len(l.ticks) > 0 && l.ticks[0].at <= l.Now {
			t := l.ticks[0]
			l.ticks = l.ticks[1:]
			t.do()
			slices.SortStableFunc(l.ticks, func(a, b liveTimer) int { return int(a.at - b.at) })
		}
		for _, id := range l.Clients() {
			if l.Now >= l.firstTick[id] {
				l.TickClient(id)
			}
		}
		if l.Now >= l.metaDue && !l.metaOut {
			l.metaDue = l.Now + metadataPollMs
			l.watchMetadata()
		}
		if l.opts.Progress != nil && l.Now-lastProgress >= 1000 {
			lastProgress = l.Now
			l.opts.Progress(l.Now, l.end())
		}
	}
}

// metadataWatcher is the node id the runner's own metadata polls answer to.
const metadataWatcher = clientmsg.ClientIDBase - 1

// metadataPollMs is how often the runner asks for metadata to see
// elections and ISR changes from outside: often enough that an ISR shrink
// and the election after it are rarely seen as one step.
const metadataPollMs = 100

func (l *live) watchMetadata() {
	for id := 1; id <= l.Spec.Brokers; id++ {
		if !l.down[id] && !l.paused[id] {
			l.metaOut = true
			l.Send(clientmsg.Envelope{From: metadataWatcher, To: clientmsg.NodeID(id), Msg: clientmsg.MetadataRequest{}})
			return
		}
	}
}

// Send implements traffic.Host: one request, on its own goroutine; the answer
// comes back through the loop. A lost answer is the client's timeout.
//
// run.Network.ResponseDropRate works as in the simulator: the produce reaches
// the broker and takes effect, and its answer is thrown away on arrival,
// so the producer cannot know (the at-least-once and exactly-once cases).
func (l *live) Send(env clientmsg.Envelope) {
	l.Stats.Messages++
	_, isProduce := env.Msg.(clientmsg.ProduceRequest)
	dropAnswer := isProduce && l.Spec.DropsAnswer(l.Now, l.Rng)
	if dropAnswer {
		l.Stats.Dropped++
	}
	ex := l.netFor(env.From)
	exchange := func(ctx context.Context) (kafka.Message, error) { return ex.Exchange(ctx, env.To, env.Msg) }
	if is, ok := ex.(Issuer); ok && isProduce {
		exchange = is.Issue(env.To, env.Msg) // on the wire now, in order
	}
	timeout := l.requestTimeout(env.Msg)
	var known kafka.PartitionState
	if p, ok := env.Msg.(kafka.Partitioned); ok {
		known = l.leaders[p.Subject()]
	}
	sentAt := l.Now
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, timeout)
		defer cancel()
		resp, err := exchange(ctx)
		if dropAnswer {
			return
		}
		if err != nil || resp == nil {
			broke := err != nil && ctx.Err() == nil
			// A metadata request is answered either way, so that the
			// watcher is freed. When the connection broke (a broker
			// stopping closes its own), a real client learns it at once
			// and asks another broker, or retries a produce whose
			// outcome is now unknown, rather than wait out its timeout.
			req, _ := env.Msg.(clientmsg.Request)
			_, isMeta := env.Msg.(clientmsg.MetadataRequest)
			switch {
			case broke && (isMeta || isProduce):
				resp = req.Refuse(fmt.Errorf("%w: %v", kafka.ErrNetwork, err))
			case isMeta && env.From == metadataWatcher:
				resp = req.Refuse(nil)
			default:
				return
			}
		}
		select {
		case l.answers <- answer{env: clientmsg.Envelope{From: env.To, To: env.From, Msg: resp}, req: env.Msg, known: known, sentAt: sentAt}:
		case <-l.ctx.Done():
		}
	}()
}

// netFor is the Exchanger of client id (made on first use; called from
// the loop only).
func (l *live) netFor(id clientmsg.NodeID) Exchanger {
	if l.opts.NetFor == nil || id == metadataWatcher {
		return l.opts.Net
	}
	if ex, ok := l.nets[id]; ok {
		return ex
	}
	ex, err := l.opts.NetFor(id)
	if err != nil {
		l.Notef(run.NoteHarness, 0, "client %d: no connection of its own (%v); it shares the runner's", id, err)
		ex = l.opts.Net
	}
	l.nets[id] = ex
	return ex
}

// requestTimeout is how long the runner waits for the answer to msg before
// it takes it as lost, by kind, as a real client's timeouts go: a fetch
// may be held its max wait, a JoinGroup or SyncGroup a whole rebalance;
// anything else gets the request timeout; each plus a second of margin.
func (l *live) requestTimeout(msg kafka.Message) time.Duration {
	ms := l.Spec.Workload.RequestTimeoutMs
	if f, ok := msg.(clientmsg.FetchRequest); ok {
		ms += f.MaxWaitMs
	}
	if g, ok := msg.(clientmsg.GroupRequest); ok {
		switch hold := g.Req.HoldMs(); {
		case hold == groupmsg.UntilRebalance:
			// A follower's SyncGroup waits for the leader's, which
			// the rebalance bounds.
			ms += l.joinWaitMs
		case hold > 0:
			ms += hold
			l.joinWaitMs = max(l.joinWaitMs, hold)
		}
	}
	return time.Duration(ms+1000) * time.Millisecond
}

// ScheduleClientTick implements traffic.Host.
func (l *live) ScheduleClientTick(id clientmsg.NodeID, at int64) {
	if l.firstTick == nil {
		l.firstTick = map[clientmsg.NodeID]int64{}
	}
	l.firstTick[id] = at
}

// LiveBrokers implements traffic.Host: the brokers not killed.
func (l *live) LiveBrokers() []clientmsg.NodeID {
	var ids []clientmsg.NodeID
	for id := 1; id <= l.Spec.Brokers; id++ {
		if !l.down[id] {
			ids = append(ids, clientmsg.NodeID(id))
		}
	}
	return ids
}

// OnAck implements traffic.Host.
func (l *live) OnAck() { l.acked++ }

// After implements traffic.Host.
func (l *live) After(at int64, fn func()) { l.at(at, fn) }

// Noted implements traffic.Host.
func (l *live) Noted(run.Note) {}

// note records a note of kind about broker node (0 if none).
