// Package fakebroker is a scripted Kafka broker for tests of clients and
// of the conformance kit: it reads request frames and answers each with
// the body a script gives, under the request's correlation id, so that a
// test can play a broker that answers wrongly on purpose (an old layout,
// a cut answer, a closed connection).
package fakebroker

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// Script answers request number n (from 0) of connection conn (from 0),
// of API key and version, with an answer body; ok false closes the
// connection instead.
type Script func(conn, n int, key, version int16) (body []byte, ok bool)

// Start listens on loopback, serves every connection with script until
// the test ends, and returns the address.
func Start(tb testing.TB, script Script) string {
	return New(tb, script).Addr
}

// Broker is a running fake broker.
type Broker struct {
	Addr  string
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// New is Start, returning the broker, so that a script can Crash it.
func New(tb testing.TB, script Script) *Broker {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	b := &Broker{Addr: ln.Addr().String(), ln: ln}
	tb.Cleanup(b.Crash)
	go func() {
		for conn := 0; ; conn++ {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, nc)
			b.mu.Unlock()
			go serve(nc, conn, script)
		}
	}()
	return b
}

// Crash stops the broker as a process that died would: the listener and
// every connection close, and nothing answers at Addr again.
func (b *Broker) Crash() {
	b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, nc := range b.conns {
		nc.Close()
	}
	b.conns = nil
}

func serve(nc net.Conn, conn int, script Script) {
	defer nc.Close()
	for n := 0; ; n++ {
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return
		}
		l := binary.BigEndian.Uint32(size[:])
		if l < 8 || l > 1<<20 {
			return
		}
		frame := make([]byte, l)
		if _, err := io.ReadFull(nc, frame); err != nil {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
		body, ok := script(conn, n, key, version)
		if !ok {
			return
		}
		out := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
		out = append(out, frame[4:8]...) // the correlation id
		if _, err := nc.Write(append(out, body...)); err != nil {
			return
		}
	}
}
