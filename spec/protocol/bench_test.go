package protocol

import "testing"

// BenchmarkExplore runs each named variant's full exploration within its
// own bounds per iteration: how long the safe claim takes to check, and how
// long each unsafe variant takes to fall. Some take a minute or more, so run
// one iteration:
//
//	go test ./spec/protocol -run '^$' -bench Explore -benchtime 1x
func BenchmarkExplore(b *testing.B) {
	for _, v := range Variants {
		b.Run(v.Name, func(b *testing.B) {
			var res Result
			for b.Loop() {
				var err error
				res, err = Explore(Model{Variant: v.Variant}, v.Bounds, nil)
				if err != nil {
					b.Fatal(err)
				}
			}
			// A run that proves nothing would benchmark the wrong thing.
			switch {
			case v.Safe && !res.Complete:
				b.Fatalf("%s: incomplete after %d states (violation: %v)", v.Name, res.States, res.Violation)
			case !v.Safe && res.Violation == nil:
				b.Fatalf("%s: no violation within its bounds (%d states)", v.Name, res.States)
			}
			b.ReportMetric(float64(res.States), "states/op")
			b.ReportMetric(res.StatesPerSecond(), "states/s")
			b.ReportMetric(float64(res.Depth), "depth")
		})
	}
}
