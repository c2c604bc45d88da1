package remote

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// The end of a peer's input over the remote transports: neither has a half
// close (a WebSocket close frame is answered at once and the socket closed,
// a DELETE ends both directions, a dropped socket carries nothing more), so
// every end of input is a peer gone, and the Conn closes without waiting
// InputEndGrace for handlers that write nothing. A stream cut in the
// middle of Streamable HTTP is no end at all: the peer resumes it.

// network is a client's way to the server that a test can take away: the
// sockets it dialled are closed under the client, with a reset or an
// orderly close, and, once it is down, no new one is dialled.
type network struct {
	mu     sync.Mutex
	conns  []*net.TCPConn
	down   bool
	dials  chan struct{} // a value per socket dialled
	posted chan struct{} // a value per POST answered
	rt     http.RoundTripper
}

func newNetwork(t *testing.T) *network {
	n := &network{dials: make(chan struct{}, 64), posted: make(chan struct{}, 64)}
	tr := &http.Transport{DialContext: n.dial}
	n.rt = tr
	t.Cleanup(func() {
		n.cut(true, true)
		tr.CloseIdleConnections()
	})
	return n
}

// options are DialOptions whose HTTP client goes through n.
func (n *network) options() *DialOptions {
	return &DialOptions{HTTPClient: &http.Client{Transport: n}}
}

func (n *network) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.rt.RoundTrip(r)
	if r.Method == http.MethodPost {
		n.posted <- struct{}{}
	}
	return resp, err
}

// drain forgets the sockets dialled and the POSTs answered so far.
func drain(ch chan struct{}) {
	for len(ch) > 0 {
		<-ch
	}
}

func (n *network) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errors.New("test network: down")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	n.conns = append(n.conns, c.(*net.TCPConn))
	n.dials <- struct{}{}
	return c, nil
}

// cut closes every socket dialled so far, with a TCP reset when reset is
// set, else an orderly close (FIN); down keeps the network down after.
func (n *network) cut(reset, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = n.down || down
	for _, c := range n.conns {
		if reset {
			_ = c.SetLinger(0)
		}
		_ = c.Close()
	}
	n.conns = nil
}

// waitingHandler serves initialize, and x/wait by waiting for its context
// (a dialog waiting for a user, a turn waiting for a tool): it writes
// nothing until its request is cancelled. Each x/wait says on entered that
// it runs, and on causes why its context ended.
func waitingHandler(entered chan<- struct{}, causes chan<- error) wiretest.Mux {
	return wiretest.Mux{
		"initialize": initialized,
		"x/wait": func(ctx context.Context, _ *acprpc.Request) (any, error) {
			entered <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		},
	}
}

// The server's side of a connection whose client goes (a close frame, a
// DELETE, the network dropped with a reset or an orderly TCP close) with a
// request in flight whose handler writes nothing: the peer can read
// nothing more, so the Conn closes at once, the handler's context ending
// with ErrConnClosed, instead of waiting InputEndGrace (an hour here) to
// answer a peer that cannot read it. It used to wait the hour.
func TestClientGoneEndsTheServersRequestsAtOnce(t *testing.T) {
	cases := []struct {
		name, kind string
		gone       func(tr acprpc.Transport, n *network)
	}{
		{"websocket close frame", "websocket", func(tr acprpc.Transport, _ *network) { _ = tr.Close() }},
		{"websocket TCP reset", "websocket", func(_ acprpc.Transport, n *network) { n.cut(true, true) }},
		{"websocket TCP close", "websocket", func(_ acprpc.Transport, n *network) { n.cut(false, true) }},
		{"http DELETE", "http", func(tr acprpc.Transport, _ *network) { _ = tr.Close() }},
		{"http TCP reset", "http", func(_ acprpc.Transport, n *network) { n.cut(true, true) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			entered, causes := make(chan struct{}, 1), make(chan error, 1)
			// IdleTimeout: how soon the server learns that a Streamable HTTP
			// client whose network dropped has no stream left.
			as := startAgent(t, waitingHandler(entered, causes), &acprpc.Options{InputEndGrace: time.Hour},
				&Options{IdleTimeout: 50 * time.Millisecond})
			n := newNetwork(t)
			tr := dial(t, as.url(c.kind), n.options())
			p := wiretest.PeerOf(t, tr)
			p.Request("0", "initialize", `{"protocolVersion":1}`)
			agent, _ := as.next(t)
			p.ExpectResult(ctx, "0", `{"protocolVersion":1}`)
			p.Request("1", "x/wait", `{"sessionId":"s"}`)
			wiretest.Recv(t, ctx, entered)

			goneAt := time.Now()
			c.gone(tr, n)
			assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrConnClosed)
			wiretest.Recv(t, ctx, agent.Done())
			t.Logf("the server's Conn closed %v after the client went", time.Since(goneAt).Round(time.Millisecond))
			assert.ErrorIs(t, agent.Err(), acprpc.ErrConnClosed)
		})
	}
}

// The client's side of a connection whose server goes (its Conn closed:
// a close frame, or over Streamable HTTP the stream ended and the
// connection unknown) while the client's handler runs for the server's
// request (a permission dialog): the client's Conn closes at once, the
// handler's context ending with ErrConnClosed, not InputEndGrace (an hour
// here) later. It used to wait the hour.
func TestServerGoneEndsTheClientsRequestsAtOnce(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := wiretest.Context(t)
			as := startAgent(t, wiretest.Mux{
				"initialize": initialized,
				"session/prompt": func(ctx context.Context, req *acprpc.Request) (any, error) {
					return nil, acprpc.ConnFromContext(ctx).Call(ctx, "session/request_permission", map[string]string{"sessionId": req.SessionID}, nil)
				},
			}, nil, nil)
			entered, causes := make(chan struct{}, 1), make(chan error, 1)
			dialog := waitingHandler(entered, causes)
			dialog["session/request_permission"] = dialog["x/wait"]
			client := acprpc.NewConn(context.Background(), dial(t, as.url(kind), nil), dialog, &acprpc.Options{InputEndGrace: time.Hour})
			t.Cleanup(func() { _ = client.Close() })
			require.NoError(t, client.Call(ctx, "initialize", map[string]int{"protocolVersion": 1}, nil))
			agent, _ := as.next(t)
			go func() {
				_ = client.Call(context.Background(), "session/prompt", map[string]any{"sessionId": "s", "prompt": []any{}}, nil)
			}()
			wiretest.Recv(t, ctx, entered)

			require.NoError(t, agent.Close())
			assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrConnClosed)
			wiretest.Recv(t, ctx, client.Done())
		})
	}
}

// A Streamable HTTP stream cut while a request is in flight (every socket
// of the client reset, the network still up) is not the end of the
// client's input: the client opens the stream again, resuming it, and the
// request's answer, made after the cut, reaches it once; the server's Conn
// stays open, the handler's context live.
func TestHTTPStreamCutIsNotTheEndOfInput(t *testing.T) {
	ctx := wiretest.Context(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	as := startAgent(t, wiretest.Mux{
		"initialize": initialized,
		"x/slow": func(ctx context.Context, _ *acprpc.Request) (any, error) {
			entered <- struct{}{}
			select {
			case <-release:
				return json.RawMessage(`{"done":true}`), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		},
	}, &acprpc.Options{InputEndGrace: time.Millisecond}, nil)
	n := newNetwork(t)
	client, _ := connectClientWith(t, as, "http", nil, n.options())
	agent, _ := as.next(t)
	drain(n.posted)
	answer := make(chan error, 1)
	var res json.RawMessage
	go func() { answer <- client.Call(ctx, "x/slow", nil, &res) }()
	wiretest.Recv(t, ctx, entered)
	wiretest.Recv(t, ctx, n.posted) // the request's POST is answered: only the stream is left to cut
	drain(n.dials)

	n.cut(true, false)
	wiretest.Recv(t, ctx, n.dials) // the stream, opened again
	close(release)
	require.NoError(t, wiretest.Recv(t, ctx, answer))
	assert.JSONEq(t, `{"done":true}`, string(res))
	select {
	case <-agent.Done():
		t.Fatalf("the server's Conn closed on a cut stream: %v", agent.Err())
	default:
	}
	as.ledger.CheckExactlyOnce(t, wiretest.BtoA)
}

// A connection its client ended with DELETE, holding a message that no GET
// took, keeps nothing for a GET after it, unlike one the server closed (see
// TestHTTPStreamOpenedJustAfterTheCloseGetsWhatWasQueued): the client has
// said it reads nothing more, so the message is dropped. It used to be
// kept for closeWait, and a GET got it.
func TestHTTPDeletedConnectionKeepsNothing(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	send(t, server, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"}}`)
	resp, _ := c.do(http.MethodDelete, "", HeaderConnectionID, id)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Zero(t, ts.Connections())
	resp, _ = c.do(http.MethodGet, "", HeaderConnectionID, id, HeaderSessionID, "s1", "Accept", "text/event-stream")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, err := recv(t, server)
	assert.ErrorIs(t, err, io.EOF)
}
