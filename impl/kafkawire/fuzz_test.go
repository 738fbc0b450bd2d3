package kafkawire

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/watermarkhq/watermark/impl/record"
)

// seedFrames encodes, with kmsg, a request of every served api at its
// lowest and highest served version, a few with realistic contents.
func seedFrames() [][]byte {
	var frames [][]byte
	add := func(req kmsg.Request) {
		frames = append(frames, encodeFrame(req, 1))
	}
	for key := range int16(64) {
		r, ok := served[key]
		if !ok {
			continue
		}
		for _, v := range []int16{r.min, r.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			add(req)
		}
	}
	b := record.Batch{ProducerID: 3, ProducerEpoch: 0, BaseSequence: 0,
		Records: []record.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 5, Headers: []record.Header{{Key: "h"}}}}}
	for _, v := range []int16{3, 9} {
		add(produceRequest(v, -1, "t", appendBatch(nil, &b)))
	}
	for _, v := range []int16{4, 12} {
		f := fetchRequest("t", 0, 0)
		f.SetVersion(v)
		add(f)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	add(md)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "x", NumPartitions: 1, ReplicationFactor: 1}}
	add(ct)
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1}}}}
	add(lo)
	for key := int16(8); key <= 14; key++ {
		for v := served[key].min; v <= served[key].max; v++ {
			add(groupRequestAt(key, v))
			req := groupRequestAt(key, v)
			setGroup(req, fakeElsewhere)
			add(req)
		}
	}
	return frames
}

// FuzzParseRequest feeds arbitrary frames to the parser and, when one
// parses, to the handler over a backend that answers at once: neither may
// panic, and every response must encode.
func FuzzParseRequest(f *testing.F) {
	for _, frame := range seedFrames() {
		f.Add(frame)
	}
	srv := &Server{Backend: &fakeBackend{}, MaxBatchBytes: 1 << 20}
	srv.init()
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := ParseRequest(frame)
		if err == nil && (req.Body == nil || !supported(req.Key, req.Version)) {
			t.Fatalf("parsed %d v%d without a body or unsupported", req.Key, req.Version)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h := &handler{s: srv, sess: srv.Backend.Open()}
		defer h.sess.Close()
		key, corr, resp, err := h.serve(ctx, frame)
		if err != nil || resp == nil {
			return
		}
		appendResponse(nil, key, corr, resp)
	})
}
