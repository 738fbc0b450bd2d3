package traffic

import (
	"errors"
	"sync"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/linearizability"
)

// What a consumer client (one that reads with fetches, not through a
// group) does with the broker's answers.

// answered is an answer to a consumer client, and the client.
type answered struct {
	c   *client
	env clientmsg.Envelope
}

// consumerAnswers is what a consumer client does with each answer it gets:
// the answer to its request in flight ends it (take); any other is late.
var consumerAnswers = sync.OnceValue(func() *kafka.Handlers[answered] {
	h := &kafka.Handlers[answered]{}
	kafka.On(h, func(a answered, m clientmsg.MetadataResponse) error {
		if _, ok := a.c.take(m.Correlation); ok {
			a.c.gotMetadata(m)
		}
		return nil
	})
	kafka.On(h, func(a answered, m clientmsg.FetchResponse) error {
		if f, ok := a.c.take(m.Correlation); ok {
			a.c.gotFetch(f, a.env, m)
		}
		return nil
	})
	kafka.On(h, func(a answered, m clientmsg.ListOffsetsResponse) error {
		if f, ok := a.c.take(m.Correlation); ok {
			a.c.gotOffset(f, m)
		}
		return nil
	})
	return h
})

// take ends the request in flight if corr is its correlation.
func (c *client) take(corr uint64) (*inflight, bool) {
	f := c.inflight
	if f == nil || f.corr != corr {
		return nil, false
	}
	c.inflight = nil
	return f, true
}

func (c *client) gotMetadata(m clientmsg.MetadataResponse) {
	if m.Err != nil {
		return // the connection broke: the next tick asks another broker
	}
	for _, p := range m.Partitions {
		c.leaders[p.TopicPartition] = p.Leader
		c.epochs[p.TopicPartition] = p.LeaderEpoch
	}
	c.needMeta = false
}

func (c *client) gotFetch(f *inflight, env clientmsg.Envelope, m clientmsg.FetchResponse) {
	op := &c.s.History[f.op]
	outOfRange := errors.Is(m.Err, kafka.ErrOffsetOutOfRange)
	switch {
	case m.Err == nil:
		op.LogStart = max(m.LogStart, 0)
	case outOfRange && m.LogStart >= 0 && m.HW >= 0:
		// The reference names both in the answer: judged against
		// each other. Kafka's names neither (-1).
		op.LogStart, op.HW = m.LogStart, m.HW
	}
	if m.Err != nil {
		c.finish(f.op, linearizability.OutcomeFail, m.Err)
		c.needMeta = true
		switch {
		case outOfRange && m.LogStart > c.pos[m.TopicPartition]:
			c.skipTo(m.TopicPartition, m.LogStart)
		case outOfRange && m.LogStart < 0:
			c.listEarliest(m.TopicPartition, env.From)
		}
		if c.final != nil {
			c.afterFinalFetch(m.TopicPartition, false)
		}
		return
	}
	op.HW = m.HW
	next := op.Offset
	for _, b := range m.Batches {
		recs, err := b.DecodeRecords(nil)
		if err != nil {
			// What a Kafka client reports as CORRUPT_MESSAGE.
			op.Records = nil
			c.finish(f.op, linearizability.OutcomeFail, err)
			c.needMeta = true
			if c.final != nil {
				c.afterFinalFetch(m.TopicPartition, false)
			}
			return
		}
		for i, r := range recs {
			off := b.BaseOffset + int64(i)
			if off < op.Offset {
				continue
			}
			op.Records = append(op.Records, linearizability.Record{Offset: off, Value: string(r.Value)})
			next = off + 1
		}
	}
	c.pos[m.TopicPartition] = next
	c.finish(f.op, linearizability.OutcomeOK, nil)
	if c.final != nil {
		c.afterFinalFetch(m.TopicPartition, true)
	}
}

func (c *client) gotOffset(f *inflight, m clientmsg.ListOffsetsResponse) {
	if f.lookup {
		return
	}
	if f.earliest {
		if m.Err == nil && m.Offset > c.pos[m.TopicPartition] {
			c.skipTo(m.TopicPartition, m.Offset)
		}
		return
	}
	op := &c.s.History[f.op]
	if m.Err != nil {
		c.finish(f.op, linearizability.OutcomeFail, m.Err)
		c.needMeta = true
		return
	}
	op.Offset = m.Offset
	c.finish(f.op, linearizability.OutcomeOK, nil)
	if c.final != nil {
		c.final.target = m.Offset
	}
}
