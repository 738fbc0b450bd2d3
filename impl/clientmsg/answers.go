package clientmsg

import "github.com/watermarkhq/watermark/impl/kafka"

// Each request's correlation and refusal, and each answer's correlation
// and error (Request, kafka.Answer). A refusal carries no data: offsets,
// epochs and HWs are -1, no leader is named.

// Corr implements Request.
func (r MetadataRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request.
func (r MetadataRequest) Refuse(err error) kafka.Answer {
	return MetadataResponse{Correlation: r.Correlation, Err: err}
}

// Corr implements Request.
func (r ProduceRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request.
func (r ProduceRequest) Refuse(err error) kafka.Answer {
	return ProduceResponse{Correlation: r.Correlation, TopicPartition: r.TopicPartition, BaseOffset: -1, Err: err,
		Leader: LeaderHint{ID: -1, Epoch: -1}}
}

// Corr implements Request.
func (r FetchRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request.
func (r FetchRequest) Refuse(err error) kafka.Answer {
	return FetchResponse{Correlation: r.Correlation, TopicPartition: r.TopicPartition, HW: -1, LEO: -1, LogStart: -1, Err: err}
}

// Corr implements Request.
func (r InitProducerIDRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request.
func (r InitProducerIDRequest) Refuse(err error) kafka.Answer {
	return InitProducerIDResponse{Correlation: r.Correlation, ProducerID: -1, ProducerEpoch: -1, Err: err}
}

// Corr implements Request.
func (r ListOffsetsRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request.
func (r ListOffsetsRequest) Refuse(err error) kafka.Answer {
	return ListOffsetsResponse{Correlation: r.Correlation, TopicPartition: r.TopicPartition, Offset: -1, LeaderEpoch: -1, Err: err}
}

// Corr implements Request.
func (r EpochEndRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request.
func (r EpochEndRequest) Refuse(err error) kafka.Answer {
	return EpochEndResponse{Correlation: r.Correlation, TopicPartition: r.TopicPartition, LeaderEpoch: -1, EndOffset: -1, Err: err}
}

// Corr implements Request.
func (r FindCoordinatorRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request.
func (r FindCoordinatorRequest) Refuse(err error) kafka.Answer {
	return FindCoordinatorResponse{Correlation: r.Correlation, Coordinator: -1, Err: err}
}

// Corr implements Request.
func (r GroupRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request: the group request's own refusal
// (groupmsg.Request.Refuse).
func (r GroupRequest) Refuse(err error) kafka.Answer {
	return GroupResponse{Correlation: r.Correlation, Resp: r.Req.Refuse(err)}
}

// Corr implements kafka.Answer.
func (a MetadataResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer.
func (a MetadataResponse) Failure() error { return a.Err }

// Corr implements kafka.Answer.
func (a ProduceResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer.
func (a ProduceResponse) Failure() error { return a.Err }

// Corr implements Request.
func (r FetchManyRequest) Corr() uint64 { return r.Correlation }

// Refuse implements Request: every partition refused with err.
func (r FetchManyRequest) Refuse(err error) kafka.Answer {
	out := FetchManyResponse{Correlation: r.Correlation, Partitions: make([]FetchResponse, len(r.Partitions))}
	for i, p := range r.Partitions {
		out.Partitions[i] = FetchResponse{Correlation: r.Correlation, TopicPartition: p.TopicPartition, HW: -1, LEO: -1, LogStart: -1, Err: err}
	}
	return out
}

// Corr implements kafka.Answer.
func (a FetchManyResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer: the answer as a whole does not fail;
// its partitions may.
func (a FetchManyResponse) Failure() error { return nil }

// Corr implements kafka.Answer.
func (a FetchResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer.
func (a FetchResponse) Failure() error { return a.Err }

// Corr implements kafka.Answer.
func (a InitProducerIDResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer.
func (a InitProducerIDResponse) Failure() error { return a.Err }

// Corr implements kafka.Answer.
func (a ListOffsetsResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer.
func (a ListOffsetsResponse) Failure() error { return a.Err }

// Corr implements kafka.Answer.
func (a EpochEndResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer.
func (a EpochEndResponse) Failure() error { return a.Err }

// Corr implements kafka.Answer.
func (a FindCoordinatorResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer.
func (a FindCoordinatorResponse) Failure() error { return a.Err }

// Corr implements kafka.Answer.
func (a GroupResponse) Corr() uint64 { return a.Correlation }

// Failure implements kafka.Answer: the group response's (nil for none).
func (a GroupResponse) Failure() error {
	if a.Resp == nil {
		return nil
	}
	return a.Resp.Failure()
}
