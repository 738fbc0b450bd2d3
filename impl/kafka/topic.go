package kafka

import "fmt"

// CreateTopic asks the controller for a new topic: a client's
// CreateTopics, or a broker's own request for an internal topic.
type CreateTopic struct {
	Correlation       uint64
	Name              string
	Partitions        int32
	ReplicationFactor int
	Config            TopicConfig
}

// CreateTopicResponse answers CreateTopic.
type CreateTopicResponse struct {
	Correlation uint64
	Err         error
}

func init() {
	Register(
		Row{Kind: "create-topic", Proto: CreateTopic{}, Answer: "create-topic-response", Wire: true},
		Row{Kind: "create-topic-response", Proto: CreateTopicResponse{}, Wire: true},
	)
}

// Kind implements Message.
func (CreateTopic) Kind() Kind { return "create-topic" }

// Corr is the request's correlation, which its answer echoes.
func (r CreateTopic) Corr() uint64 { return r.Correlation }

// Refuse is the answer that refuses the request with err.
func (r CreateTopic) Refuse(err error) Answer {
	return CreateTopicResponse{Correlation: r.Correlation, Err: err}
}

// Kind implements Message.
func (CreateTopicResponse) Kind() Kind { return "create-topic-response" }

// Corr implements Answer.
func (a CreateTopicResponse) Corr() uint64 { return a.Correlation }

// Failure implements Answer.
func (a CreateTopicResponse) Failure() error { return a.Err }

// String renders the answer as controller scenarios print it.
func (a CreateTopicResponse) String() string {
	return fmt.Sprintf("create-topic corr=%d err=%s", a.Correlation, Name(a.Err))
}
