package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// The conversation tests run a Conn on each side of every remote transport:
// the same guarantees as over stdio, with A the client and B the agent.
var kinds = []string{"websocket", "http"}

func schemeOf(kind string) string {
	if kind == "websocket" {
		return "ws"
	}
	return "http"
}

// agentServer is a Server whose connections are each served by a Conn.
type agentServer struct {
	*Server
	addr       string
	conns      chan *acprpc.Conn
	transports chan acprpc.Transport
	ledger     *wiretest.Ledger // every message the agents' Conns received (AtoB) and sent (BtoA)
}

func startAgent(t *testing.T, h acprpc.Handler, connOpts *acprpc.Options, opts *Options) *agentServer {
	t.Helper()
	as := &agentServer{conns: make(chan *acprpc.Conn, 64), transports: make(chan acprpc.Transport, 64), ledger: &wiretest.Ledger{Keep: true}}
	var o acprpc.Options
	if connOpts != nil {
		o = *connOpts
	}
	o.Hooks = acprpc.Hooks{
		Received: func(_ context.Context, m *acprpc.Message) { as.ledger.Record(wiretest.AtoB, m.Raw) },
		Sent:     func(_ context.Context, m *acprpc.Message) { as.ledger.Record(wiretest.BtoA, m.Raw) },
	}
	var all []*acprpc.Conn
	var mu sync.Mutex
	as.Server = NewServer(func(tr acprpc.Transport, r *http.Request) {
		c := acprpc.NewConn(context.Background(), tr, h, &o)
		OnShutdown(tr, c.Shutdown)
		mu.Lock()
		all = append(all, c)
		mu.Unlock()
		as.transports <- tr
		as.conns <- c
	}, opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	as.addr = l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- as.Serve(l) }()
	t.Cleanup(func() {
		require.NoError(t, as.Close())
		require.ErrorIs(t, <-served, http.ErrServerClosed)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range all {
			require.NoError(t, c.Close())
		}
	})
	return as
}

func (as *agentServer) url(kind string) string { return schemeOf(kind) + "://" + as.addr + DefaultPath }

// next returns the Conn and transport of the next connection.
func (as *agentServer) next(t *testing.T) (*acprpc.Conn, acprpc.Transport) {
	t.Helper()
	select {
	case c := <-as.conns:
		return c, <-as.transports
	case <-wiretest.Context(t).Done():
		t.Fatal("no connection was accepted")
		return nil, nil
	}
}

// initialized answers initialize, which every connection starts with.
func initialized(context.Context, *acprpc.Request) (any, error) {
	return json.RawMessage(`{"protocolVersion":1}`), nil
}

// connectPeer connects a scripted raw peer and initializes the connection.
func connectPeer(t *testing.T, as *agentServer, kind string) (*wiretest.Peer, *acprpc.Conn, acprpc.Transport) {
	t.Helper()
	p := wiretest.PeerOf(t, dial(t, as.url(kind), nil))
	p.Request("0", "initialize", `{"protocolVersion":1}`)
	agent, tr := as.next(t)
	p.ExpectResult(wiretest.Context(t), "0", `{"protocolVersion":1}`)
	return p, agent, tr
}

// connectClient connects a client Conn serving h and initializes it.
func connectClient(t *testing.T, as *agentServer, kind string, h acprpc.Handler) (*acprpc.Conn, acprpc.Transport) {
	t.Helper()
	return connectClientWith(t, as, kind, h, nil)
}

// connectClientWith is connectClient with DialOptions.
func connectClientWith(t *testing.T, as *agentServer, kind string, h acprpc.Handler, opts *DialOptions) (*acprpc.Conn, acprpc.Transport) {
	t.Helper()
	return connectClientAt(t, as.url(kind), h, opts)
}

// connectClientAt is connectClientWith for the server at url (through a
// balancer, say).
func connectClientAt(t *testing.T, url string, h acprpc.Handler, opts *DialOptions) (*acprpc.Conn, acprpc.Transport) {
	t.Helper()
	tr := dial(t, url, opts)
	client := acprpc.NewConn(context.Background(), tr, h, nil)
	t.Cleanup(func() { _ = client.Close() })
	var res json.RawMessage
	require.NoError(t, client.Call(wiretest.Context(t), "initialize", map[string]int{"protocolVersion": 1}, &res))
	require.JSONEq(t, `{"protocolVersion":1}`, string(res))
	return client, tr
}

func TestRequestAndItsCancelBackToBack(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			causes := make(chan error, 100)
			blocked := func(ctx context.Context, _ *acprpc.Request) (any, error) {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}
			as := startAgent(t, wiretest.Mux{"initialize": initialized, "session/prompt": blocked, "tool/run": blocked}, nil, nil)
			p, _, _ := connectPeer(t, as, kind)
			ctx := wiretest.Context(t)
			for i := 1; i <= 20; i++ {
				id := strconv.Itoa(i)
				p.Request(id, "session/prompt", `{"sessionId":"s"}`)
				p.Cancel(id)
				p.ExpectResult(ctx, id, `{"stopReason":"cancelled"}`)
				assert.ErrorIs(t, <-causes, acprpc.ErrPeerCancelled)

				id = `"t` + id + `"`
				p.Request(id, "tool/run", "")
				p.Cancel(id)
				p.ExpectError(ctx, id, acprpc.CodeRequestCancelled)
				assert.ErrorIs(t, <-causes, acprpc.ErrPeerCancelled)
			}
			as.ledger.CheckExactlyOnce(t, wiretest.AtoB)
			assert.Equal(t, 40, as.ledger.Tally(wiretest.AtoB).Cancelled)
		})
	}
}

func TestSessionCancelCascadesThroughNestedRequests(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			prompt := func(ctx context.Context, req *acprpc.Request) (any, error) {
				conn := acprpc.ConnFromContext(ctx)
				errs := make(chan error, 2)
				for _, method := range []string{"session/request_permission", "terminal/create"} {
					go func() {
						var res json.RawMessage
						errs <- conn.Call(ctx, method, map[string]string{"sessionId": req.SessionID}, &res)
					}()
				}
				err := errors.Join(<-errs, <-errs)
				if ctx.Err() != nil {
					return nil, context.Cause(ctx)
				}
				return map[string]string{"stopReason": "end_turn"}, err
			}
			as := startAgent(t, wiretest.Mux{"initialize": initialized, "session/prompt": prompt}, nil, nil)

			arrived := make(chan string, 2)
			terminalCause := make(chan error, 1)
			client, _ := connectClient(t, as, kind, wiretest.Mux{
				"session/request_permission": func(ctx context.Context, req *acprpc.Request) (any, error) {
					arrived <- req.Method
					<-ctx.Done() // CancelSession answers it as cancelled
					return nil, context.Cause(ctx)
				},
				"terminal/create": func(ctx context.Context, req *acprpc.Request) (any, error) {
					arrived <- req.Method
					<-ctx.Done() // the agent's cascade cancels it
					terminalCause <- context.Cause(ctx)
					return nil, context.Cause(ctx)
				},
			})
			ctx := wiretest.Context(t)
			turn := make(chan error, 1)
			var result struct {
				StopReason string `json:"stopReason"`
			}
			go func() {
				turn <- client.Call(ctx, "session/prompt", map[string]any{"sessionId": "s1", "prompt": []any{}}, &result)
			}()
			assert.ElementsMatch(t, []string{"session/request_permission", "terminal/create"}, []string{<-arrived, <-arrived})
			require.NoError(t, acprpc.CancelSession(ctx, client, "s1"))
			require.NoError(t, <-turn)
			assert.Equal(t, "cancelled", result.StopReason)
			assert.ErrorIs(t, <-terminalCause, acprpc.ErrPeerCancelled, "the agent sent $/cancel_request for its nested request")

			require.NoError(t, as.ledger.AwaitAnswered(ctx))
			as.ledger.CheckExactlyOnce(t, wiretest.AtoB)
			as.ledger.CheckExactlyOnce(t, wiretest.BtoA)
			assert.Equal(t, 1, as.ledger.Notifications(wiretest.AtoB, "session/cancel"))
			assert.GreaterOrEqual(t, as.ledger.Notifications(wiretest.BtoA, "$/cancel_request"), 1)
		})
	}
}

func TestPeerThatVanishesMidTurn(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			type outcome struct{ cause, callErr error }
			outcomes := make(chan outcome, 1)
			prompt := func(ctx context.Context, req *acprpc.Request) (any, error) {
				var res json.RawMessage
				err := acprpc.ConnFromContext(ctx).Call(ctx, "session/request_permission", map[string]string{"sessionId": req.SessionID}, &res)
				<-ctx.Done()
				outcomes <- outcome{context.Cause(ctx), err}
				return nil, context.Cause(ctx)
			}
			as := startAgent(t, wiretest.Mux{"initialize": initialized, "session/prompt": prompt}, nil,
				&Options{IdleTimeout: 50 * 1e6})
			asked := make(chan struct{})
			client, tr := connectClient(t, as, kind, wiretest.Mux{
				"session/request_permission": func(ctx context.Context, _ *acprpc.Request) (any, error) {
					close(asked)
					<-ctx.Done()
					return nil, context.Cause(ctx)
				},
			})
			agent, _ := as.next(t)
			go func() {
				_ = client.Call(context.Background(), "session/prompt", map[string]string{"sessionId": "s"}, nil)
			}()
			<-asked

			vanish(t, tr) // no close frame, no DELETE: the network is gone
			o := <-outcomes
			assert.ErrorIs(t, o.cause, acprpc.ErrConnClosed, "the turn's context ends with the connection")
			assert.ErrorIs(t, o.callErr, acprpc.ErrConnClosed, "the pending call to the client fails")
			<-agent.Done()
			assert.ErrorIs(t, agent.Err(), acprpc.ErrConnClosed)
			<-client.Done()
		})
	}
}

// A Streamable HTTP client that is failing opens no stream again, also not
// for a message of a new session that its writer posts in the meantime (the
// cancelled answer to a request of the session, as the network goes): a
// stream started then would race the end's wait for every stream, which
// the race detector caught under load.
func TestHTTPClientOpensNoStreamOnceFailing(t *testing.T) {
	as := startAgent(t, wiretest.Mux{"initialize": initialized}, nil, nil)
	_, tr := connectClientWith(t, as, "http", nil, perSessionStreams(t))
	c := tr.(*httpClient)
	gone := errors.New("the network is gone")
	c.fail(gone)
	require.ErrorIs(t, c.open("s1"), gone)
	c.mu.Lock()
	_, opened := c.sessions["s1"]
	c.mu.Unlock()
	assert.False(t, opened, "a stream was opened after the transport began to fail")
}

// vanish makes a client transport disappear the way a dead network does:
// its socket or streams are cut without a word to the server.
func vanish(t *testing.T, tr acprpc.Transport) {
	t.Helper()
	switch c := tr.(type) {
	case *wsTransport:
		c.cut()
	case *httpClient:
		c.fail(errors.New("the network is gone"))
		c.cancel() // the streams drop; Close would send DELETE, so it is not called
		if c.own != nil {
			c.own.CloseIdleConnections()
		}
	default:
		t.Fatalf("vanish: %T", tr)
	}
}

func TestSlowReaderHoldsBoundedMemoryAndLosesNothing(t *testing.T) {
	const n, limit = 500, 16 << 10 // 130 KB of answers, eight times what the queues hold
	pad := strings.Repeat("x", 200)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			as := startAgent(t, wiretest.Mux{"initialize": initialized, "echo": wiretest.Echo},
				&acprpc.Options{MaxQueuedWrite: limit}, &Options{MaxQueuedBytes: limit})
			p, _, tr := connectPeer(t, as, kind)
			var all strings.Builder
			for i := 1; i <= n; i++ {
				all.WriteString(wiretest.RequestLine(strconv.Itoa(i), "echo", `{"i":`+strconv.Itoa(i)+`,"pad":"`+pad+`"}`) + "\n")
			}
			sent := p.SendAsync([]byte(all.String())) // the agent stops reading while its answers wait
			ctx := wiretest.Context(t)
			seen := make(map[string]bool, n)
			for range n {
				m := p.Expect(ctx)
				require.True(t, m.IsResponse(), m.Raw)
				require.False(t, seen[string(m.ID)], "answered twice: %s", m.ID)
				seen[string(m.ID)] = true
				if h, ok := tr.(*httpConn); ok {
					h.mu.Lock()
					queued := h.queued
					h.mu.Unlock()
					require.LessOrEqual(t, queued, limit+len(m.Raw), "the SSE queue stays within its limit")
				}
			}
			require.NoError(t, <-sent)
			assert.Len(t, seen, n, "every request answered")
			as.ledger.CheckExactlyOnce(t, wiretest.AtoB)
		})
	}
}
