package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every pair belongs to exactly one shard, and the shards' budgets add up
// to the whole, consecutive and each within one of the others.
func TestShardsCoverEachPairOnce(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for k := range 50 {
			owners := 0
			for i := 1; i <= n; i++ {
				if (Shard{I: i, N: n}).Has(k) {
					owners++
				}
			}
			require.Equal(t, 1, owners, "pair %d of %d shards", k, n)
		}
		for _, total := range []int{0, 1, 5, 23, 100} {
			next := 0
			for i := 1; i <= n; i++ {
				off, count := Shard{I: i, N: n}.Budget(total)
				require.Equal(t, next, off, "shard %d/%d of %d", i, n, total)
				require.InDelta(t, float64(total)/float64(n), float64(count), 1)
				next += count
			}
			require.Equal(t, total, next)
		}
	}
	_, err := ParseShard("0/3")
	require.Error(t, err)
	s, err := ParseShard("2/3")
	require.NoError(t, err)
	require.Equal(t, Shard{I: 2, N: 3}, s)
	require.True(t, Shard{}.Whole())
}
