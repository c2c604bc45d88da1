package remotebench

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/remote"
)

// small is a Run short enough for a test, that still passes through every
// phase.
func small(url, transport string, pid int) Config {
	return Config{URL: url, Transport: transport, PID: pid,
		Warmup: 3, Duration: 100 * time.Millisecond, Cancels: 5, Conns: 10}
}

// checkRun runs small against url over both transports and checks that
// every figure was taken: every turn, every cancel and every cancelled
// answer the generator waited for came, or Run fails.
func checkRun(t *testing.T, url string, pid int) {
	for _, transport := range []string{WebSocket, HTTP} {
		t.Run(transport, func(t *testing.T) {
			res, err := Run(context.Background(), small(url, transport, pid))
			require.NoError(t, err)
			assert.Positive(t, res.TurnsPerSec1)
			assert.Positive(t, res.TurnsPerSecN)
			assert.Positive(t, res.CancelP50Us)
			assert.GreaterOrEqual(t, res.CancelP99Us, res.CancelP50Us)
			assert.Positive(t, res.CancelAllMs)
			assert.Positive(t, res.BaseRSSKiB)
		})
	}
}

func TestRunAgainstAcprpc(t *testing.T) {
	url, stop := serveLocal(t, NewServer())
	checkRun(t, url, os.Getpid())
	stop()
}

// serveLocal serves srv on a free loopback port and returns its endpoint
// and a stop that closes it and waits for Serve to return.
func serveLocal(t *testing.T, srv *remote.Server) (string, func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	return "http://" + l.Addr().String() + "/acp", func() {
		require.NoError(t, srv.Close())
		<-served
	}
}

// The TypeScript SDK's server of the same agent passes the same run, so
// the generator drives both alike.
func TestRunAgainstTypeScript(t *testing.T) {
	dir := filepath.Join("..", "ts")
	node := interoptest.RequireNodeModules(t, dir, map[string]string{"@agentclientprotocol/sdk": "2.4.0", "ws": "8.23.0"})
	srv, err := Start(dir, node, "remote-agent.mjs")
	require.NoError(t, err)
	checkRun(t, srv.URL, srv.PID())
	require.NoError(t, srv.Stop())
}

// A turn that does not end as the workload says fails the generator.
func TestTurnChecksTheAnswer(t *testing.T) {
	c := &Client{w: &scripted{msgs: []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`,
	}}, nextID: 1, session: "s"}
	require.ErrorContains(t, c.Turn(context.Background()), "after 1 updates")
}

type scripted struct{ msgs []string }

func (s *scripted) send(context.Context, []byte) error { return nil }
func (s *scripted) recv() ([]byte, error) {
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return []byte(m), nil
}
func (s *scripted) opened(context.Context, string) error { return nil }
func (s *scripted) close() error                         { return nil }
