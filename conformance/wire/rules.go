package wire

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// noTopic is a topic the stage names that no cluster should hold: the
// answers about it must still list it, with its error.
const noTopic = "watermark-wire-no-such-topic"

// noTopicID stands for noTopic where a request names topics by id
// (Produce v13+, KIP-516).
var noTopicID = [16]byte{'w', 'a', 't', 'e', 'r', 'm', 'a', 'r', 'k', '-', 'n', 'o', 'n', 'e', 0, 1}

// rule checks an answer that decoded against what its request asked:
// "" when it keeps the protocol's rules, else what it broke.
type rule func(req kmsg.Request, resp kmsg.Response) string

// variants are the shapes each request is sent in, with the rules their
// answers must keep beyond decoding: Metadata with a null topic list
// (every topic, v1+), an empty one (none: v1+, v0 reads it as every
// topic) and one topic no cluster has (auto-creation off, v4+, so the
// stage creates nothing); Produce and ListOffsets of one partition of that
// topic, whose answer must carry that one partition back, with its
// error.
func variants(key int16, v int16) []variant {
	plain := variant{set: func(kmsg.Request) {}}
	switch key {
	case kmsg.Metadata.Int16():
		out := []variant{{name: "null topics", set: func(r kmsg.Request) { r.(*kmsg.MetadataRequest).Topics = nil }, check: metadataBrokers}}
		if v == 0 {
			out = []variant{{set: func(r kmsg.Request) { r.(*kmsg.MetadataRequest).Topics = []kmsg.MetadataRequestTopic{} }, check: metadataBrokers}}
		} else {
			out = append(out, variant{name: "empty topics", set: func(r kmsg.Request) { r.(*kmsg.MetadataRequest).Topics = []kmsg.MetadataRequestTopic{} },
				check: both(metadataBrokers, metadataTopics(0))})
		}
		if v >= 4 {
			out = append(out, variant{name: "unknown topic", set: func(r kmsg.Request) {
				m := r.(*kmsg.MetadataRequest)
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = kmsg.StringPtr(noTopic)
				m.Topics, m.AllowAutoTopicCreation = []kmsg.MetadataRequestTopic{t}, false
			}, check: both(metadataBrokers, metadataTopics(1))})
		}
		return out
	case kmsg.Produce.Int16():
		return []variant{plain, {name: "unknown topic", set: func(r kmsg.Request) {
			p := r.(*kmsg.ProduceRequest)
			t := kmsg.NewProduceRequestTopic()
			t.Topic, t.TopicID = noTopic, noTopicID
			t.Partitions = []kmsg.ProduceRequestTopicPartition{kmsg.NewProduceRequestTopicPartition()}
			p.Topics = []kmsg.ProduceRequestTopic{t}
		}, check: producePartitions}}
	case kmsg.ListOffsets.Int16():
		return []variant{plain, {name: "unknown topic", set: func(r kmsg.Request) {
			l := r.(*kmsg.ListOffsetsRequest)
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = noTopic
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = -1
			t.Partitions = []kmsg.ListOffsetsRequestTopicPartition{p}
			l.Topics = []kmsg.ListOffsetsRequestTopic{t}
		}, check: listOffsetsPartitions}}
	}
	return []variant{plain}
}

func both(a, b rule) rule {
	return func(req kmsg.Request, resp kmsg.Response) string {
		if why := a(req, resp); why != "" {
			return why
		}
		return b(req, resp)
	}
}

// metadataBrokers: at least one broker, each with a node id of its own,
// a host and a port; every partition's leader one of them or -1.
func metadataBrokers(_ kmsg.Request, resp kmsg.Response) string {
	m := resp.(*kmsg.MetadataResponse)
	if len(m.Brokers) == 0 {
		return "no brokers listed"
	}
	ids := map[int32]bool{}
	for _, b := range m.Brokers {
		switch {
		case ids[b.NodeID]:
			return fmt.Sprintf("broker %d listed twice", b.NodeID)
		case b.NodeID < 0 || b.Host == "" || b.Port <= 0 || b.Port > 65535:
			return fmt.Sprintf("broker %d at %q port %d: want an id >= 0, a host and a port", b.NodeID, b.Host, b.Port)
		}
		ids[b.NodeID] = true
	}
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			if p.Leader != -1 && !ids[p.Leader] && p.ErrorCode == 0 {
				return fmt.Sprintf("partition %d of %s led by broker %d, which the answer does not list", p.Partition, topicName(t.Topic), p.Leader)
			}
		}
	}
	return ""
}

// metadataTopics: the answer lists exactly n topics (none for an empty
// request; the one asked for, by name, with an error).
func metadataTopics(n int) rule {
	return func(_ kmsg.Request, resp kmsg.Response) string {
		m := resp.(*kmsg.MetadataResponse)
		if len(m.Topics) != n {
			return fmt.Sprintf("%d topics in the answer to a request for %d", len(m.Topics), n)
		}
		if n == 1 {
			t := m.Topics[0]
			if topicName(t.Topic) != noTopic {
				return fmt.Sprintf("the answer lists topic %q, the request %q", topicName(t.Topic), noTopic)
			}
			if t.ErrorCode == 0 {
				return fmt.Sprintf("topic %q, which nobody created, has no error (auto-creation was off)", noTopic)
			}
		}
		return ""
	}
}

func topicName(t *string) string {
	if t == nil {
		return "<null>"
	}
	return *t
}

// producePartitions: the answer carries back the one partition asked for.
func producePartitions(_ kmsg.Request, resp kmsg.Response) string {
	p := resp.(*kmsg.ProduceResponse)
	named := func(t kmsg.ProduceResponseTopic) bool {
		if resp.GetVersion() >= 13 {
			return t.TopicID == noTopicID
		}
		return t.Topic == noTopic
	}
	if len(p.Topics) != 1 || !named(p.Topics[0]) || len(p.Topics[0].Partitions) != 1 || p.Topics[0].Partitions[0].Partition != 0 {
		return fmt.Sprintf("asked about partition 0 of %s, the answer has %s", noTopic, produceShape(p))
	}
	if p.Topics[0].Partitions[0].ErrorCode == 0 {
		return fmt.Sprintf("a write to %s, which nobody created, succeeded", noTopic)
	}
	return ""
}

func produceShape(p *kmsg.ProduceResponse) string {
	var parts []string
	for _, t := range p.Topics {
		for _, q := range t.Partitions {
			name := t.Topic
			if p.GetVersion() >= 13 {
				name = fmt.Sprintf("topic id %x", t.TopicID)
			}
			parts = append(parts, fmt.Sprintf("%s/%d", name, q.Partition))
		}
	}
	return fmt.Sprintf("%d partitions %v", len(parts), parts)
}

// listOffsetsPartitions: the answer carries back the one partition asked
// for.
func listOffsetsPartitions(_ kmsg.Request, resp kmsg.Response) string {
	l := resp.(*kmsg.ListOffsetsResponse)
	var parts []string
	for _, t := range l.Topics {
		for _, q := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s/%d", t.Topic, q.Partition))
		}
	}
	if len(parts) != 1 || parts[0] != noTopic+"/0" {
		return fmt.Sprintf("asked about partition 0 of %s, the answer has %d partitions %v", noTopic, len(parts), parts)
	}
	if l.Topics[0].Partitions[0].ErrorCode == 0 {
		return fmt.Sprintf("offsets of %s, which nobody created, with no error", noTopic)
	}
	return ""
}

// trailing reports bytes an answer holds past the end of what decoded:
// kmsg re-encodes what it read, unknown tagged fields included, so a
// well-formed answer is no longer than its re-encoding.
func trailing(body []byte, resp kmsg.Response) string {
	if n := len(body) - len(resp.AppendTo(nil)); n > 0 {
		return fmt.Sprintf("%d bytes past the end of the answer: % x", n, body[len(body)-n:][:min(n, 16)])
	}
	return ""
}
