package conformance

import (
	"fmt"
	"maps"
	"slices"

	"github.com/watermarkhq/watermark/conformance/run"
)

// topicLevel are the settings a KafkaTarget gives each run's topics
// (min.insync.replicas, unclean.leader.election.enable): a case may
// change them whatever the cluster runs with.
var topicLevel = map[string]bool{"min_insync_replicas": true, "unclean_leader_election": true}

// ClusterSettings lists the broker and controller settings case spec cfg
// gives its brokers, beyond the harness's defaults, that a topic cannot
// carry: on a KafkaTarget they are the cluster's to have, not the
// harness's to set.
func ClusterSettings(cfg run.Spec) []run.Setting {
	var out []run.Setting
	for _, s := range cfg.Settings.Diff(run.DefaultSettings()) {
		if !topicLevel[s.Key] {
			out = append(out, s)
		}
	}
	return out
}

// clusterSettings compares what case spec cfg needs of the cluster with
// what settings (the target file's, and the timing settings learnt) say
// it has: a different value skips the case, naming
// both and the fix; needs t.Settings does not list are returned, for
// the result to say the run went on without knowing.
func (t *KafkaTarget) clusterSettings(cfg run.Spec, settings map[string]string) ([]run.Setting, error) {
	var unknown []run.Setting
	for _, need := range ClusterSettings(cfg) {
		have, ok := settings[need.Key]
		if !ok {
			unknown = append(unknown, need)
			continue
		}
		if !sameSetting(need.Key, have, need.Value) {
			return nil, &SkipError{Reason: fmt.Sprintf("needs %s on the brokers (%s); the cluster has %s, by its target file: start one with it (watermark cluster %s) and list it under settings:",
				need, need.Doc, have, need.Flag())}
		}
	}
	return unknown, nil
}

// sameSetting compares two values of setting key as Field.Set reads
// them (1e3 and 1000, True and true), falling back to the text.
func sameSetting(key, a, b string) bool {
	x, y := run.DefaultSettings(), run.DefaultSettings()
	fx, fy := settingField(&x, key), settingField(&y, key)
	if fx == nil || fx.Set(a) != nil || fy.Set(b) != nil {
		return a == b
	}
	return fx.String() == fy.String()
}

func settingField(s *run.Settings, key string) *run.Field {
	for _, f := range append(run.Fields(&s.Broker), run.Fields(&s.Controller)...) {
		if f.Key == key {
			return &f
		}
	}
	return nil
}

// checkSettings checks a target file's settings: known keys, values
// each setting can take.
func checkSettings(m map[string]string) error {
	s := run.DefaultSettings()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f := settingField(&s, k)
		if f == nil {
			return fmt.Errorf("%s: no such setting (the keys are failpoints/RUNFILE.md's broker and controller keys, e.g. replica_fetch_max_bytes)", k)
		}
		if err := f.Set(m[k]); err != nil {
			return fmt.Errorf("%s: %v", k, err)
		}
	}
	return nil
}
