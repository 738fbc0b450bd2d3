package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// TargetFile is a Kafka target written down: the cluster's bootstrap
// addresses and every command the harness runs on it. `watermark check
// --target kafka --target-file FILE` reads one, and a failed run's replay
// line names the file rather than repeat each command.
//
//	bootstrap: [localhost:9092, localhost:9093, localhost:9094]
//	kill_cmd: docker kill kafka{id}
//	restart_cmd: docker start kafka{id}
//	create_topic_cmd: >-
//	  kafka-topics.sh --bootstrap-server localhost:9092 --create --topic {topic}
//	  --partitions {partitions} --replication-factor {rf} {config_flags}
//	settings: {replica_fetch_max_bytes: 1048576, auto_leader_rebalance: false}
//
// settings, by run-file key (failpoints/RUNFILE.md), are what the
// cluster's brokers and controllers run with, as far as the user knows
// (KafkaTarget.Settings): a case that needs another value of one is
// skipped and says so. `watermark cluster --target-file` writes a file
// with all of them.
type TargetFile struct {
	Bootstrap      []string          `yaml:"bootstrap"`
	KillCmd        string            `yaml:"kill_cmd"`
	RestartCmd     string            `yaml:"restart_cmd"`
	PauseCmd       string            `yaml:"pause_cmd"`
	ResumeCmd      string            `yaml:"resume_cmd"`
	IsolateCmd     string            `yaml:"isolate_cmd"`
	HealCmd        string            `yaml:"heal_cmd"`
	SlowCmd        string            `yaml:"slow_cmd"`
	StopCmd        string            `yaml:"stop_cmd"`
	CreateTopicCmd string            `yaml:"create_topic_cmd"`
	Settings       map[string]string `yaml:"settings,omitempty"`
}

// ReadTargetFile reads a TargetFile into a KafkaTarget. Unknown fields,
// a missing bootstrap and half a pair of commands (a kill without a
// restart) are errors that name the file, the line and the fix.
func ReadTargetFile(path string) (*KafkaTarget, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("target file: %w", err)
	}
	var f TargetFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty target file: want at least bootstrap: [HOST:PORT]", path)
		}
		return nil, fmt.Errorf("%s: %v (fields: bootstrap, kill_cmd, restart_cmd, pause_cmd, resume_cmd, isolate_cmd, heal_cmd, slow_cmd, stop_cmd, create_topic_cmd, settings)", path, err)
	}
	if len(f.Bootstrap) == 0 {
		return nil, fmt.Errorf("%s: no bootstrap: add bootstrap: [HOST:PORT, ...]", path)
	}
	for _, pair := range [][2]string{{"kill_cmd", "restart_cmd"}, {"pause_cmd", "resume_cmd"}, {"isolate_cmd", "heal_cmd"}} {
		have := map[string]string{"kill_cmd": f.KillCmd, "restart_cmd": f.RestartCmd, "pause_cmd": f.PauseCmd,
			"resume_cmd": f.ResumeCmd, "isolate_cmd": f.IsolateCmd, "heal_cmd": f.HealCmd}
		if (have[pair[0]] == "") != (have[pair[1]] == "") {
			return nil, fmt.Errorf("%s: %s and %s go together: give both, or neither", path, pair[0], pair[1])
		}
	}
	if f.StopCmd != "" && f.RestartCmd == "" {
		return nil, fmt.Errorf("%s: stop_cmd needs restart_cmd, to start the broker again", path)
	}
	if err := checkSettings(f.Settings); err != nil {
		return nil, fmt.Errorf("%s: settings: %v", path, err)
	}
	return &KafkaTarget{Bootstrap: f.Bootstrap, KillCmd: f.KillCmd, RestartCmd: f.RestartCmd, PauseCmd: f.PauseCmd,
		ResumeCmd: f.ResumeCmd, IsolateCmd: f.IsolateCmd, HealCmd: f.HealCmd, SlowCmd: f.SlowCmd, StopCmd: f.StopCmd, CreateTopicCmd: f.CreateTopicCmd,
		Settings: f.Settings, File: path}, nil
}

// createTopicWithCmd runs the user's create-topic command for a topic,
// with {topic}, {partitions}, {rf} (the replication factor), {configs}
// (name=value,... sorted) and {config_flags} (--config name=value ...)
// filled in.
func (t *KafkaTarget) createTopicWithCmd(ctx context.Context, name string, partitions int32, rf int, configs map[string]string) error {
	var pairs, flags []string
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		pairs = append(pairs, k+"="+configs[k])
		flags = append(flags, "--config "+k+"="+configs[k])
	}
	line := strings.NewReplacer("{topic}", name, "{partitions}", strconv.Itoa(int(partitions)), "{rf}", strconv.Itoa(rf),
		"{configs}", strings.Join(pairs, ","), "{config_flags}", strings.Join(flags, " ")).Replace(t.CreateTopicCmd)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, "sh", "-c", line).CombinedOutput()
	if t.Logf != nil {
		t.Logf("create topic %s: %s: %s", name, line, strings.TrimSpace(string(out)))
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %q: %v: %s", name, line, err, strings.TrimSpace(string(out)))
	}
	return nil
}
