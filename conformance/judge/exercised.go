package judge

import (
	"errors"
	"fmt"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/settings"
	"github.com/watermarkhq/watermark/linearizability"
)

// exercised is what every case's promise needs to have happened before it
// can hold: its producers had a write acknowledged (every case promises
// something of acknowledged writes), a read returned records, and a group
// that commits had a commit accepted (answered ok, or of unknown outcome
// and shown by an offset-fetch). A run without them tested nothing
// its case promises: it is UNKNOWN on real processes and VIOLATED on the
// simulator (a broken case), never HOLDS. A case's own Require adds what
// else it is about (a failover, a refusal).
func exercised(res *run.Result) error {
	w := res.Spec.Workload
	var acked, read, committed, commits bool
	type fetched struct {
		group, topic string
		partition    int32
		offset       int64
	}
	seen := map[fetched]bool{} // what ok offset-fetches returned
	for i := range res.History {
		if op := &res.History[i]; op.Kind == linearizability.KindOffsetFetch && op.Outcome == linearizability.OutcomeOK {
			seen[fetched{op.Group, op.Topic, op.Partition, op.Offset}] = true
		}
	}
	for i := range res.History {
		op := &res.History[i]
		switch op.Kind {
		case linearizability.KindProduce:
			acked = acked || op.Outcome == linearizability.OutcomeOK
		case linearizability.KindFetch:
			read = read || len(op.Records) > 0
		case linearizability.KindCommit:
			commits = true
			// One of unknown outcome that an offset-fetch shows was
			// accepted all the same.
			committed = committed || op.Outcome == linearizability.OutcomeOK ||
				op.Outcome != linearizability.OutcomeFail && seen[fetched{op.Group, op.Topic, op.Partition, op.Offset}]
		}
	}
	var missing []error
	// acks=0 acknowledges nothing: a read of what was sent is the test.
	if w.Producers > 0 && !acked && w.Acks != settings.AcksNone {
		missing = append(missing, fmt.Errorf("no write of its %d producers was acknowledged", w.Producers))
	}
	if w.Producers > 0 && !read {
		missing = append(missing, errors.New("no read returned a record"))
	}
	if w.Group != "" && w.CommitMode != run.CommitNone && w.GroupConsumers > 0 && !committed {
		if commits {
			missing = append(missing, fmt.Errorf("group %s had no commit accepted", w.Group))
		} else {
			missing = append(missing, fmt.Errorf("group %s sent no commit", w.Group))
		}
	}
	return errors.Join(missing...)
}
