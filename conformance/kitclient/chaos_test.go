package kitclient

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// chaosCase is one randomized run's settings.
type chaosCase struct {
	cfg  Config
	loss bool // partitions sometimes lose the tail of their log
}

// delivery is a message on the chaos network.
type delivery struct {
	at   int64
	seq  int // tie-break, so equal times keep send order
	env  broker.Envelope
	resp bool // to the producer
}

// chaosRun drives a producer against the fake cluster over a network that
// delays (and so reorders) and drops messages, with refusals, errors after
// the append, leader moves and, if asked, log loss. After 20 s of traffic
// the faults stop and the run waits for every send to complete. It returns
// the producer's results, the final logs, and a trace for determinism.
func chaosRun(t *testing.T, c chaosCase, seed uint64) ([]Result, map[kafka.TopicPartition][]string, string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	fc := newFakeCluster([]int32{1, 2, 3})
	fc.createTopic("t", 3)
	cfg := c.cfg
	cfg.Bootstrap = []int32{1, 2, 3}
	cfg.RequestTimeoutMs, cfg.ResponseSlackMs = 1000, 200
	p, err := NewProducer(broker.ClientIDBase, cfg, rand.New(rand.NewPCG(seed, 7)))
	require.NoError(t, err)

	faults := true
	fc.refuse = func(broker.ProduceRequest) error {
		if faults && rng.IntN(20) == 0 {
			return kafka.ErrNotEnoughReplicas
		}
		return nil
	}
	fc.afterAppend = func(broker.ProduceRequest) error {
		if !faults {
			return nil
		}
		switch rng.IntN(40) {
		case 0:
			return kafka.ErrNotEnoughReplicasAfterAppend
		case 1:
			return kafka.ErrLeaderChanged
		}
		return nil
	}

	var (
		net     []delivery
		n       int
		results []Result
		trace   strings.Builder
	)
	post := func(at int64, env broker.Envelope, resp bool) {
		if faults && rng.IntN(40) == 0 {
			return // lost
		}
		n++
		net = append(net, delivery{at: at + 1 + rng.Int64N(30), seq: n, env: env, resp: resp})
	}
	collect := func(now int64) {
		out, res := p.Ready()
		for _, env := range out {
			fmt.Fprintf(&trace, "%d %v\n", now, env)
			post(now, env, false)
		}
		for _, r := range res {
			fmt.Fprintf(&trace, "%d %+v\n", now, r)
			results = append(results, r)
		}
	}

	sent := 0
	for now := int64(0); now < 200_000; now++ {
		if now == 20_000 {
			faults = false
		}
		if faults && now%5 == 0 && rng.IntN(8) == 0 {
			v := strconv.Itoa(sent)
			sent++
			m := Message{Topic: "t", Partition: -1, Value: []byte(v)}
			if rng.IntN(2) == 0 {
				m.Key = []byte(v)
			}
			p.Send(m, now)
		}
		if faults && rng.IntN(2000) == 0 {
			tp := kafka.TopicPartition{Topic: "t", Partition: rng.Int32N(3)}
			fc.moveLeader(tp, fc.brokers[rng.IntN(3)])
		}
		if faults && c.loss && rng.IntN(3000) == 0 {
			tp := kafka.TopicPartition{Topic: "t", Partition: rng.Int32N(3)}
			if l := len(fc.parts[tp].log); l > 0 {
				fc.truncate(tp, int64(l-1-rng.IntN(min(l, 3))))
			}
		}
		if now%10 == 0 {
			p.Tick(now)
			collect(now)
		}
		slices.SortStableFunc(net, func(a, b delivery) int { return int(a.at-b.at)*1_000_000 + a.seq - b.seq })
		for len(net) > 0 && net[0].at <= now {
			d := net[0]
			net = net[1:]
			if d.resp {
				p.Handle(d.env.From, d.env.Msg, now)
				collect(now)
				continue
			}
			if resp, ok := fc.handle(d.env.To, d.env.Msg); ok {
				post(now, broker.Envelope{From: d.env.To, To: d.env.From, Msg: resp}, true)
			}
		}
		if !faults && p.Pending() == 0 && len(net) == 0 {
			break
		}
	}
	require.Zero(t, p.Pending(), "sends never completed")
	require.Len(t, results, sent)

	logs := map[kafka.TopicPartition][]string{}
	for tp := range fc.parts {
		logs[tp] = fc.values(tp)
	}
	return results, logs, trace.String()
}

// checkChaos asserts the guarantees a caller relies on:
//   - a failed send is in no log (Fail means certainly not written);
//   - with idempotence, no record is written twice, and without log loss
//     no send fails for a sequence gap;
//   - without loss, an acknowledged record is at its offset;
//   - per partition, results come in send order and the log holds the
//     records in send order (first copies only, without idempotence).
func checkChaos(t *testing.T, c chaosCase, results []Result, logs map[kafka.TopicPartition][]string) {
	t.Helper()
	where := map[string][]int{} // value -> offsets, over all partitions
	for _, log := range logs {
		for off, v := range log {
			where[v] = append(where[v], off)
		}
	}
	lastID := map[int32]uint64{}
	outcomes := map[Outcome]int{}
	for _, r := range results {
		outcomes[r.Outcome]++
		v := strconv.Itoa(int(r.ID - 1))
		if r.Partition >= 0 {
			require.Greater(t, r.ID, lastID[r.Partition], "results of partition %d out of send order", r.Partition)
			lastID[r.Partition] = r.ID
		}
		switch r.Outcome {
		case OutcomeFail:
			require.Empty(t, where[v], "failed send %d (%v) was written", r.ID, r.Err)
		case OutcomeOK:
			if !c.loss {
				log := logs[kafka.TopicPartition{Topic: "t", Partition: r.Partition}]
				require.Less(t, r.Offset, int64(len(log)))
				require.Equal(t, v, log[r.Offset], "acknowledged send %d not at its offset", r.ID)
			}
		}
		if c.cfg.Idempotent {
			require.LessOrEqual(t, len(where[v]), 1, "send %d written %d times", r.ID, len(where[v]))
			if !c.loss && !errors.Is(r.Err, ErrDeliveryTimeout) {
				// Nothing acknowledged is lost, so every sequence gap the
				// broker reports is one the producer itself is filling.
				require.NotErrorIs(t, r.Err, kafka.ErrOutOfOrderSequence, "send %d", r.ID)
				require.NotErrorIs(t, r.Err, kafka.ErrUnknownProducerID, "send %d", r.ID)
			}
		}
	}
	for tp, log := range logs {
		seen := map[string]bool{}
		prev := -1
		for _, v := range log {
			if seen[v] {
				continue
			}
			seen[v] = true
			id, err := strconv.Atoi(v)
			require.NoError(t, err)
			require.Greater(t, id, prev, "%s holds %s after %d", tp, v, prev)
			prev = id
		}
	}
	require.Positive(t, outcomes[OutcomeOK])
	t.Logf("%d sends: %d ok, %d fail, %d unknown", len(results), outcomes[OutcomeOK], outcomes[OutcomeFail], outcomes[OutcomeUnknown])
}

// TestChaos runs the producer through random faults and checks its
// guarantees (see checkChaos) over many seeds.
func TestChaos(t *testing.T) {
	strict := nonIdempotent()
	strict.MaxInFlight = 1
	for name, c := range map[string]chaosCase{
		"idempotent":                {cfg: DefaultConfig()},
		"idempotent with log loss":  {cfg: DefaultConfig(), loss: true},
		"at-least-once, 1 inflight": {cfg: strict},
	} {
		t.Run(name, func(t *testing.T) {
			seeds := uint64(20)
			if testing.Short() {
				seeds = 3
			}
			for seed := range seeds {
				results, logs, _ := chaosRun(t, c, seed)
				checkChaos(t, c, results, logs)
			}
		})
	}
}

// TestDeterministic checks that a run is a function of its seed: the same
// inputs give the same messages and results, byte for byte.
func TestDeterministic(t *testing.T) {
	c := chaosCase{cfg: DefaultConfig(), loss: true}
	_, _, a := chaosRun(t, c, 42)
	_, _, b := chaosRun(t, c, 42)
	require.Equal(t, a, b)
	_, _, other := chaosRun(t, c, 43)
	require.NotEqual(t, a, other)
}
