package settings

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A broker's settings keep the shape they had as impl/broker's: the
// group coordinator's are reached as .Config, and encoding/json (a run's
// config.json) flattens the replicas', the groups' and the coordinator's
// into one level of keys.
func TestBrokerKeepsItsShape(t *testing.T) {
	b := DefaultBroker()
	b.Config.InitialRebalanceDelayMs = 7
	data, err := json.Marshal(b)
	require.NoError(t, err)
	var keys map[string]any
	require.NoError(t, json.Unmarshal(data, &keys))
	for _, k := range []string{"MinInsyncReplicas", "Truncation", "HeartbeatIntervalMs", "OffsetsTopicPartitions", "InitialRebalanceDelayMs"} {
		assert.Contains(t, keys, k)
	}
	for _, k := range []string{"Partition", "BrokerGroups", "Config"} {
		assert.NotContains(t, keys, k)
	}
	assert.EqualValues(t, 7, keys["InitialRebalanceDelayMs"])
	require.NoError(t, DefaultBroker().Validate())
}
