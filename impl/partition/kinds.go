package partition

import "github.com/watermarkhq/watermark/impl/kafka"

// Replication's messages, between a follower and its leader.
func init() {
	kafka.Register(
		kafka.Row{Kind: "replica-fetch", Proto: FetchRequest{}, Answer: "replica-fetch-response", Wire: true},
		kafka.Row{Kind: "replica-fetch-response", Proto: FetchResponse{}, Wire: true},
		kafka.Row{Kind: "epoch-end", Proto: EpochEndRequest{}, Answer: "epoch-end-response", Wire: true},
		kafka.Row{Kind: "epoch-end-response", Proto: EpochEndResponse{}, Wire: true},
	)
}

// Kind implements kafka.Message.
func (FetchRequest) Kind() kafka.Kind { return "replica-fetch" }

// Kind implements kafka.Message.
func (FetchResponse) Kind() kafka.Kind { return "replica-fetch-response" }

// Corr implements kafka.Answer: the fetch answered.
func (r FetchResponse) Corr() uint64 { return r.ID }

// Failure implements kafka.Answer.
func (r FetchResponse) Failure() error { return r.Err }

// Kind implements kafka.Message.
func (EpochEndRequest) Kind() kafka.Kind { return "epoch-end" }

// Kind implements kafka.Message.
func (EpochEndResponse) Kind() kafka.Kind { return "epoch-end-response" }

// Corr implements kafka.Answer: the request answered.
func (r EpochEndResponse) Corr() uint64 { return r.ID }

// Failure implements kafka.Answer.
func (r EpochEndResponse) Failure() error { return r.Err }
