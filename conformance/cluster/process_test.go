package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTailOfShowsTheLastLines(t *testing.T) {
	require.Equal(t, "  c\n  d", tailOf([]byte("a\nb\nc\nd\n"), 2))
	require.Equal(t, "  only", tailOf([]byte("only"), 5))
}
