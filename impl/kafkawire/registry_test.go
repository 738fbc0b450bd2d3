package kafkawire

import (
	"context"
	"encoding/binary"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestApiVersionsListsRegistry checks that ApiVersions lists exactly the
// registry's rows, in key order, with their versions, at every served
// version of ApiVersions.
func TestApiVersionsListsRegistry(t *testing.T) {
	var want []kmsg.ApiVersionsResponseApiKey
	for _, key := range slices.Sorted(maps.Keys(served)) {
		a := served[key]
		require.Equal(t, key, a.key, "row filed under another key")
		want = append(want, kmsg.ApiVersionsResponseApiKey{ApiKey: a.key, MinVersion: a.min, MaxVersion: a.max})
	}
	c := newWireClient(t)
	for v := served[apiVersionsKey].min; v <= served[apiVersionsKey].max; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
		require.Zero(t, resp.ErrorCode, "v%d", v)
		require.Equal(t, want, resp.ApiKeys, "v%d", v)
	}
}

// TestUnregisteredKeysClose checks the treatment of a request the registry
// does not serve: every kmsg api key without a row, a key kmsg does not
// know, and a registered key above its versions (other than ApiVersions,
// whose KIP-511 answer TestApiVersions checks) close the connection
// without an answer.
func TestUnregisteredKeysClose(t *testing.T) {
	for key := range int16(100) {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		if _, ok := served[key]; ok {
			if key == apiVersionsKey || req.MaxVersion() <= served[key].max {
				continue
			}
			req.SetVersion(served[key].max + 1)
		} else {
			req.SetVersion(req.MaxVersion())
		}
		t.Run(kmsg.NameForKey(key), func(t *testing.T) {
			c := newWireClient(t)
			c.send(req)
			c.closed()
		})
	}
	t.Run("unknown to kmsg", func(t *testing.T) {
		c := newWireClient(t)
		f := binary.BigEndian.AppendUint32(nil, 10)
		f = binary.BigEndian.AppendUint16(f, 500)
		f = binary.BigEndian.AppendUint16(f, 0)
		f = binary.BigEndian.AppendUint32(f, 1)
		f = append(f, 0xff, 0xff)
		c.write(f)
		c.closed()
	})
	t.Run("handle", func(t *testing.T) {
		srv := &Server{Backend: &fakeBackend{}}
		srv.init()
		h := &handler{s: srv, sess: srv.Backend.Open()}
		defer h.sess.Close()
		req := kmsg.NewPtrDeleteTopicsRequest()
		resp, err := h.handle(context.Background(), &Request{Key: req.Key(), Body: req})
		require.ErrorContains(t, err, "no handler for DeleteTopics v0")
		require.Nil(t, resp)
	})
}
