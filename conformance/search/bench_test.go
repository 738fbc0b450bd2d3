package search

import (
	"testing"
	"time"

	"github.com/watermarkhq/watermark/conformance/variant"
	"github.com/watermarkhq/watermark/failpoints"
)

// BenchmarkSearch measures how long random search takes to find a
// violation of the strong guarantees on each unsafe variant, with no
// handwritten schedule: each iteration starts from a different seed (1000
// seeds apart) and searches until it finds one. It reports the schedules
// tried per find ("tries") and the wall time per find ("ms/find").
// searchBudget bounds each search: a variant not found within it is
// reported (finds/search < 1), not failed.
const searchBudget = 300

func BenchmarkSearch(b *testing.B) {
	failpoints.Require(b)
	for _, v := range variant.All {
		if v.Sound || v.Apply == nil {
			continue
		}
		b.Run(v.Name, func(b *testing.B) {
			tries, finds := 0, 0
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				found, n, err := Search(v, Options{FirstSeed: uint64(i)*1000 + 1, Tries: searchBudget, CheckTimeout: 30 * time.Second})
				elapsed += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if found == nil {
					// Not a failure of the benchmark: a measurement. Some bugs
					// need schedules random search rarely draws.
					b.Logf("%s: nothing found in %d tries from seed %d", v.Name, n, uint64(i)*1000+1)
					continue
				}
				finds++
				tries += n
			}
			b.ReportMetric(float64(finds)/float64(b.N), "finds/search")
			if finds > 0 {
				b.ReportMetric(float64(tries)/float64(finds), "tries/find")
				b.ReportMetric(float64(elapsed.Milliseconds())/float64(finds), "ms/find")
			}
		})
	}
}
