package run

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/record"
)

// TornLike tells damage that recovery after a crash takes for a torn
// write (the last whole batch, at or above the checkpointed HW) from
// damage it finds (an intact batch after it, or below the HW), and a
// partial batch at the end (never committed) from both.
// Reference: spec/SEMANTICS.md, Durability, "Lost data".
func TestTornLike(t *testing.T) {
	var data []byte
	var spans [][2]int64
	for base := int64(0); base < 9; base += 3 { // batches at 0, 3 and 6
		b := record.Batch{BaseOffset: base, BaseSequence: record.NoSequence, ProducerID: -1,
			Records: []record.Record{{Value: []byte("aaaaaaaa")}, {Value: []byte("bbbbbbbb")}, {Value: []byte("cccccccc")}}}
		start := int64(len(data))
		data = record.Encode(data, &b)
		spans = append(spans, [2]int64{start, int64(len(data))})
	}
	mid := func(i int) int64 { return (spans[i][0] + spans[i][1]) / 2 }

	requireTorn(t, true, data, mid(2), 6, true, "last batch, at the HW")
	requireTorn(t, true, data, mid(2), 4, true, "last batch, above the HW")
	requireTorn(t, false, data, mid(2), 7, true, "last batch below the HW: the cut ends under it")
	requireTorn(t, false, data, mid(2), 6, false, "no checkpoint: any cut counts as loss")
	requireTorn(t, false, data, mid(1), 0, true, "an intact batch follows")
	requireTorn(t, false, data, mid(0), 0, true, "an intact batch follows")

	partial := append(append([]byte{}, data...), data[spans[0][0]:spans[0][0]+20]...)
	requireTorn(t, false, partial, int64(len(data))+10, 0, true, "a partial batch was never committed")
	requireTorn(t, true, partial, mid(2), 6, true, "a partial batch after the last whole one is not an intact batch")
	requireTorn(t, false, nil, 0, 0, true, "")
}

func requireTorn(t *testing.T, want bool, data []byte, at, hw int64, found bool, why string) {
	t.Helper()
	base, ok := TornLike(data, at, hw, found)
	require.Equal(t, want, ok, why)
	if ok {
		require.Equal(t, int64(6), base, "the struck batch's base offset")
	}
}
