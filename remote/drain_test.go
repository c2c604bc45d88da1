package remote

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// windingDown is a prompt handler that, once cancelled, takes until
// release to end, as a turn that waits for the client to confirm what it
// cancelled does: it holds Shutdown's drain open for the test. Each
// arrival and each cancellation's cause is reported.
func windingDown(arrived chan<- struct{}, causes chan<- error, release <-chan struct{}) acprpc.HandlerFunc {
	return func(ctx context.Context, _ *acprpc.Request) (any, error) {
		arrived <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		<-release
		return nil, context.Cause(ctx)
	}
}

// shutdownAsync runs srv.Shutdown and returns where its error arrives.
func shutdownAsync(ctx context.Context, srv *Server) <-chan error {
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	return done
}

// A Shutdown drains: while a turn in flight winds down, a new WebSocket
// upgrade and a new initialize POST, even one on a keep-alive connection
// that served a request before the drain, are refused with 503 and told to
// come back; the turn is answered as cancelled over its own connection,
// which goes on serving; then the Server closes.
func TestShutdownRefusesNewConnectionsWhileItDrains(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			arrived, causes, release := make(chan struct{}, 1), make(chan error, 1), make(chan struct{})
			as := startAgent(t, wiretest.Mux{"initialize": initialized, "session/prompt": windingDown(arrived, causes, release)}, nil, nil)
			ctx := wiretest.Context(t)

			var dials atomic.Int32
			raw := newRawHTTP(t, as.url("http"))
			raw.client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}
			resp, _ := raw.do(http.MethodGet, "") // 406, and the connection kept alive
			require.Equal(t, http.StatusNotAcceptable, resp.StatusCode)

			p, _, _ := connectPeer(t, as, kind)
			p.Request("1", "session/prompt", `{"sessionId":"s1","prompt":[]}`)
			<-arrived
			shutdown := shutdownAsync(ctx, as.Server)
			require.ErrorIs(t, <-causes, acprpc.ErrShutdown, "the turn is cancelled by the shutdown")

			_, err := Dial(ctx, as.url("websocket"), nil)
			require.ErrorContains(t, err, "503")
			resp, body := raw.do(http.MethodPost, initRequest)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Contains(t, body, "shutting down")
			assert.Equal(t, "1", resp.Header.Get("Retry-After"))
			assert.True(t, resp.Close, "the refusal closes the keep-alive connection")
			assert.Equal(t, int32(1), dials.Load(), "the refused initialize came on the connection kept alive")
			as.noneAccepted(t)
			select {
			case err := <-shutdown:
				t.Fatalf("Shutdown returned %v with a turn in flight", err)
			default:
			}

			close(release)
			p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
			require.NoError(t, <-shutdown)
			assert.Zero(t, as.Connections())
			expectEnd(ctx, t, p)
		})
	}
}

// noneAccepted checks that no connection reached the AcceptFunc.
func (as *agentServer) noneAccepted(t *testing.T) {
	t.Helper()
	select {
	case c := <-as.conns:
		_ = c.Close()
		t.Fatal("a connection was accepted during the drain")
	default:
	}
}

// Many turns in flight on both transports when Shutdown comes: every one
// is answered as cancelled, exactly once, and Shutdown returns once they
// are, with every connection closed.
func TestShutdownAnswersEveryTurnInFlight(t *testing.T) {
	const perKind = 25
	arrived := make(chan struct{}, 2*perKind)
	srv := NewServer(Handle(wiretest.Mux{"initialize": initialized, "session/prompt": func(ctx context.Context, _ *acprpc.Request) (any, error) {
		arrived <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}}, nil), nil)
	url := serveOnLoopback(t, srv)
	ctx := wiretest.Context(t)

	var peers []*wiretest.Peer
	for i := range 2 * perKind {
		p := wiretest.PeerOf(t, dial(t, schemeOf(kinds[i%2])+url, nil))
		p.Request("0", "initialize", `{"protocolVersion":1}`)
		p.ExpectResult(ctx, "0", `{"protocolVersion":1}`)
		p.Request("1", "session/prompt", `{"sessionId":"s`+strconv.Itoa(i)+`","prompt":[]}`)
		peers = append(peers, p)
	}
	for range peers {
		<-arrived
	}
	require.NoError(t, srv.Shutdown(ctx))
	for _, p := range peers {
		p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
		expectEnd(ctx, t, p)
	}
	assert.Zero(t, srv.Connections())
}

// expectEnd checks that the connection ends with nothing more to read.
// A Streamable HTTP client learns of the end when it opens its stream
// again: a 404 from a Server that is still up is io.EOF, a refused dial
// from one that has closed is an error; either ends it.
func expectEnd(ctx context.Context, t *testing.T, p *wiretest.Peer) {
	t.Helper()
	m, err := p.Next(ctx)
	require.Error(t, err, "a message after the last answer: %v", m)
	require.NoError(t, ctx.Err(), "the connection did not end")
}

// serveOnLoopback serves srv on a free loopback port until the test ends
// and returns its URL without the scheme ("://127.0.0.1:port/acp").
func serveOnLoopback(t *testing.T, srv *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	})
	return "://" + l.Addr().String() + DefaultPath
}

// A turn that does not end when cancelled holds the drain only as long as
// Shutdown's context: then the Server closes, the client's connection
// ends, and Shutdown returns the context's error.
func TestShutdownEndsWithItsContext(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			arrived, release := make(chan struct{}, 1), make(chan struct{})
			t.Cleanup(func() { close(release) })
			stuck := func(context.Context, *acprpc.Request) (any, error) {
				arrived <- struct{}{}
				<-release // deaf to its cancellation
				return nil, nil
			}
			as := startAgent(t, wiretest.Mux{"initialize": initialized, "session/prompt": stuck}, nil, nil)
			p, _, _ := connectPeer(t, as, kind)
			p.Request("1", "session/prompt", `{"sessionId":"s1","prompt":[]}`)
			<-arrived

			ctx, cancel := context.WithTimeout(wiretest.Context(t), 100*time.Millisecond)
			defer cancel()
			err := as.Shutdown(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Zero(t, as.Connections())
			expectEnd(wiretest.Context(t), t, p) // the turn unanswered
		})
	}
}

// A connection whose AcceptFunc set no graceful end (no OnShutdown) is
// closed when the drain ends, as Close closes it.
func TestShutdownClosesConnectionsWithoutOnShutdown(t *testing.T) {
	ts := startServer(t, nil)
	client := dial(t, ts.url("ws"), nil)
	server := ts.next(t)
	deliver(t, client, server, initRequest)
	ended := make(chan error, 1)
	go func() {
		_, err := client.Recv() // reading, as a client does, so the close handshake is answered
		ended <- err
	}()
	require.NoError(t, ts.Shutdown(wiretest.Context(t)))
	require.ErrorIs(t, <-ended, io.EOF, "the connection ended with a normal close")
	assert.Zero(t, ts.Connections())
	assert.False(t, OnShutdown(acprpc.NewStreamPipes(nil, nil), nil), "not a connection of a Server")
}
