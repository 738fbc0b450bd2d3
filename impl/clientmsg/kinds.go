package clientmsg

import (
	"github.com/watermarkhq/watermark/impl/groupmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// The messages of this package, one row each (kafka.Register): the client
// plane, with the metadata request a broker also sends the controller.
func init() {
	kafka.Register(
		kafka.Row{Kind: "metadata", Proto: MetadataRequest{}, Answer: "metadata-response", Wire: true},
		kafka.Row{Kind: "metadata-response", Proto: MetadataResponse{}, Wire: true},
		kafka.Row{Kind: "produce", Proto: ProduceRequest{}, Answer: "produce-response"},
		kafka.Row{Kind: "produce-response", Proto: ProduceResponse{}},
		kafka.Row{Kind: "fetch", Proto: FetchRequest{}, Answer: "fetch-response"},
		kafka.Row{Kind: "fetch-response", Proto: FetchResponse{}},
		kafka.Row{Kind: "fetch-many", Proto: FetchManyRequest{}, Answer: "fetch-many-response"},
		kafka.Row{Kind: "fetch-many-response", Proto: FetchManyResponse{}},
		kafka.Row{Kind: "init-producer-id", Proto: InitProducerIDRequest{}, Answer: "init-producer-id-response"},
		kafka.Row{Kind: "init-producer-id-response", Proto: InitProducerIDResponse{}},
		kafka.Row{Kind: "list-offsets", Proto: ListOffsetsRequest{}, Answer: "list-offsets-response"},
		kafka.Row{Kind: "list-offsets-response", Proto: ListOffsetsResponse{}},
		kafka.Row{Kind: "offset-for-leader-epoch", Proto: EpochEndRequest{}, Answer: "offset-for-leader-epoch-response"},
		kafka.Row{Kind: "offset-for-leader-epoch-response", Proto: EpochEndResponse{}},
		kafka.Row{Kind: "find-coordinator", Proto: FindCoordinatorRequest{}, Answer: "find-coordinator-response", Family: "group"},
		kafka.Row{Kind: "find-coordinator-response", Proto: FindCoordinatorResponse{}, Family: "group-response"},
		kafka.Row{Kind: "group-response", Proto: GroupResponse{}},
		// A group request's kind is its inner request's: "offset-commit"
		// for a commit, "group" for the rest (GroupRequest.Kind).
		kafka.Row{Kind: "group", Proto: GroupRequest{}, Answer: "group-response"},
		kafka.Row{Kind: "offset-commit", Proto: GroupRequest{Req: groupmsg.CommitRequest{}}, Answer: "group-response", Family: "group"},
	)
}

// Kind implements kafka.Message.
func (MetadataRequest) Kind() kafka.Kind { return "metadata" }

// Kind implements kafka.Message.
func (MetadataResponse) Kind() kafka.Kind { return "metadata-response" }

// Kind implements kafka.Message.
func (ProduceRequest) Kind() kafka.Kind { return "produce" }

// Kind implements kafka.Message.
func (ProduceResponse) Kind() kafka.Kind { return "produce-response" }

// Kind implements kafka.Message.
func (FetchRequest) Kind() kafka.Kind { return "fetch" }

// Kind implements kafka.Message.
func (FetchResponse) Kind() kafka.Kind { return "fetch-response" }

// Kind implements kafka.Message.
func (FetchManyRequest) Kind() kafka.Kind { return "fetch-many" }

// Kind implements kafka.Message.
func (FetchManyResponse) Kind() kafka.Kind { return "fetch-many-response" }

// Kind implements kafka.Message.
func (InitProducerIDRequest) Kind() kafka.Kind { return "init-producer-id" }

// Kind implements kafka.Message.
func (InitProducerIDResponse) Kind() kafka.Kind { return "init-producer-id-response" }

// Kind implements kafka.Message.
func (ListOffsetsRequest) Kind() kafka.Kind { return "list-offsets" }

// Kind implements kafka.Message.
func (ListOffsetsResponse) Kind() kafka.Kind { return "list-offsets-response" }

// Kind implements kafka.Message.
func (EpochEndRequest) Kind() kafka.Kind { return "offset-for-leader-epoch" }

// Kind implements kafka.Message.
func (EpochEndResponse) Kind() kafka.Kind { return "offset-for-leader-epoch-response" }

// Kind implements kafka.Message.
func (FindCoordinatorRequest) Kind() kafka.Kind { return "find-coordinator" }

// Kind implements kafka.Message.
func (FindCoordinatorResponse) Kind() kafka.Kind { return "find-coordinator-response" }

// Kind implements kafka.Message.
func (GroupResponse) Kind() kafka.Kind { return "group-response" }

// Kind implements kafka.Message: "offset-commit" for a commit, which a
// messages fault can select alone, "group" for every other group request.
func (r GroupRequest) Kind() kafka.Kind {
	if _, ok := r.Req.(groupmsg.CommitRequest); ok {
		return "offset-commit"
	}
	return "group"
}
