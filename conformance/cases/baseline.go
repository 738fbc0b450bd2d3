package cases

import (
	"fmt"

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
			if r.Stats.Produced == 0 {
				return fmt.Errorf("nothing was produced")
			}
			return requireConsumedToEnd(r)
		},
	},
	{
		Name:    "lost-answers",
		Summary: "the idempotent producer retries after one answer in ten is lost, with no broker fault: the broker deduplicates every retry",
		Spec: func(seed uint64) run.Spec {
			cfg := base(seed)
			cfg.Network.ResponseDropRate = 0.1
			return cfg
		},
		Require: func(r *run.Result) error {
			if r.Stats.Dropped == 0 {
				return fmt.Errorf("no answer was lost")
			}
			return nil
		},
	},
}
