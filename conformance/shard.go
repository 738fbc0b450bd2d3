package conformance

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one of N deterministic slices of a check, for spreading a check
// over CI runners with the CI system's own matrix: shard I of N (from 1)
// runs the (case, seed) pairs whose place in the check's order (cases in
// list order, each with every seed) is I-1 modulo N. The N shards together
// run exactly the pairs of the whole check, each once. The zero Shard is
// the whole check.
type Shard struct{ I, N int }

// ParseShard reads "I/N", 1 <= I <= N.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	a, err1 := strconv.Atoi(i)
	b, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || b < 1 || a < 1 || a > b {
		return Shard{}, fmt.Errorf("--shard %q: want I/N with 1 <= I <= N, e.g. 2/4 for the second of four shards", s)
	}
	return Shard{I: a, N: b}, nil
}

func (s Shard) String() string {
	if s.N <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Whole reports whether s is the whole check.
func (s Shard) Whole() bool { return s.N <= 1 }

// Has reports whether the pair at place k of the check's order is s's.
func (s Shard) Has(k int) bool { return s.N <= 1 || k%s.N == s.I-1 }

// Budget splits a budget of total runs (a random search's): s runs count
// of them, the ones from offset on. The shares differ by at most one and
// add up to total.
func (s Shard) Budget(total int) (offset, count int) {
	if s.N <= 1 {
		return 0, total
	}
	per, extra := total/s.N, total%s.N
	for i := 1; i < s.I; i++ {
		offset += per
		if i <= extra {
			offset++
		}
	}
	count = per
	if s.I <= extra {
		count++
	}
	return offset, count
}
