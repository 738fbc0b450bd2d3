package cluster

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/watermarkhq/watermark/conformance/run"
)

// TestStartRetriesWhenAPortIsTaken: a port picked for a node is taken
// before the node binds it (another process was quicker); the cluster
// starts again on new ports instead of failing.
func TestStartRetriesWhenAPortIsTaken(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	calls := 0
	pickAddr = func() (string, error) {
		calls++
		if calls == 2 { // broker 1's listener, on the first attempt
			return busy.Addr().String(), nil
		}
		return freeAddr()
	}
	defer func() { pickAddr = freeAddr }()

	var logs []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Binary: binary, Brokers: 1, Dir: t.TempDir(), Settings: run.DefaultSettings(),
		Logf: func(f string, a ...any) { logs = append(logs, f) }})
	require.NoError(t, err)
	defer func() { _ = c.Stop() }()
	require.Contains(t, logs, "cluster: a port was taken before a node could bind it; starting again on new ports")
	require.NotEqual(t, busy.Addr().String(), c.ListenAddr(1))
}
