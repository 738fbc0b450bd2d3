package kafkawire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const apiVersionsKey int16 = 18

// versionRange is the versions of one api the server serves.
type versionRange struct{ min, max int16 }

// served lists every api the server answers, with the versions it answers.
// The upper bounds stop before versions that name topics by id (Produce v13,
// Fetch v13) or whose semantics the broker does not have (transactions v2,
// tiered storage offsets).
var served = map[int16]versionRange{
	0:  {3, 11}, // Produce: v3 is the first with record batches (magic 2)
	1:  {4, 12}, // Fetch: v4 is the first with record batches
	2:  {1, 7},  // ListOffsets
	3:  {1, 12}, // Metadata
	8:  {0, 8},  // OffsetCommit (groups.go)
	9:  {0, 8},  // OffsetFetch (groups.go)
	10: {0, 4},  // FindCoordinator (groups.go)
	11: {0, 9},  // JoinGroup (groups.go)
	12: {0, 4},  // Heartbeat (groups.go)
	13: {0, 5},  // LeaveGroup (groups.go)
	14: {0, 5},  // SyncGroup (groups.go)
	18: {0, 3},  // ApiVersions
	19: {0, 7},  // CreateTopics
	22: {0, 4},  // InitProducerId
	23: {2, 4},  // OffsetForLeaderEpoch (epochs.go): v0 and v1 went with Kafka 4.0
}

// supported reports whether the server answers key at version.
func supported(key, version int16) bool {
	r, ok := served[key]
	return ok && version >= r.min && version <= r.max
}

// apiVersions answers ApiVersions with the served table, sorted by key.
func apiVersions(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(req.Version)
	for key := range int16(64) {
		r, ok := served[key]
		if !ok {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, r.min, r.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// apiVersionsTooNew is the KIP-511 answer to an ApiVersions request of a
// version the server does not know: a v0 response with UNSUPPORTED_VERSION
// and only ApiVersions' own range, so the client retries with the highest
// version both sides know.
func apiVersionsTooNew() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	k := kmsg.NewApiVersionsResponseApiKey()
	r := served[apiVersionsKey]
	k.ApiKey, k.MinVersion, k.MaxVersion = apiVersionsKey, r.min, r.max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}
