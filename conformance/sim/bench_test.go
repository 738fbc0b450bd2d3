package sim

import (
	"testing"
	"time"
)

// BenchmarkSimulatedCluster runs a 3-broker cluster under random faults and
// reports simulated steps and produce operations per wall-clock second.
func BenchmarkSimulatedCluster(b *testing.B) {
	var steps, produced int
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res, err := Run(faulty(uint64(i + 1)))
		if err != nil {
			b.Fatal(err)
		}
		steps += res.Stats.Steps
		produced += res.Stats.Produced
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(steps)/secs, "steps/s")
	b.ReportMetric(float64(produced)/secs, "produces/s")
}

// BenchmarkIdempotence runs the same faulty cluster with the reference
// producer's idempotence on and off and reports acknowledged produces per
// wall second for each: the cost of sequencing and dedup. The ratio is
// on/off.
func BenchmarkIdempotence(b *testing.B) {
	for _, idem := range []bool{false, true} {
		name := "off"
		if idem {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			acks := 0
			start := time.Now()
			for i := 0; i < b.N; i++ {
				cfg := faulty(uint64(i + 1))
				cfg.Workload.Idempotent = idem
				res, err := Run(cfg)
				if err != nil {
					b.Fatal(err)
				}
				acks += acked(res.History)
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(acks)/secs, "acked/s")
			b.ReportMetric(float64(acks)/float64(b.N), "acked/run")
		})
	}
}
