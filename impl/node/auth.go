package node

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// The internal protocol shares the Kafka port, so anyone who can reach a
// broker can open it. Every node of a cluster holds one shared secret, and
// an internal connection opens with a challenge-response on it, right after
// Magic and before any frame: each side sends a fresh nonce and proves it
// holds the secret with an HMAC-SHA256 over both nonces and its role. The
// secret never crosses the wire, a recorded handshake is worth nothing on
// another connection (the other side's nonce differs), and a peer that
// fails is closed before a byte of it is decoded. Everything read before
// the proof has a fixed size.
const (
	nonceLen = 32
	macLen   = sha256.Size
	// MinSecretBytes is the shortest cluster secret a node accepts.
	MinSecretBytes = 16
)

// errNotMember: the peer does not hold this cluster's secret.
var errNotMember = errors.New("the peer does not hold this cluster's secret (every node needs the same one: watermark serve --cluster-secret-file)")

// NewSecret draws a cluster secret.
func NewSecret() []byte {
	s := make([]byte, 32)
	_, _ = rand.Read(s) // crypto/rand.Read does not fail
	return s
}

// ReadSecretFile reads a cluster secret from a file, refusing one too
// short to be a secret.
func ReadSecretFile(path string) ([]byte, error) {
	s, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	if len(s) < MinSecretBytes {
		return nil, fmt.Errorf("cluster secret %s: %d bytes, want at least %d (make one with: head -c 32 /dev/urandom > %s)", path, len(s), MinSecretBytes, path)
	}
	return s, nil
}

func checkSecret(s []byte) error {
	if len(s) < MinSecretBytes {
		return fmt.Errorf("cluster secret of %d bytes: want at least %d (node.NewSecret draws one)", len(s), MinSecretBytes)
	}
	return nil
}

func proof(secret []byte, role string, dialer, acceptor []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	m.Write(acceptor)
	m.Write(dialer)
	return m.Sum(nil)
}

// acceptHandshake is the accepting side, on c past Magic (r reads c).
func acceptHandshake(c net.Conn, r io.Reader, secret []byte) error {
	_ = c.SetDeadline(time.Now().Add(dialTimeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	mine := make([]byte, nonceLen)
	_, _ = rand.Read(mine)
	if _, err := c.Write(mine); err != nil {
		return err
	}
	in := make([]byte, nonceLen+macLen)
	if _, err := io.ReadFull(r, in); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	theirs, got := in[:nonceLen], in[nonceLen:]
	if !hmac.Equal(got, proof(secret, "dial", theirs, mine)) {
		return errNotMember
	}
	_, err := c.Write(proof(secret, "accept", theirs, mine))
	return err
}

// dialHandshake is the dialing side, once Magic is on the wire (r reads c).
func dialHandshake(c net.Conn, r io.Reader, secret []byte) error {
	_ = c.SetDeadline(time.Now().Add(dialTimeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	theirs := make([]byte, nonceLen)
	if _, err := io.ReadFull(r, theirs); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	mine := make([]byte, nonceLen)
	_, _ = rand.Read(mine)
	if _, err := c.Write(append(mine, proof(secret, "dial", mine, theirs)...)); err != nil {
		return err
	}
	got := make([]byte, macLen)
	if _, err := io.ReadFull(r, got); err != nil {
		return fmt.Errorf("handshake: %w (does the peer hold another cluster's secret?)", err)
	}
	if !hmac.Equal(got, proof(secret, "accept", mine, theirs)) {
		return errNotMember
	}
	return nil
}
