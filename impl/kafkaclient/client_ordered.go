package kafkaclient

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
)

// Issue sends msg to broker to and returns how to wait for its answer.
// A produce goes out at once on the client's one produce connection to
// that broker (a Conn), behind every produce issued before it, as a real
// producer's pipelined requests do; its answer is awaited with the
// returned function (nil, nil for acks=0). Any other message is sent when
// the function is called (Exchange).
func (c *Client) Issue(to clientmsg.NodeID, msg kafka.Message) func(ctx context.Context) (kafka.Message, error) {
	m, ok := msg.(clientmsg.ProduceRequest)
	if !ok {
		return func(ctx context.Context) (kafka.Message, error) { return c.Exchange(ctx, to, msg) }
	}
	return c.issueProduce(to, m)
}

// issueProduce sends m on the produce connection to broker to and returns
// how to wait for its answer.
func (c *Client) issueProduce(to clientmsg.NodeID, m clientmsg.ProduceRequest) func(ctx context.Context) (kafka.Message, error) {
	p := c.conns.get(int32(to) - c.shift).Issue(kafkaProduce(m))
	return func(ctx context.Context) (kafka.Message, error) {
		raw, err := p.Wait(ctx)
		if err != nil || m.Acks == 0 {
			return nil, err
		}
		return produceAnswer(m, raw.(*kmsg.ProduceResponse))
	}
}

// kafkaProduce is m as Kafka's Produce (one batch, one partition).
func kafkaProduce(m clientmsg.ProduceRequest) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 12
	req.Acks = int16(m.Acks)
	req.TimeoutMillis = int32(m.TimeoutMs)
	b := m.Batch
	b.LeaderEpoch = -1
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = m.Partition
	p.Records = record.Encode(nil, &b)
	t := kmsg.NewProduceRequestTopic()
	t.Topic = m.Topic
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func produceAnswer(m clientmsg.ProduceRequest, resp *kmsg.ProduceResponse) (kafka.Message, error) {
	out := clientmsg.ProduceResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, BaseOffset: -1}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == m.Topic && rp.Partition == m.Partition {
				out.BaseOffset = rp.BaseOffset
				out.Err = wireError(rp.ErrorCode, rp.ErrorMessage)
				if rp.ErrorCode == kerr.NotLeaderForPartition.Code {
					// On the wire a refusal before the append and the
					// answer to a produce parked on a leader that then
					// stepped down (Kafka's purgatory, the reference's
					// ErrLeaderChanged) are one code: the write may be
					// in the log and commit, so it is not a refusal.
					out.Err = kafka.ErrLeaderChanged
					if msg := rp.ErrorMessage; msg != nil && *msg != "" && *msg != kafka.ErrLeaderChanged.Error() {
						out.Err = fmt.Errorf("%w (%s)", kafka.ErrLeaderChanged, *msg)
					}
				}
				return out, nil
			}
		}
	}
	return nil, fmt.Errorf("produce to %s: the answer does not name the partition", m.TopicPartition)
}

// orderedConns are a client's produce connections, one per broker (by the
// cluster's id), made on first use.
type orderedConns struct {
	c    *Client
	mu   sync.Mutex
	byID map[int32]*Conn
}

func (o *orderedConns) get(id int32) *Conn {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cn, ok := o.byID[id]; ok {
		return cn
	}
	cn := NewConn(fmt.Sprintf("broker %d", id), func(ctx context.Context) (string, error) { return o.addr(ctx, id) },
		o.c.dial, "watermark-producer", 0)
	cn.Caps = o.c.caps
	o.byID[id] = cn
	return cn
}

// addr asks the cluster where broker id listens now.
func (o *orderedConns) addr(ctx context.Context, id int32) (string, error) {
	addrs, err := o.c.BrokerAddrs(ctx)
	if err != nil {
		return "", fmt.Errorf("find broker %d: %w", id, err)
	}
	a, ok := addrs[id]
	if !ok {
		return "", fmt.Errorf("no broker %d in the cluster's metadata", id)
	}
	return a, nil
}

func (o *orderedConns) close() {
	o.mu.Lock()
	conns := o.byID
	o.byID = map[int32]*Conn{}
	o.mu.Unlock()
	for _, cn := range conns {
		cn.Close()
	}
}
