package wireformat

import (
	"bytes"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"
)

// One broker decompresses at most DecompressSlots batches at once: with
// every slot taken, the next waits until one is given back.
func TestDecompressionIsBoundedPerBroker(t *testing.T) {
	d := &Decompressor{}
	var releases []func()
	for range DecompressSlots {
		releases = append(releases, d.acquire())
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte("a batch's records"))
	require.NoError(t, zw.Close())
	done := make(chan error, 1)
	go func() {
		_, err := d.Decompress(CodecGzip, b.Bytes())
		done <- err
	}()
	select {
	case <-done:
		t.Fatal("decompressed with every slot taken")
	case <-time.After(100 * time.Millisecond):
	}
	releases[0]()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after a slot was given back")
	}
	for _, r := range releases[1:] {
		r()
	}
}
