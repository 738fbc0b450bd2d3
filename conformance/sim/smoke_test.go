package sim

import (
	"fmt"
	"testing"

	"github.com/watermarkhq/watermark/impl/partition"
)

func TestSmoke(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		cfg := DefaultConfig(seed)
		cfg.Broker.Truncation = partition.TruncateToHW
		cfg.Controller.KeepISROnRestart = true
		cfg.Nemesis = Nemesis{Kinds: []FaultKind{FaultCrash, FaultPowerLoss, FaultPause, FaultIsolate}, IntervalMs: 1500, FaultMs: 1500, PowerLossOnlyInSync: true}
		res, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for _, op := range res.History {
			if op.Outcome == "ok" && op.Kind == "produce" {
				ok++
			}
		}
		fmt.Printf("seed %d stats %+v ops %d acked %d\n", seed, res.Stats, len(res.History), ok)
		if res.Violation != nil {
			fmt.Println(res.Violation)
			for _, l := range res.Violation.Trace {
				fmt.Println(l)
			}
			t.FailNow()
		}
	}
}
