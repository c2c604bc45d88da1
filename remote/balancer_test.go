package remote

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// balancerConfig is HAProxy in front of one server, as docs/scaling.md
// puts it (docs/scaling.md's haproxy.cfg sticks each connection to a
// replica; with one replica there is nothing to stick). timeout is its
// client and server timeouts, which end a stream idle that long.
const balancerConfig = `
global
    maxconn 256
defaults
    mode http
    option http-no-delay
    timeout connect 2s
    timeout client "${ACP_TIMEOUT}"
    timeout server "${ACP_TIMEOUT}"
    timeout http-keep-alive 1s
frontend acp
    bind "${ACP_FRONTEND}"
    default_backend agent
backend agent
    server agent "${ACP_AGENT}"
`

// startBalancer runs HAProxy in front of the server at addr and returns
// the URL of its endpoint. It listens on a socket this process opened and
// hands down (bind fd@3), ready before HAProxy has started.
func startBalancer(t *testing.T, addr, timeout string) string {
	t.Helper()
	bin := interoptest.RequireHAProxy(t)
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(cfg, []byte(balancerConfig), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f, err := l.(*net.TCPListener).File()
	require.NoError(t, err)
	url := "http://" + l.Addr().String() + DefaultPath
	require.NoError(t, l.Close()) // f holds the socket open
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Env = append(os.Environ(), "ACP_FRONTEND=fd@3", "ACP_AGENT="+addr, "ACP_TIMEOUT="+timeout)
	log := &interoptest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	require.NoError(t, f.Close())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("HAProxy's log:\n%s", log.String())
		}
	})
	return url
}

// The order across streams holds through a balancer: it passes the
// Acp-Single-Stream header on, both ways, as any proxy passes a header it
// does not know.
func TestOrderThroughABalancer(t *testing.T) {
	for _, c := range orderCases {
		t.Run(c.name, func(t *testing.T) {
			as := startAgent(t, orderedAgent(), nil, nil)
			url := startBalancer(t, as.addr, "10s")
			counts := &handledCounts{}
			client, tr := connectClientAt(t, url, counts, nil)
			require.True(t, tr.(*httpClient).single, "the balancer passed the header on")
			c.rounds(t, client, counts)
		})
	}
}

// gets is a RoundTripper that tells of every GET it makes.
type gets struct {
	rt   http.RoundTripper
	made chan struct{}
}

func (g gets) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		g.made <- struct{}{}
	}
	return g.rt.RoundTrip(r)
}

// A balancer whose idle timeout is shorter than the SSE keep-alive cuts the
// connection's stream whenever it is idle; the client opens it again,
// resuming it, however often (streams that lived that long are no server
// ending them at once), and every turn after a cut is whole, its
// notification before its answer.
func TestStreamCutByABalancerBetweenTurns(t *testing.T) {
	quick := quickEnd
	quickEnd = 100 * time.Millisecond // below the balancer's timeout, so that the test takes little time
	t.Cleanup(func() { quickEnd = quick })
	as := startAgent(t, orderedAgent(), nil, &Options{KeepAlive: -1})
	url := startBalancer(t, as.addr, "300ms")
	counts := &handledCounts{}
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	g := gets{base, make(chan struct{}, 64)}
	client, _ := connectClientAt(t, url, counts, &DialOptions{HTTPClient: &http.Client{Transport: g}})
	ctx := wiretest.Context(t)
	wiretest.Recv(t, ctx, g.made) // the connection's stream, opened
	for i := range 3 {
		for range maxEmptyReopens + 1 {
			wiretest.Recv(t, ctx, g.made) // cut while idle, and opened again
		}
		require.NoError(t, client.Call(ctx, "session/prompt", map[string]any{"sessionId": "s", "prompt": []any{}}, nil))
		require.Equal(t, i+1, counts.of("_test/note", ""), "prompt %d after the cuts", i)
	}
}
