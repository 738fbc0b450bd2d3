package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
	"github.com/watermarkhq/watermark/impl/record"
	"github.com/watermarkhq/watermark/impl/wireformat"
)

// Client is the wire server's mirror image: it takes the reference's
// client-plane messages (clientmsg.ProduceRequest, FetchRequest,
// ListOffsetsRequest, MetadataRequest, InitProducerIDRequest,
// FindCoordinatorRequest, GroupRequest), sends each as one raw Kafka
// request to the broker named, through a franz-go client, and turns the
// Kafka response back into the reference's response type,
// with error codes mapped back to the reference's errors. The harness's
// clients thus drive any Kafka-compatible broker with full control of
// producer ids, epochs and sequence numbers, exactly as they drive the
// simulated reference.
//
// Requests are capped at the versions that name topics (not topic ids):
// Produce v12, Fetch v12, OffsetCommit v8 and OffsetFetch v8.
type Client struct {
	cl *kgo.Client
	// shift is added to the cluster's broker ids on the way in and taken
	// off on the way out (see ShiftBrokerIDs).
	shift int32
	// dial reaches a broker's address (nil: net.Dialer); produce takes
	// the ordered connections (client_ordered.go).
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	conns *orderedConns
	caps  map[int16]int16 // ClientOptions.MaxVersions
}

// ShiftBrokerIDs makes the client number brokers from the cluster's ids
// plus n. The harness numbers brokers from 1 (0 is its controller); a
// cluster whose brokers start at 0, as many Kafka deployments and kfake
// do, is driven with n = 1, and every broker id the harness sees or names
// is the cluster's plus one.
func (c *Client) ShiftBrokerIDs(n int32) { c.shift = n }

func (c *Client) in(id int32) int32 {
	if id < 0 {
		return id
	}
	return id + c.shift
}

func (c *Client) ins(ids []int32) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = c.in(id)
	}
	return out
}

// NewClient connects lazily to seeds; opts are extra franz-go options.
func NewClient(seeds []string, opts ...kgo.Opt) (*Client, error) {
	return NewClientDialer(seeds, nil, opts...)
}

// NewClientDialer is NewClient reaching every broker through dial (nil:
// net.Dialer), its franz-go client and its ordered connections alike.
func NewClientDialer(seeds []string, dial func(ctx context.Context, network, addr string) (net.Conn, error), opts ...kgo.Opt) (*Client, error) {
	return NewClientWith(seeds, ClientOptions{Dial: dial}, opts...)
}

// ClientOptions shape a Client beyond franz-go's options.
type ClientOptions struct {
	// Dial reaches a broker's address (nil: net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxVersions caps API keys at these versions, below the caps the
	// client has of its own (a broker known to answer one version
	// wrongly is spoken to at one it answers).
	MaxVersions map[int16]int16
}

// NewClientWith is NewClient with o.
func NewClientWith(seeds []string, o ClientOptions, opts ...kgo.Opt) (*Client, error) {
	dial := o.Dial
	if dial != nil {
		opts = append([]kgo.Opt{kgo.Dialer(dial)}, opts...)
	}
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 12)
	v.SetMaxKeyVersion(kmsg.Fetch.Int16(), 12)
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 8)
	v.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), 8)
	for k, max := range o.MaxVersions {
		if have, ok := v.LookupMaxKeyVersion(k); ok && max < have {
			v.SetMaxKeyVersion(k, max)
		}
	}
	all := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MaxVersions(v), kgo.RequestRetries(0)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, err
	}
	c := &Client{cl: cl, dial: dial, caps: o.MaxVersions}
	c.conns = &orderedConns{c: c, byID: map[int32]*Conn{}}
	return c, nil
}

// Close closes the connections.
func (c *Client) Close() {
	c.conns.close()
	c.cl.Close()
}

// CreateTopic creates a topic through any broker. A topic that exists
// already is not an error: a harness may run again on the same cluster
// only with a fresh topic name, which is the caller's business.
func (c *Client) CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int) error {
	return c.CreateTopicWithConfigs(ctx, name, partitions, replicationFactor, nil)
}

// CreateTopicWithConfigs is CreateTopic with topic configs (for example
// min.insync.replicas), set in sorted order.
func (c *Client) CreateTopicWithConfigs(ctx context.Context, name string, partitions int32, replicationFactor int, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = name
	t.NumPartitions = partitions
	t.ReplicationFactor = int16(replicationFactor)
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name = k
		cfg.Value = kmsg.StringPtr(configs[k])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("create topic %q: %d topics in the answer", name, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		if msg := resp.Topics[0].ErrorMessage; msg != nil {
			return fmt.Errorf("create topic %q: %w: %s", name, err, *msg)
		}
		return fmt.Errorf("create topic %q: %w", name, err)
	}
	return nil
}

// BrokerAddrs asks any broker for the cluster's brokers' addresses
// (host:port), by id as the cluster numbers them.
func (c *Client) BrokerAddrs(ctx context.Context) (map[int32]string, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, c.cl)
	if err != nil {
		return nil, err
	}
	out := map[int32]string{}
	for _, b := range resp.Brokers {
		out[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	return out, nil
}

// Brokers asks any broker for the cluster's brokers: how many, and the
// lowest id (as the cluster numbers them).
func (c *Client) Brokers(ctx context.Context) (n int, lowest int32, err error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, c.cl)
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Brokers) == 0 {
		return 0, 0, errors.New("the cluster lists no brokers")
	}
	lowest = resp.Brokers[0].NodeID
	for _, b := range resp.Brokers {
		lowest = min(lowest, b.NodeID)
	}
	return len(resp.Brokers), lowest, nil
}

// Exchange sends msg to broker `to` and returns its answer; nil, nil for an
// acks=0 produce, which has none.
func (c *Client) Exchange(ctx context.Context, to clientmsg.NodeID, msg kafka.Message) (kafka.Message, error) {
	x := &call{c: c, ctx: ctx, to: to}
	handled, err := senders().Handle(x, msg)
	if !handled {
		return nil, fmt.Errorf("kafkawire client: cannot send %T", msg)
	}
	return x.answer, err
}

// call is one Exchange: what a sender needs besides its request, and the
// answer it gives.
type call struct {
	c      *Client
	ctx    context.Context
	to     clientmsg.NodeID
	answer kafka.Message
}

// senders is the client's table of the requests it can send, each turned
// into its Kafka request and its answer back into the reference's.
var senders = sync.OnceValue(func() *kafka.Handlers[*call] {
	h := &kafka.Handlers[*call]{}
	kafka.On(h, func(x *call, m clientmsg.ProduceRequest) (err error) {
		x.answer, err = x.c.issueProduce(x.to, m)(x.ctx)
		return err
	})
	kafka.On(h, func(x *call, m clientmsg.FetchRequest) (err error) {
		x.answer, err = x.c.fetch(x.ctx, x.to, m)
		return err
	})
	kafka.On(h, func(x *call, m clientmsg.ListOffsetsRequest) (err error) {
		x.answer, err = x.c.listOffsets(x.ctx, x.to, m)
		return err
	})
	kafka.On(h, func(x *call, m clientmsg.MetadataRequest) (err error) {
		x.answer, err = x.c.metadata(x.ctx, x.to, m)
		return err
	})
	kafka.On(h, func(x *call, m clientmsg.InitProducerIDRequest) (err error) {
		x.answer, err = x.c.initProducerID(x.ctx, x.to, m)
		return err
	})
	kafka.On(h, func(x *call, m clientmsg.FindCoordinatorRequest) (err error) {
		x.answer, err = x.c.findCoordinator(x.ctx, x.to, m)
		return err
	})
	kafka.On(h, func(x *call, m clientmsg.GroupRequest) error {
		resp, err := x.c.groupRequest(x.ctx, x.to, m.Req)
		if err != nil {
			return err
		}
		x.answer = clientmsg.GroupResponse{Correlation: m.Correlation, Resp: resp}
		return nil
	})
	return h
})

func (c *Client) request(ctx context.Context, to clientmsg.NodeID, req kmsg.Request) (kmsg.Response, error) {
	return c.cl.Broker(int(int32(to)-c.shift)).Request(ctx, req)
}

// wireError turns a Kafka error code into the reference's error: the
// code's sentinel (kafka.ForCode, so errors.Is works as it does in the
// simulator), with the server's message when it sent one.
func wireError(code int16, msg *string) error {
	err := kafka.ForCode(code)
	if err != nil && msg != nil && *msg != "" && *msg != err.Error() {
		return fmt.Errorf("%w (%s)", err, *msg)
	}
	return err
}

func (c *Client) fetch(ctx context.Context, to clientmsg.NodeID, m clientmsg.FetchRequest) (kafka.Message, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(m.MaxWaitMs)
	req.MinBytes = int32(m.MinBytes)
	req.MaxBytes = int32(max(m.MaxBytes, 1))
	req.SessionEpoch = -1 // no fetch session: full answers
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = m.Partition
	p.FetchOffset = m.Offset
	p.PartitionMaxBytes = int32(max(m.MaxBytes, 1))
	p.CurrentLeaderEpoch = m.CurrentLeaderEpoch
	p.LogStartOffset = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = m.Topic
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.FetchResponse)
	out := clientmsg.FetchResponse{Correlation: m.Correlation, TopicPartition: m.TopicPartition, HW: -1, LEO: -1, LogStart: -1}
	if resp.ErrorCode != 0 {
		out.Err = wireError(resp.ErrorCode, nil)
		return out, nil
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic != m.Topic || rp.Partition != m.Partition {
				continue
			}
			out.HW, out.LogStart = rp.HighWatermark, rp.LogStartOffset
			if out.Err = wireError(rp.ErrorCode, nil); out.Err != nil {
				return out, nil
			}
			out.Batches, err = wireformat.DecodeFetched(rp.RecordBatches)
			if err != nil {
				return nil, fmt.Errorf("fetch from %s: %w", m.TopicPartition, err)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("fetch from %s: the answer does not name the partition", m.TopicPartition)
}

// EncodeBatch encodes b as an uncompressed v2 record batch.
func EncodeBatch(dst []byte, b *record.Batch) []byte { return record.Encode(dst, b) }

func (c *Client) listOffsets(ctx context.Context, to clientmsg.NodeID, m clientmsg.ListOffsetsRequest) (kafka.Message, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = m.Partition
	p.CurrentLeaderEpoch = -1
	p.Timestamp = -2
	if m.Latest {
		p.Timestamp = -1
	}
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = m.Topic
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.ListOffsetsResponse)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == m.Topic && rp.Partition == m.Partition {
				return clientmsg.ListOffsetsResponse{
					Correlation: m.Correlation, TopicPartition: m.TopicPartition,
					Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Err: wireError(rp.ErrorCode, nil),
				}, nil
			}
		}
	}
	return nil, fmt.Errorf("list offsets of %s: the answer does not name the partition", m.TopicPartition)
}

func (c *Client) metadata(ctx context.Context, to clientmsg.NodeID, m clientmsg.MetadataRequest) (kafka.Message, error) {
	req := kmsg.NewPtrMetadataRequest() // nil topics: all of them
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.MetadataResponse)
	out := clientmsg.MetadataResponse{Correlation: m.Correlation, Addresses: map[int32]string{}}
	for _, b := range resp.Brokers {
		out.LiveBrokers = append(out.LiveBrokers, c.in(b.NodeID))
		out.Addresses[c.in(b.NodeID)] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			s := kafka.PartitionState{Leader: c.in(p.Leader), LeaderEpoch: p.LeaderEpoch, Replicas: c.ins(p.Replicas), ISR: c.ins(p.ISR)}
			s.Topic, s.Partition = *t.Topic, p.Partition
			if p.ErrorCode != 0 && !errors.Is(kerr.ErrorForCode(p.ErrorCode), kerr.LeaderNotAvailable) {
				continue
			}
			if p.ErrorCode != 0 {
				s.Leader = -1
			}
			out.Partitions = append(out.Partitions, s)
		}
	}
	return out, nil
}

func (c *Client) initProducerID(ctx context.Context, to clientmsg.NodeID, m clientmsg.InitProducerIDRequest) (kafka.Message, error) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = -1
	req.ProducerID = -1
	req.ProducerEpoch = -1
	raw, err := c.request(ctx, to, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.InitProducerIDResponse)
	return clientmsg.InitProducerIDResponse{
		Correlation: m.Correlation, ProducerID: resp.ProducerID, ProducerEpoch: resp.ProducerEpoch,
		Err: wireError(resp.ErrorCode, nil),
	}, nil
}

// BrokerConfigs asks any broker for the named configs of broker id (its
// own number) with DescribeConfigs: name -> value for those it answers.
func (c *Client) BrokerConfigs(ctx context.Context, id int32, names ...string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeBroker, fmt.Sprint(id), names
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, err
		}
		for _, cfg := range r.Configs {
			if cfg.Value != nil {
				out[cfg.Name] = *cfg.Value
			}
		}
	}
	return out, nil
}
