package kitclient

import (
	"math/rand/v2"
	"testing"

	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/partition"
)

// BenchmarkSendReady measures the producer's own cost per record: Send,
// Ready, and the answer fed back through Handle, with no network and a
// broker that acknowledges at once.
func BenchmarkSendReady(b *testing.B) {
	acks0 := nonIdempotent()
	acks0.Acks = partition.AcksNone
	for _, bc := range []struct {
		name string
		cfg  Config
	}{
		{"idempotent", DefaultConfig()},
		{"acks=1", func() Config { c := nonIdempotent(); c.Acks = partition.AcksLeader; return c }()},
		{"acks=0", acks0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fc := newCluster()
			p, err := NewProducer(broker.ClientIDBase, bc.cfg, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				b.Fatal(err)
			}
			p.UpdateMetadata(fc.states(), fc.brokers)
			offsets := map[kafka.TopicPartition]int64{}
			var reply func(out []broker.Envelope, now int64)
			answer := func(now int64) int {
				done := 0
				for {
					out, res := p.Ready()
					done += len(res)
					if len(out) == 0 {
						return done
					}
					reply(out, now)
				}
			}
			reply = func(out []broker.Envelope, now int64) {
				for _, env := range out {
					switch m := env.Msg.(type) {
					case broker.InitProducerIDRequest:
						p.Handle(env.To, broker.InitProducerIDResponse{Correlation: m.Correlation, ProducerID: 1}, now)
					case broker.ProduceRequest:
						if m.Acks == partition.AcksNone {
							continue
						}
						off := offsets[m.TopicPartition]
						offsets[m.TopicPartition] = off + int64(len(m.Batch.Records))
						p.Handle(env.To, broker.ProduceResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, BaseOffset: off}, now)
					}
				}
			}
			value := []byte("0123456789abcdef0123456789abcdef")
			var now int64
			done := 0
			for b.Loop() {
				now++
				p.Send(Message{Topic: "t", Partition: -1, Value: value}, now)
				done += answer(now)
			}
			for p.Pending() > 0 {
				now++
				p.Tick(now)
				done += answer(now)
			}
			if done != b.N {
				b.Fatalf("%d results for %d sends", done, b.N)
			}
		})
	}
}
