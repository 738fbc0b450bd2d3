package conformance

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/kafkaclient"
)

// timingSetting is a setting that times a promise the cases judge: how
// long a dead broker keeps its leaderships, how long a lagging follower
// keeps its ISR place. A verdict about "too slow" must be judged by the
// cluster's own value, not the harness's.
type timingSetting struct {
	key   string // run-file key
	kafka string // Kafka's config name
	def   int64  // Kafka 4.1's default, ms
}

var timingSettings = []timingSetting{
	{"session_timeout_ms", "broker.session.timeout.ms", 9000},
	{"replica_lag_time_max_ms", "replica.lag.time.max.ms", 30000},
}

// declared is a timing setting's value on the cluster and where the
// harness learnt it.
type declared struct {
	value string
	from  string
}

// clusterTiming learns the cluster's timing settings once: from the target
// file's settings:, else from DescribeConfigs of a broker, else Kafka's
// default (said as such).
func (t *KafkaTarget) clusterTiming(ctx context.Context, shift int32) map[string]declared {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timing != nil {
		return t.timing
	}
	out := map[string]declared{}
	var described map[string]string
	var asked int32 = 1 - shift // the harness's broker 1, by the cluster's own id
	for _, s := range timingSettings {
		if v, ok := t.Settings[s.key]; ok {
			out[s.key] = declared{v, "the target file's settings"}
			continue
		}
		if described == nil {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			names := make([]string, len(timingSettings))
			for i, s := range timingSettings {
				names[i] = s.kafka
			}
			described = map[string]string{}
			if cl, err := kafkaclient.NewClientWith(t.Bootstrap, kafkaclient.ClientOptions{MaxVersions: t.MaxVersions}); err == nil {
				if got, err := cl.BrokerConfigs(dctx, asked, names...); err == nil {
					described = got
				}
				cl.Close()
			}
			cancel()
		}
		if v, ok := described[s.kafka]; ok {
			if _, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[s.key] = declared{v, fmt.Sprintf("DescribeConfigs of broker %d", asked)}
				continue
			}
		}
		out[s.key] = declared{strconv.FormatInt(s.def, 10), "Kafka's default: the broker did not describe it; say the cluster's under settings: in the target file"}
	}
	t.timing = out
	return out
}

// applyTiming makes the run judge its timing promises by the cluster's
// settings: a case that keeps the harness's value of a timing setting
// gets the cluster's (a case that needs its own is compared with the
// cluster's by clusterSettings), and the run's notes say which values
// were used and where they came from.
func applyTiming(cfg *run.Spec, timing map[string]declared) (note string) {
	defaults := run.DefaultSettings()
	var said []string
	for _, s := range timingSettings {
		d, ok := timing[s.key]
		if !ok {
			continue
		}
		mine, theirs := run.Fields(&cfg.Settings.Controller), run.Fields(&defaults.Controller)
		if s.key == "replica_lag_time_max_ms" {
			mine, theirs = run.Fields(&cfg.Settings.Broker), run.Fields(&defaults.Broker)
		}
		for i, f := range mine {
			if f.Key != s.key || f.String() != theirs[i].String() {
				continue
			}
			if err := f.Set(d.value); err == nil {
				said = append(said, fmt.Sprintf("%s=%s ms (%s)", s.kafka, d.value, d.from))
			}
		}
	}
	if len(said) == 0 {
		return ""
	}
	return "timing promises judged by the cluster's " + strings.Join(said, ", ")
}

// known is what the harness knows of the cluster's settings: the target
// file's, and the timing settings it learnt.
func known(settings map[string]string, timing map[string]declared) map[string]string {
	out := map[string]string{}
	for k, d := range timing {
		out[k] = d.value
	}
	for k, v := range settings {
		out[k] = v
	}
	return out
}
