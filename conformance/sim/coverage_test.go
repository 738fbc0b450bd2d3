package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/watermarkhq/watermark/impl/storage"
)

// A follower's epoch is unknown to its leader when the leader's cache
// skips it, or starts after it; an epoch the leader holds, or one newer
// than all it holds, is not.
func TestUnknownEpoch(t *testing.T) {
	var c storage.EpochCache
	assert.False(t, unknownEpoch(c, 0), "an empty cache")
	c.Assign(1, 0)
	c.Assign(3, 10)
	assert.True(t, unknownEpoch(c, 0), "older than every entry")
	assert.True(t, unknownEpoch(c, 2), "skipped")
	assert.False(t, unknownEpoch(c, 1))
	assert.False(t, unknownEpoch(c, 3))
	assert.False(t, unknownEpoch(c, 4), "newer than every entry: the leader is behind, not missing it")
}
