package kitclient

import (
	"errors"
	"fmt"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// startReset positions ps per auto.offset.reset: earliest or latest
// through ListOffsets, or, for "none", a NoOffset event and no fetching
// until Seek. callMs is when the request that found no offset was sent.
func (c *Consumer) startReset(ps *consumedPart, callMs int64) {
	ps.fetch, ps.list = ctl{}, ctl{}
	ps.buffered, ps.bufBytes = nil, 0
	ps.position, ps.next = -1, -1
	if c.cfg.AutoOffsetReset == ResetNone {
		ps.phase = phaseNoOffset
		c.emit(&NoOffset{Span: Span{callMs, c.now}, TP: ps.tp, Err: fmt.Errorf("%s: %w", ps.tp, ErrNoOffset)})
		return
	}
	ps.phase = phaseReset
}

// stepPart sends ps's ListOffsets or fetch when one is due: one request
// in flight per partition, none during a backoff, none to an unknown
// leader, and no fetch while a full fetch's worth waits for Poll.
func (c *Consumer) stepPart(ps *consumedPart) {
	if ps.fetch.busy() || ps.list.busy() || c.now < ps.notBefore || ps.stale {
		return
	}
	switch ps.phase {
	case phaseReset:
		l, ok := c.leaderOf(ps.tp)
		if !ok {
			return
		}
		to := clientmsg.NodeID(l.leader)
		ps.list = ctl{corr: c.nextCorr(), to: to, sent: c.now, deadline: c.now + c.cfg.RequestTimeoutMs}
		c.send(to, clientmsg.ListOffsetsRequest{Correlation: ps.list.corr, TopicPartition: ps.tp, Latest: c.cfg.AutoOffsetReset == ResetLatest})
	case phaseFetch:
		if ps.bufBytes >= c.cfg.MaxPartitionFetchBytes {
			return
		}
		l, ok := c.leaderOf(ps.tp)
		if !ok {
			return
		}
		to := clientmsg.NodeID(l.leader)
		ps.fetch = ctl{corr: c.nextCorr(), to: to, sent: c.now, deadline: c.now + c.cfg.FetchMaxWaitMs + c.cfg.RequestTimeoutMs}
		c.send(to, clientmsg.FetchRequest{
			Correlation:        ps.fetch.corr,
			TopicPartition:     ps.tp,
			Offset:             ps.next,
			MaxBytes:           c.cfg.MaxPartitionFetchBytes,
			MinBytes:           c.cfg.FetchMinBytes,
			MaxWaitMs:          c.cfg.FetchMaxWaitMs,
			CurrentLeaderEpoch: l.epoch,
		})
	}
}

// tickPart times out ps's request in flight: the leader may be gone, so
// the consumer backs off, asks for metadata and avoids that broker for
// the next metadata request.
func (c *Consumer) tickPart(ps *consumedPart) {
	for _, r := range []*ctl{&ps.fetch, &ps.list} {
		if r.busy() && c.now >= r.deadline {
			if r == &ps.fetch {
				c.emit(&Fetched{Span: Span{r.sent, c.now}, TP: ps.tp, Offset: ps.next, HW: -1, Err: ErrResponseTimeout})
			}
			c.silent = r.to
			*r = ctl{}
			c.backOff(ps, true)
		}
	}
}

// backOff delays ps's next request; when the error says the leader may
// have moved, the partition also waits for fresh metadata, so that it
// does not ask the same deposed leader again with the same epoch.
func (c *Consumer) backOff(ps *consumedPart, refresh bool) {
	ps.notBefore = c.now + c.cfg.RetryBackoffMs
	if refresh {
		c.metaWanted = true
		ps.stale, ps.staleAfter = true, c.metaSent
	}
}

// staleLeader reports whether err means the consumer's metadata for the
// partition is out of date (KIP-320's fencing errors included).
func staleLeader(err error) bool {
	return errors.Is(err, kafka.ErrNotLeader) || errors.Is(err, kafka.ErrFencedLeaderEpoch) ||
		errors.Is(err, kafka.ErrUnknownLeaderEpoch) || errors.Is(err, kafka.ErrUnknownTopicOrPartition)
}

func (c *Consumer) handleFetch(from clientmsg.NodeID, m clientmsg.FetchResponse) {
	ps, ok := c.parts[m.TopicPartition]
	if !ok || !ps.fetch.busy() || ps.fetch.corr != m.Correlation || ps.fetch.to != from {
		return // revoked, sought past, or timed out
	}
	call := ps.fetch.sent
	ps.fetch = ctl{}
	var recs []ConsumerRecord
	if m.Err == nil {
		// A batch whose records do not decode is what a Kafka client
		// reports as CORRUPT_MESSAGE.
		recs, m.Err = flatten(m.Batches, ps.next)
	}
	ev := &Fetched{Span: Span{call, c.now}, TP: ps.tp, Offset: ps.next, HW: m.HW, LogStart: m.LogStart, Err: m.Err}
	switch {
	case m.Err == nil:
		ev.Records = recs
		c.emit(ev)
		for _, r := range recs {
			ps.bufBytes += len(r.Key) + len(r.Value)
		}
		ps.buffered = append(ps.buffered, recs...)
		if len(recs) > 0 {
			ps.next = recs[len(recs)-1].Offset + 1
		} else if c.cfg.FetchMaxWaitMs == 0 {
			// Without a long poll an empty answer comes at once: pause
			// rather than spin.
			c.backOff(ps, false)
		}
	case errors.Is(m.Err, kafka.ErrOffsetOutOfRange):
		c.emit(ev)
		c.startReset(ps, call)
	default:
		c.emit(ev)
		c.backOff(ps, staleLeader(m.Err))
	}
}

func (c *Consumer) handleListOffsets(from clientmsg.NodeID, m clientmsg.ListOffsetsResponse) {
	ps, ok := c.parts[m.TopicPartition]
	if !ok || !ps.list.busy() || ps.list.corr != m.Correlation || ps.list.to != from {
		return
	}
	call := ps.list.sent
	ps.list = ctl{}
	if m.Err != nil {
		c.backOff(ps, staleLeader(m.Err))
		return
	}
	c.position(ps, m.Offset)
	c.emit(&Positioned{Span: Span{call, c.now}, TP: ps.tp, Offset: m.Offset, Why: WhyReset})
}
