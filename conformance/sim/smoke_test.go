package sim

import (
	"fmt"
	"testing"
)

func TestSmoke(t *testing.T) {
	cfg := DefaultConfig(1)
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
	fmt.Printf("stats %+v ops %d acked %d violation %v\n", res.Stats, len(res.History), ok, res.Violation)
	if res.Violation != nil {
		for _, l := range res.Violation.Trace {
			fmt.Println(l)
		}
	}
}
