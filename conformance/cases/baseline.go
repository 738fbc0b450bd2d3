package cases

import (
	"fmt"
	"strings"

	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

// The baseline cases need no broker fault, so they run on any target:
// a broker that cannot be crashed by the harness is still checked.
var baselineCases = []Case{
	{
		Name:    "no-faults",
		Summary: "no faults at all: every acknowledged write is read back once, in order, and reads see only committed records",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Workload.GroupConsumers = 2
			cfg.Workload.Group = caseGroup
			cfg.Workload.CommitMode = run.CommitAfterProcess
			cfg.Workload.ConsumerSessionTimeoutMs = 3000
			return cfg
		},
		// The second member's join moves partitions away from the first,
		// which may have processed records it had not yet committed.
		Allowed: []string{linearizability.AnomalyReprocessed},
		Require: func(r *run.Result) error {
			if err := requireAllAcknowledged(r); err != nil {
				return err
			}
			return requireConsumedToEnd(r)
		},
	},
	{
		Name:    "lost-answers",
		Summary: "the idempotent producer retries after one answer in ten is lost, with no broker fault: every retry is answered as the duplicate it is, and every send succeeds",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Network.ResponseDropRate = 0.1
			// Answers stop being lost with time left for every retry, and
			// a send may take many retries (Kafka's delivery.timeout.ms is
			// four request timeouts; here eight).
			cfg.Network.ResponseDropPart = 0.6
			cfg.Workload.DeliveryTimeoutMs = 8 * cfg.Workload.RequestTimeoutMs
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.Dropped == 0 {
				return fmt.Errorf("no answer was lost")
			}
			return requireAllAcknowledged(r)
		},
	},
}

// requireAllAcknowledged: with no broker fault, every send succeeds. A
// retry after a lost answer must be answered as the duplicate it is; a
// refusal (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID), a timeout
// or a producer session reset is a broken promise.
func requireAllAcknowledged(r *run.Result) error {
	ok, failed := 0, 0
	var first []string
	for _, op := range r.History {
		if op.Kind != linearizability.KindProduce {
			continue
		}
		if op.Outcome == linearizability.OutcomeOK {
			ok++
			continue
		}
		if failed++; failed <= 3 {
			first = append(first, fmt.Sprintf("op %d (%s, called at %d ms) ended %s: %s", op.ID, op.TP(), op.Call, op.Outcome, op.Error))
		}
	}
	if failed > 0 {
		return Broken(PromiseSendsSucceed, "with no broker fault, %d of %d sends did not succeed: %s", failed, ok+failed, strings.Join(first, "; "))
	}
	if ok == 0 {
		return fmt.Errorf("nothing was produced")
	}
	return nil
}
