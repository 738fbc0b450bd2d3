package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/impl/broker"
	"github.com/watermarkhq/watermark/impl/kafka"
)

var (
	tpA = kafka.TopicPartition{Topic: "a"}
	tpB = kafka.TopicPartition{Topic: "b"}
)

// twoTopics makes topics a and b of one partition and one replica each,
// both on broker 1.
func twoTopics(t *testing.T) *cluster {
	c := newCluster(t, opts{})
	c.createTopic("a", 1, 1)
	c.createTopic("b", 1, 1)
	require.EqualValues(t, 1, c.state(tpA).Leader)
	require.EqualValues(t, 1, c.state(tpB).Leader)
	return c
}

func (c *cluster) fetchMany(to broker.NodeID, minBytes int, maxWaitMs int64, tps ...kafka.TopicPartition) broker.FetchManyRequest {
	c.t.Helper()
	req := broker.FetchManyRequest{Correlation: c.nextCorr(), MinBytes: minBytes, MaxWaitMs: maxWaitMs}
	for _, tp := range tps {
		req.Partitions = append(req.Partitions, broker.FetchPartition{TopicPartition: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1})
	}
	c.send(to, req)
	return req
}

// A fetch of several partitions waits as one: fetch.min.bytes counts the
// whole answer, so it is held while its partitions together hold less and
// answered, every partition in it, once they hold enough, as Kafka's
// DelayedFetch does. Reference: spec/SEMANTICS.md, Consumer ("fetch.min.bytes
// and fetch.max.wait.ms").
func TestFetchManyWaitsForMinBytesOverAllItsPartitions(t *testing.T) {
	c := twoTopics(t)
	c.produceOK(1, tpA, "aaaaa")
	one := c.read(1, tpA, 0).Batches[0].Size()

	req := c.fetchMany(1, one+1, 500, tpA, tpB)
	require.Empty(t, take[broker.FetchManyResponse](c), "a alone holds less than MinBytes")
	c.tick(100)
	require.Empty(t, take[broker.FetchManyResponse](c), "still less, still waiting")

	c.produceOK(1, tpB, "bbbbb") // as big as a's: only the sum reaches MinBytes
	resp := takeOne[broker.FetchManyResponse](c)
	require.Equal(t, req.Correlation, resp.Correlation)
	require.Len(t, resp.Partitions, 2)
	require.Equal(t, tpA, resp.Partitions[0].TopicPartition, "in the request's order")
	require.Equal(t, []string{"aaaaa"}, values(resp.Partitions[0].Batches))
	require.Equal(t, []string{"bbbbb"}, values(resp.Partitions[1].Batches))
}

// A fetch of several partitions is answered at once when one of them
// fails (here, a partition that does not exist), with what the others
// hold, and empty at its max wait when nothing came.
func TestFetchManyAnsweredOnAnErrorOrAtMaxWait(t *testing.T) {
	c := twoTopics(t)
	c.fetchMany(1, 1, 500, tpA, kafka.TopicPartition{Topic: "none"})
	resp := takeOne[broker.FetchManyResponse](c)
	require.NoError(t, resp.Partitions[0].Err)
	require.ErrorIs(t, resp.Partitions[1].Err, kafka.ErrUnknownTopicOrPartition)

	c.fetchMany(1, 1, 500, tpA, tpB)
	c.tick(490)
	require.Empty(t, take[broker.FetchManyResponse](c), "answered before max wait")
	c.tick(10)
	resp = takeOne[broker.FetchManyResponse](c)
	for _, p := range resp.Partitions {
		require.NoError(t, p.Err)
		require.Empty(t, p.Batches)
	}
}
