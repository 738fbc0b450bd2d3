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
