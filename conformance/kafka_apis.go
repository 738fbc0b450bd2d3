package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafkaclient"
)

// ViolationError is a run that broke a promise before it could start: a
// target that does not offer what every Kafka broker must (Produce, say).
// The run is violated with Reason.
type ViolationError struct{ Reason string }

func (e *ViolationError) Error() string { return "violated: " + e.Reason }

// apiNeed is an API a run speaks: its key, what for, and whether every
// Kafka broker serves it (a broker that does not list it breaks a promise
// of the protocol; one that does not list another API only cannot run the
// cases that need it).
type apiNeed struct {
	key  kmsg.Key
	why  string
	core bool
}

// neededAPIs lists the APIs a run of cfg speaks. createsTopics is false
// when the user's own command or TopicCreator creates topics.
func neededAPIs(cfg run.Spec, createsTopics bool) []apiNeed {
	needs := []apiNeed{
		{kmsg.Metadata, "every client", true}, {kmsg.Produce, "producers", true},
		{kmsg.Fetch, "consumers", true}, {kmsg.ListOffsets, "consumers", true},
	}
	if createsTopics {
		needs = append(needs, apiNeed{kmsg.CreateTopics, "creating the run's topics (or give --create-topic-cmd)", false})
	}
	if cfg.Workload.Idempotent {
		needs = append(needs, apiNeed{kmsg.InitProducerID, "idempotent producers", false})
	}
	if cfg.Workload.Group != "" {
		for _, k := range []kmsg.Key{kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat,
			kmsg.LeaveGroup, kmsg.OffsetCommit, kmsg.OffsetFetch} {
			needs = append(needs, apiNeed{k, "consumer groups", false})
		}
	}
	return needs
}

// listedAPIs is the broker's ApiVersions answer (key -> highest version),
// asked once per target.
func (t *KafkaTarget) listedAPIs(ctx context.Context) (map[int16]int16, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.versions != nil {
		return t.versions, nil
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := kafkaclient.Handshake(hctx, t.Bootstrap[0], nil)
	if err != nil {
		return nil, err
	}
	t.versions = v
	return v, nil
}

// unlisted checks that the broker lists every API a run of cfg speaks: a
// missing core API violates the run (ViolationError), any other skips it
// (SkipError), each naming the APIs and what they are for, instead of the
// run timing out on a request the broker never answers.
func (t *KafkaTarget) unlisted(ctx context.Context, cfg run.Spec) error {
	listed, err := t.listedAPIs(ctx)
	if err != nil {
		return nil // the run's own requests will say what is wrong
	}
	_, ownCreator := t.Faults.(TopicCreator)
	var core, other []string
	for _, n := range neededAPIs(cfg, t.CreateTopicCmd == "" && !ownCreator) {
		if _, ok := listed[n.key.Int16()]; ok {
			continue
		}
		item := fmt.Sprintf("%s (%s)", n.key.Name(), n.why)
		if n.core {
			core = append(core, item)
		} else if !slices.Contains(other, item) {
			other = append(other, item)
		}
	}
	switch {
	case len(core) > 0:
		return &ViolationError{Reason: fmt.Sprintf("the broker does not list %s in its ApiVersions answer: every Kafka broker serves it", strings.Join(core, ", "))}
	case len(other) > 0:
		return &SkipError{Reason: fmt.Sprintf("needs %s, which the broker does not list in its ApiVersions answer", strings.Join(other, ", "))}
	}
	return nil
}
