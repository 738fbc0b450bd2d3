package kafkawire

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const apiVersionsKey = int16(kmsg.ApiVersions)

// apiVersionsAPI serves ApiVersions v0-3. Its response header stays v0 at
// every version (appendResponse), and a request newer than served gets the
// KIP-511 answer (handler.serve, apiVersionsTooNew).
var apiVersionsAPI = api{key: apiVersionsKey, min: 0, max: 3, serve: withBody((*handler).apiVersions)}

// apiVersions answers ApiVersions with the registry's rows, sorted by key.
func (h *handler) apiVersions(_ context.Context, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(req.Version)
	for _, key := range slices.Sorted(maps.Keys(served)) {
		r := served[key]
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, r.min, r.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp, nil
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
