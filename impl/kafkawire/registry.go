package kafkawire

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// api is one row of the registry: a Kafka api the server answers, the
// versions it answers, and its handler. Each api's row sits in the api's
// own file, next to its handler and its kmsg conversions.
type api struct {
	key      int16
	min, max int16
	// serve answers a request whose Body is key's kmsg request at a
	// version in [min, max] (ParseRequest refuses any other). A nil
	// response sends nothing back; an error ends the connection.
	serve func(h *handler, ctx context.Context, req *Request) (kmsg.Response, error)
}

// served is the registry: every api the server answers, by key. ParseRequest
// refuses a key or version not in it, handle dispatches by it, and
// ApiVersions lists it. The upper bounds stop before versions that name
// topics by id (Produce v13, Fetch v13) or whose semantics the broker does
// not have (transactions v2, tiered storage offsets).
//
// The rows are listed in one table (below) rather than registered from an
// init in each api's file: the whole served set reads in one place, in key
// order, with no dependence on the order files are initialized in, and a
// row declared in an api's file but left out of the table is an unused
// variable, which staticcheck reports. The table is filled in init, not by
// an initializer, because the ApiVersions row's handler reads served (an
// initializer would be an initialization cycle).
var served map[int16]api

func init() {
	served = map[int16]api{}
	for _, a := range []api{
		produceAPI,              // produce.go
		fetchAPI,                // fetch.go
		listOffsetsAPI,          // listoffsets.go
		metadataAPI,             // metadata.go
		offsetCommitAPI,         // groups_offsets.go
		offsetFetchAPI,          // groups_offsets.go
		findCoordinatorAPI,      // groups.go
		joinGroupAPI,            // groups.go
		heartbeatAPI,            // groups.go
		leaveGroupAPI,           // groups.go
		syncGroupAPI,            // groups.go
		apiVersionsAPI,          // apiversions.go
		createTopicsAPI,         // createtopics.go
		initProducerIDAPI,       // initproducerid.go
		offsetForLeaderEpochAPI, // epochs.go
	} {
		if _, dup := served[a.key]; dup || a.serve == nil || a.min > a.max || kmsg.RequestForKey(a.key) == nil {
			panic(fmt.Sprintf("kafkawire: bad registry row for api key %d", a.key))
		}
		served[a.key] = a
	}
}

// supported reports whether the server answers key at version.
func supported(key, version int16) bool {
	r, ok := served[key]
	return ok && version >= r.min && version <= r.max
}

// withBody makes a row's serve of a handler that takes the api's kmsg
// request: ParseRequest gives the body of the row's key, so the assertion
// holds for a row whose key and handler agree (the fuzz seeds send every
// row's request, so a row whose do not fails the tests).
func withBody[R kmsg.Request](f func(*handler, context.Context, R) (kmsg.Response, error)) func(*handler, context.Context, *Request) (kmsg.Response, error) {
	return func(h *handler, ctx context.Context, req *Request) (kmsg.Response, error) {
		return f(h, ctx, req.Body.(R))
	}
}
