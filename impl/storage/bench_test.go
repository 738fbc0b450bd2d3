package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/impl/record"
)

// benchBatch is a typical small produce batch: 10 records of 100 bytes.
func benchBatch(base int64) record.Batch {
	b := record.Batch{BaseOffset: base, LeaderEpoch: 1, ProducerID: 7, BaseSequence: int32(base)}
	for i := range 10 {
		b.Records = append(b.Records, record.Record{
			Key:       []byte{byte(i)},
			Value:     make([]byte, 100),
			Timestamp: 1_700_000_000_000,
			Headers:   []record.Header{{Key: "trace", Value: []byte("abc")}},
		})
	}
	return b
}

func BenchmarkAppend(b *testing.B) {
	l, _ := openLog(b, NewSimDisk(), "p")
	batch := benchBatch(0)
	b.SetBytes(int64(batch.Size()))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// Bound the simulated file's memory on long runs.
		if i%4096 == 0 && l.LEO() > 0 {
			_, err := l.TruncateTo(0)
			require.NoError(b, err)
		}
		batch.BaseOffset = l.LEO()
		if err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	l, _ := openLog(b, NewSimDisk(), "p")
	for range 10_000 {
		require.NoError(b, l.Append(benchBatch(l.LEO())))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		if got, err := l.Read(rng.Int64N(l.LEO()), 64<<10); err != nil || len(got) == 0 {
			b.Fatal("empty read", err)
		}
	}
}

func BenchmarkOpenLog(b *testing.B) {
	d := NewSimDisk()
	l, _ := openLog(b, d, "p")
	for range 10_000 {
		require.NoError(b, l.Append(benchBatch(l.LEO())))
	}
	b.ReportAllocs()
	for b.Loop() {
		openLog(b, d, "p")
	}
}
