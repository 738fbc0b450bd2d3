package kafkawire

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchRecordsNeverNull: a partition with nothing to return, or with an
// error, carries an empty record set, never a null one, at every served
// Fetch version, as Kafka answers. sarama's decoder (Fetch v4-v11) fails
// on a null record set and drops the connection, so a sarama consumer
// configured as Kafka 2.0 never got past its first empty long poll.
func TestFetchRecordsNeverNull(t *testing.T) {
	c := newWireClient(t)
	for v := served[1].min; v <= served[1].max; v++ {
		for _, tc := range []struct {
			name, topic string
			code        int16
		}{
			{"caught up", "t", 0},
			{"unknown partition", "nope", 3},
		} {
			req := fetchRequest(tc.topic, fakeHW, 0)
			req.SetVersion(v)
			resp := c.roundTrip(req).(*kmsg.FetchResponse)
			p := resp.Topics[0].Partitions[0]
			require.Equal(t, tc.code, p.ErrorCode, "v%d %s", v, tc.name)
			require.NotNil(t, p.RecordBatches, "v%d %s: a null record set", v, tc.name)
			require.Empty(t, p.RecordBatches, "v%d %s", v, tc.name)
		}
	}
}
