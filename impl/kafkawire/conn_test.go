package kafkawire

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/kafkaclient"
	"github.com/watermarkhq/watermark/impl/kafkawire/fakebroker"
	"github.com/watermarkhq/watermark/impl/record"
)

func fixedAddr(a string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return a, nil }
}

// An idempotent producer's five pipelined batches, issued back to back
// without waiting, reach the broker in the order issued: all five are
// taken, at offsets in sequence order. An acks=0 produce in between gets
// no answer and holds nothing up.
func TestConnKeepsIssueOrder(t *testing.T) {
	c := startTestCluster(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer admin.Close()
	createTopic(t, admin, "ordered", 1)

	cn := kafkaclient.NewConn("test broker", fixedAddr(c.addr), nil, "test", 0)
	defer cn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := cn.Issue(kmsg.NewPtrInitProducerIDRequest()).Wait(ctx)
	require.NoError(t, err)
	pid := raw.(*kmsg.InitProducerIDResponse)
	require.Zero(t, pid.ErrorCode)

	var waits []*kafkaclient.Pending
	for seq := range 5 {
		b := record.Batch{ProducerID: pid.ProducerID, ProducerEpoch: pid.ProducerEpoch, BaseSequence: int32(seq),
			Records: []record.Record{{Value: []byte{byte('a' + seq)}, Timestamp: 1}}}
		waits = append(waits, cn.Issue(produceRequest(11, -1, "ordered", appendBatch(nil, &b))))
		if seq == 2 {
			plain := record.Batch{ProducerID: record.NoProducerID, BaseSequence: record.NoSequence,
				Records: []record.Record{{Value: []byte("acks=0"), Timestamp: 1}}}
			p := cn.Issue(produceRequest(11, 0, "ordered", appendBatch(nil, &plain)))
			resp, err := p.Wait(ctx)
			require.NoError(t, err)
			require.Nil(t, resp, "acks=0 has no answer")
		}
	}
	last := int64(-1)
	for seq, p := range waits {
		raw, err := p.Wait(ctx)
		require.NoError(t, err)
		part := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		require.Zero(t, part.ErrorCode, "sequence %d: %v", seq, kerr.ErrorForCode(part.ErrorCode))
		require.Greater(t, part.BaseOffset, last, "sequence %d", seq)
		last = part.BaseOffset
	}
}

// A broker that does not take ApiVersions v3 answers in the v0 layout
// with UNSUPPORTED_VERSION (KIP-511); the connection asks again at v0 and
// caps each request at the versions that answer lists. A broker that goes
// away fails what waits, and the next request dials again.
func TestConnNegotiatesDownAndRedials(t *testing.T) {
	addr := fakebroker.Start(t, oldBroker())
	cn := kafkaclient.NewConn("old broker", fixedAddr(addr), nil, "test", 0)
	defer cn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	raw, err := cn.Issue(req).Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, int16(1), raw.GetVersion(), "capped at the broker's Metadata v1")
	require.Equal(t, int32(7), raw.(*kmsg.MetadataResponse).Brokers[0].NodeID)

	// The first connection closes after one answer: what waits fails, and
	// the next request is sent on a new connection.
	_, err = cn.Issue(kmsg.NewPtrMetadataRequest()).Wait(ctx)
	require.Error(t, err)
	raw, err = cn.Issue(kmsg.NewPtrMetadataRequest()).Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(7), raw.(*kmsg.MetadataResponse).Brokers[0].NodeID)
}

// oldBroker plays a broker that knows ApiVersions v0 and Metadata v0-1
// only; on the first connection it closes after one Metadata answer.
func oldBroker() fakebroker.Script {
	var mu sync.Mutex
	answered := map[int]int{}
	return func(conn, _ int, key, version int16) ([]byte, bool) {
		switch key {
		case kmsg.ApiVersions.Int16():
			resp := kmsg.NewPtrApiVersionsResponse()
			if version > 0 {
				resp.ErrorCode = kerr.UnsupportedVersion.Code
			}
			resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 0}, {ApiKey: 3, MaxVersion: 1}}
			return resp.AppendTo(nil), true // the v0 layout, whatever was asked
		case kmsg.Metadata.Int16():
			mu.Lock()
			defer mu.Unlock()
			if conn == 0 && answered[conn] == 1 {
				return nil, false
			}
			answered[conn]++
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = version
			resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 7, Host: "h", Port: 1}}
			return resp.AppendTo(nil), true
		}
		return nil, false
	}
}

// jockoLike answers an ApiVersions version above its own with KIP-511's
// UNSUPPORTED_VERSION and then closes the connection, as jocko does;
// closeAgain closes after any ApiVersions answer but the first.
func jockoLike(closeAgain bool) fakebroker.Script {
	return func(conn, n int, key, version int16) ([]byte, bool) {
		if key != kmsg.ApiVersions.Int16() {
			return nil, false
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 1}, {ApiKey: 3, MaxVersion: 1}}
		if version > 1 {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp.AppendTo(nil), n == 0 // answers, then (at the next request) closes
		}
		if closeAgain {
			return nil, false
		}
		resp.Version = version
		return resp.AppendTo(nil), true
	}
}

// A broker that closes the connection after its UNSUPPORTED_VERSION answer
// is asked again on a new connection at the version it named, and the
// negotiation goes on; if that fails too, the error tells the exchange
// (what was asked, what came back, the close), each step once.
func TestHandshakeTellsTheExchange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	versions, err := kafkaclient.Handshake(ctx, fakebroker.Start(t, jockoLike(false)), nil)
	require.NoError(t, err)
	require.Equal(t, int16(1), versions[3])

	_, err = kafkaclient.Handshake(ctx, fakebroker.Start(t, jockoLike(true)), nil)
	require.ErrorIs(t, err, kafkaclient.ErrNegotiation)
	msg := err.Error()
	require.Regexp(t, `asked ApiVersions v\d+: answered UNSUPPORTED_VERSION, naming v1 as its highest`, msg)
	require.Contains(t, msg, "the broker had closed it")
	require.Contains(t, msg, "a new connection; then asked ApiVersions v1: the broker closed the connection with no answer")
	require.Equal(t, 1, strings.Count(msg, "version negotiation failed"), msg)
}
