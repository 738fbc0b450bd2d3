package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A stranger that opens the internal protocol on a broker's port (the
// magic, then a hello from an invented node and a frame declaring a 1 GiB
// batch) is closed at the handshake: nothing it sent is decoded.
func TestStrangerAtTheInternalHelloIsClosed(t *testing.T) {
	tc := startCluster(t, 1)
	c, err := net.Dial("tcp", tc.brokers[1].Addr())
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = io.WriteString(c, Magic)
	require.NoError(t, err)
	nonce := make([]byte, nonceLen)
	_, err = io.ReadFull(c, nonce)
	require.NoError(t, err, "the broker challenges the dialer")

	// No proof, and what an attacker would send instead: a made-up hello
	// and a length of 1 GiB.
	var junk bytes.Buffer
	junk.Write(make([]byte, nonceLen+macLen))
	_ = binary.Write(&junk, binary.BigEndian, uint32(1<<30))
	_, _ = c.Write(junk.Bytes())
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err, "the broker must close the connection")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the broker kept the connection open")
}

// Both sides prove the secret: a dialer with another cluster's secret is
// refused, one with the same is accepted.
func TestHandshakeNeedsTheSameSecret(t *testing.T) {
	run := func(dialSecret, acceptSecret []byte) (dialErr, acceptErr error) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		done := make(chan error, 1)
		go func() { done <- acceptHandshake(b, b, acceptSecret) }()
		dialErr = dialHandshake(a, a, dialSecret)
		if dialErr != nil {
			a.Close()
		}
		return dialErr, <-done
	}
	d, a := run([]byte("the-same-secret-16"), []byte("the-same-secret-16"))
	require.NoError(t, d)
	require.NoError(t, a)
	_, a = run([]byte("another-secret-of-16"), []byte("the-same-secret-16"))
	require.ErrorIs(t, a, errNotMember)
}
