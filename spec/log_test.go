package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func logOf(values ...string) Log {
	var l Log
	for _, v := range values {
		l = l.Append(v)
	}
	return l
}

// Checkers fork a log into candidates that differ in their last record; a
// fork must never change the log it came from.
func TestLogAppendIsPersistent(t *testing.T) {
	base := logOf("a", "b")
	left := base.Append("c")
	right := base.Append("d")

	assert.Equal(t, []string{"a", "b"}, base.Values())
	assert.Equal(t, []string{"a", "b", "c"}, left.Values())
	assert.Equal(t, []string{"a", "b", "d"}, right.Values())
	assert.Equal(t, int64(2), base.Len())
	assert.Equal(t, int64(3), left.Len())
}

func TestLogEqualAndHash(t *testing.T) {
	cases := []struct {
		name  string
		a, b  Log
		equal bool
	}{
		{"both empty", Log{}, logOf(), true},
		{"built apart", logOf("a", "b", "c"), logOf("a", "b", "c"), true},
		{"shared prefix", logOf("a", "b").Append("c"), logOf("a", "b").Append("c"), true},
		{"same values, other order", logOf("a", "b"), logOf("b", "a"), false},
		{"prefix", logOf("a"), logOf("a", "b"), false},
		{"last differs", logOf("a", "b", "c"), logOf("a", "b", "x"), false},
		{"first differs", logOf("x", "b", "c"), logOf("a", "b", "c"), false},
		{"empty value counts", logOf(""), Log{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.equal, c.a.Equal(c.b))
			assert.Equal(t, c.equal, c.b.Equal(c.a))
			if c.equal {
				assert.Equal(t, c.a.Hash(), c.b.Hash(), "equal logs must hash alike")
			}
		})
	}
	assert.NotEqual(t, logOf("a", "b").Hash(), logOf("b", "a").Hash(), "order must change the hash")
}

func TestLogAt(t *testing.T) {
	l := logOf("a", "b", "c")
	for off, want := range []string{"a", "b", "c"} {
		got, ok := l.At(int64(off))
		require.True(t, ok)
		assert.Equal(t, want, got)
	}
	for _, off := range []int64{-1, 3, 100} {
		_, ok := l.At(off)
		assert.False(t, ok, "offset %d", off)
	}
}

func TestLogDescribe(t *testing.T) {
	l := logOf("a", "b", "c", "d")
	assert.Equal(t, "len 0 []", Log{}.Describe(3))
	assert.Equal(t, "len 4 [… 2:c 3:d]", l.Describe(2))
	assert.Equal(t, "len 4 [0:a 1:b 2:c 3:d]", l.Describe(4))
	assert.Equal(t, "len 4 […]", l.Describe(0))
	assert.Equal(t, "len 4 [0:a 1:b 2:c 3:d]", l.String())
}
