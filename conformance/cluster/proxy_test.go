package cluster

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServer answers each connection with everything it sent, after the
// client half-closes, prefixed with "echo:". It stops with the test.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				data, err := io.ReadAll(conn)
				if err != nil {
					return
				}
				_, _ = conn.Write(append([]byte("echo:"), data...))
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends msg through addr, half-closes, and reads the answer to
// its end.
func roundTrip(addr, msg string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(msg)); err != nil {
		return "", err
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return "", err
	}
	data, err := io.ReadAll(conn)
	return string(data), err
}

func newTestProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := NewProxy("127.0.0.1:0", target)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// The answer only comes after the server saw the client's EOF, so a
// full answer shows the proxy passed the half-close on and kept the other
// direction open.
func TestProxyForwardsBothWaysAcrossHalfClose(t *testing.T) {
	p := newTestProxy(t, echoServer(t))
	got, err := roundTrip(p.Addr(), "hello")
	require.NoError(t, err)
	require.Equal(t, "echo:hello", got)
}

func TestProxyCutClosesOpenConnectionsAndRefusesNewOnesUntilHealed(t *testing.T) {
	p := newTestProxy(t, echoServer(t))

	open, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer open.Close()
	_, err = open.Write([]byte("started"))
	require.NoError(t, err)
	// Wait until the proxy holds the connection, so the cut has one to close.
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.conns) == 1
	}, 10*time.Second, 5*time.Millisecond)

	p.SetCut(true)
	require.True(t, p.Cut())
	_ = open.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := open.Read(make([]byte, 64))
	require.Error(t, err, "an open connection must end when the link is cut")
	require.Zero(t, n)

	got, err := roundTrip(p.Addr(), "during the cut")
	require.NotEqual(t, "echo:during the cut", got, "no data may cross a cut link")
	if err == nil {
		require.Empty(t, got)
	}

	p.SetCut(false)
	got, err = roundTrip(p.Addr(), "healed")
	require.NoError(t, err)
	require.Equal(t, "echo:healed", got)
}

func TestProxyLatencyDelaysEachDirection(t *testing.T) {
	p := newTestProxy(t, echoServer(t))
	const d = 150 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	got, err := roundTrip(p.Addr(), "slow")
	require.NoError(t, err)
	require.Equal(t, "echo:slow", got)
	require.GreaterOrEqual(t, time.Since(start), 2*d, "one delayed chunk each way")

	p.SetLatency(0)
	got, err = roundTrip(p.Addr(), "fast")
	require.NoError(t, err)
	require.Equal(t, "echo:fast", got)
}

func TestProxyToDeadTargetClosesTheClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	p := newTestProxy(t, dead)
	got, err := roundTrip(p.Addr(), "anyone?")
	require.Empty(t, got)
	_ = err // a reset or an EOF: either way the client learns the link is down
}

func TestProxyCloseEndsConnectionsAndGoroutines(t *testing.T) {
	target := echoServer(t)
	before := runtime.NumGoroutine()
	p, err := NewProxy("127.0.0.1:0", target)
	require.NoError(t, err)
	p.SetLatency(time.Hour) // a copy blocked in its delay must still end
	open, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer open.Close()
	_, err = open.Write([]byte("stuck"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.conns) == 1
	}, 10*time.Second, 5*time.Millisecond)

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a connection open")
	}
	require.NoError(t, p.Close(), "a second Close is harmless")
	_ = open.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = open.Read(make([]byte, 8))
	require.Error(t, err)
	// The echo server's goroutine for the connection ends once the proxy
	// closed its side; then the count is back where it started.
	if !assertEventually(func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines left after Close (%d before):\n%s", before, buf[:runtime.Stack(buf, true)])
	}
}

func assertEventually(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}
