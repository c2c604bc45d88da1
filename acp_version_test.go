package acprpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// A version set by Options.PinnedVersion stays: the initialize exchange
// the Conn carries does not switch its rules, whichever side answers it.
func TestPinnedVersionStays(t *testing.T) {
	pinned := &acprpc.Options{PinnedVersion: acprpc.ProtocolV1}
	t.Run("client", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p, perm := holdingClient(t, pinned)
		done := goCall(c, ctx, "initialize", map[string]int{"protocolVersion": 1}, nil)
		init := p.ExpectRequest(ctx, "initialize")
		p.Respond(string(init.ID), `{"protocolVersion":2}`)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, acprpc.ProtocolV1, c.ProtocolVersion())
		// v1's rule: CancelSession answers the session's permission request
		// at once.
		p.Request("1", "session/request_permission", `{"sessionId":"s"}`)
		wiretest.Recv(t, ctx, perm)
		require.NoError(t, acprpc.CancelSession(ctx, c, "s"))
		p.ExpectNotification(ctx, "session/cancel")
		p.ExpectResult(ctx, "1", `{"outcome":{"outcome":"cancelled"}}`)
	})
	t.Run("agent", func(t *testing.T) {
		ctx := wiretest.Context(t)
		h := wiretest.Mux{
			"initialize": func(context.Context, *acprpc.Request) (any, error) {
				return json.RawMessage(`{"protocolVersion":2}`), nil
			},
			"session/prompt": wiretest.Hold(nil),
		}
		c, p := wiretest.Connect(t, wiretest.Transports[0], h, pinned)
		p.Request("0", "initialize", `{"protocolVersion":2}`)
		p.ExpectResult(ctx, "0", `{"protocolVersion":2}`)
		assert.Equal(t, acprpc.ProtocolV1, c.ProtocolVersion())
		p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		p.Notify("session/cancel", `{"sessionId":"s"}`)
		p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`) // v2 would answer -32800
	})
	t.Run("negotiating agent", func(t *testing.T) {
		ctx := wiretest.Context(t)
		serve := func(v string) acprpc.HandlerFunc {
			return func(context.Context, *acprpc.Request) (any, error) {
				return json.RawMessage(`{"protocolVersion":` + v + `}`), nil
			}
		}
		c, p := wiretest.Connect(t, wiretest.Transports[0], acprpc.VersionRouter{V1: serve("1"), V2: serve("2")}, pinned)
		p.Request("0", "initialize", `{"protocolVersion":2}`)
		p.ExpectResult(ctx, "0", `{"protocolVersion":1}`) // negotiated among the pinned version alone
		assert.Equal(t, acprpc.ProtocolV1, c.ProtocolVersion())
	})
}

// SetProtocolVersion, unlike the option, is a version the application may
// set again, and an initialize exchange sets it as before.
func TestSetVersionIsNotPinned(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	c.SetProtocolVersion(acprpc.ProtocolV1)
	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, "initialize", map[string]int{"protocolVersion": 2}, nil) }()
	init := p.ExpectRequest(ctx, "initialize")
	p.Respond(string(init.ID), `{"protocolVersion":2}`)
	require.NoError(t, wiretest.Recv(t, ctx, done))
	assert.Equal(t, acprpc.ProtocolV2, c.ProtocolVersion())
}

// A VersionRouter agent negotiates initialize on the read goroutine: the
// highest version it has a handler for at or below the client's, served by
// that version's handler; no fit is -32022 with {requested, supported}, and
// no handler sees it.
func TestVersionRouterNegotiates(t *testing.T) {
	cases := []struct {
		requested string
		want      acprpc.ProtocolVersion
		handler   string
	}{
		{"1", acprpc.ProtocolV1, "v1"},
		{"2", acprpc.ProtocolV2, "v2"},
		{"7", acprpc.ProtocolV2, "v2"}, // a newer client gets the newest this side has
	}
	for _, tc := range cases {
		t.Run("requested "+tc.requested, func(t *testing.T) {
			ctx := wiretest.Context(t)
			seen := make(chan string, 4)
			serve := func(name string) acprpc.HandlerFunc {
				return func(ctx context.Context, req *acprpc.Request) (any, error) {
					seen <- name + " " + req.Method
					v := acprpc.ConnFromContext(ctx).ProtocolVersion()
					return map[string]any{"protocolVersion": v}, nil
				}
			}
			c, p := wiretest.Connect(t, wiretest.Transports[0],
				acprpc.VersionRouter{V1: serve("v1"), V2: serve("v2")}, nil)
			assert.Zero(t, c.ProtocolVersion(), "no version before initialize")
			p.Request("0", "initialize", `{"protocolVersion":`+tc.requested+`,"info":{"name":"t","version":"1"}}`)
			p.ExpectResult(ctx, "0", fmt.Sprintf(`{"protocolVersion":%d}`, tc.want))
			assert.Equal(t, tc.handler+" initialize", wiretest.Recv(t, ctx, seen), "the version is chosen before the handler runs")
			assert.Equal(t, tc.want, c.ProtocolVersion())
			p.Request("1", "session/new", `{}`)
			p.ExpectAnswer(ctx, "1")
			assert.Equal(t, tc.handler+" session/new", wiretest.Recv(t, ctx, seen))
			// A repeat may ask again for the same version, never switch.
			p.Request("2", "initialize", `{"protocolVersion":`+tc.requested+`}`)
			p.ExpectAnswer(ctx, "2")
			assert.Equal(t, tc.handler+" initialize", wiretest.Recv(t, ctx, seen))
			other := "1"
			if tc.want == acprpc.ProtocolV1 {
				other = "2"
			}
			p.Request("3", "initialize", `{"protocolVersion":`+other+`}`)
			m := p.ExpectError(ctx, "3", acprpc.CodeInvalidRequest)
			assert.Contains(t, m.Error.Message, "already speaks")
			assert.Equal(t, tc.want, c.ProtocolVersion())
		})
	}

	t.Run("no version fits", func(t *testing.T) {
		ctx := wiretest.Context(t)
		called := make(chan string, 1)
		h := acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
			called <- "handler"
			return nil, nil
		})
		c, p := wiretest.Connect(t, wiretest.Transports[0], acprpc.VersionRouter{V2: h}, nil)
		p.Request("0", "initialize", `{"protocolVersion":1}`)
		m := p.ExpectError(ctx, "0", acprpc.CodeUnsupportedProtocolVersion)
		assert.JSONEq(t, `{"requested":1,"supported":[2]}`, string(m.Error.Data))
		p.Request("1", "initialize", `{"protocolVersion":"2"}`)
		p.ExpectError(ctx, "1", acprpc.CodeInvalidParams)
		assert.Empty(t, called, "the handler never sees an initialize the layer answered")
		assert.Zero(t, c.ProtocolVersion())
		// The client may try again.
		p.Request("2", "initialize", `{"protocolVersion":2}`)
		p.ExpectAnswer(ctx, "2")
		assert.Equal(t, acprpc.ProtocolV2, c.ProtocolVersion())
	})
}

// Options.SupportedVersions negotiates for a plain handler too, and v1 alone
// keeps v1's fallback: every client gets v1, as it always did.
func TestProtocolVersionsOption(t *testing.T) {
	ctx := wiretest.Context(t)
	answer := acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
		return map[string]int{"protocolVersion": 1}, nil
	})
	for _, requested := range []string{"0", "1", "2"} {
		c, p := wiretest.Connect(t, wiretest.Transports[0], answer, &acprpc.Options{SupportedVersions: []acprpc.ProtocolVersion{acprpc.ProtocolV1}})
		p.Request("0", "initialize", `{"protocolVersion":`+requested+`}`)
		p.ExpectResult(ctx, "0", `{"protocolVersion":1}`)
		assert.Equal(t, acprpc.ProtocolV1, c.ProtocolVersion(), "requested %s", requested)
	}
	c, p := wiretest.Connect(t, wiretest.Transports[0], answer,
		&acprpc.Options{SupportedVersions: []acprpc.ProtocolVersion{acprpc.ProtocolV2, acprpc.ProtocolV1}})
	p.Request("0", "initialize", `{"protocolVersion":0}`)
	m := p.ExpectError(ctx, "0", acprpc.CodeUnsupportedProtocolVersion)
	assert.JSONEq(t, `{"requested":0,"supported":[1,2]}`, string(m.Error.Data))
	assert.Zero(t, c.ProtocolVersion())
}

// Without negotiation the Conn learns the version from the initialize it
// carries: an agent from its own answer, a client from the agent's, on the
// read goroutine before the next message is read.
func TestVersionLearntFromInitialize(t *testing.T) {
	t.Run("agent", func(t *testing.T) {
		ctx := wiretest.Context(t)
		h := acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
			return json.RawMessage(`{"protocolVersion":2,"info":{"name":"a","version":"1"}}`), nil
		})
		c, p := wiretest.Connect(t, wiretest.Transports[0], h, nil)
		p.Request("0", "initialize", `{"protocolVersion":2}`)
		p.ExpectAnswer(ctx, "0")
		assert.Equal(t, acprpc.ProtocolV2, c.ProtocolVersion())
	})
	t.Run("client", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p, perm := holdingClient(t, nil)
		done := goCall(c, ctx, "initialize", map[string]int{"protocolVersion": 2}, nil)
		init := p.ExpectRequest(ctx, "initialize")
		// The agent's answer and its first request in one write: the
		// request is read under v2's rules.
		p.SendRaw(`{"jsonrpc":"2.0","id":` + string(init.ID) + `,"result":{"protocolVersion":2}}` + "\n" +
			wiretest.RequestLine("1", "session/request_permission", `{"sessionId":"s"}`) + "\n")
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, acprpc.ProtocolV2, c.ProtocolVersion())
		permCtx := wiretest.Recv(t, ctx, perm)
		// v2: CancelSession leaves the permission request to the agent's
		// $/cancel_request.
		require.NoError(t, acprpc.CancelSession(ctx, c, "s"))
		p.ExpectNotification(ctx, "session/cancel")
		assert.NoError(t, permCtx.Err(), "v2: CancelSession does not answer the agent's requests itself")
		p.Cancel("1")
		p.ExpectResult(ctx, "1", `{"outcome":{"outcome":"cancelled"}}`)
	})
}

// SetProtocolVersion and Options.PinnedVersion set the rules directly.
func TestSetProtocolVersion(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"session/prompt": wiretest.Hold(nil)}, nil)
	assert.Zero(t, c.ProtocolVersion())
	p.Request("1", "session/prompt", `{"sessionId":"s"}`)
	p.Cancel("1")
	p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
	c.SetProtocolVersion(acprpc.ProtocolV2)
	assert.Equal(t, acprpc.ProtocolV2, c.ProtocolVersion())
	p.Request("2", "session/prompt", `{"sessionId":"s"}`)
	p.Cancel("2")
	p.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)
}

// The markers by version: a cancelled prompt is {"stopReason":"cancelled"}
// in v1 and -32800 in v2 (a prompt not yet inserted); a cancelled
// permission request has the cancelled outcome in both; explicit markers
// apply to both.
func TestMarkersByVersion(t *testing.T) {
	for _, tc := range []struct {
		version acprpc.ProtocolVersion
		markers map[string]json.RawMessage
		prompt  string // the prompt's answer: a result, or "" for -32800
	}{
		{acprpc.ProtocolV1, nil, `{"stopReason":"cancelled"}`},
		{acprpc.ProtocolV2, nil, ""},
		{acprpc.ProtocolV2, acprpc.ACPCancelMarkers(acprpc.ProtocolV1), `{"stopReason":"cancelled"}`},
	} {
		t.Run(fmt.Sprintf("v%d markers %v", tc.version, tc.markers != nil), func(t *testing.T) {
			wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
				ctx := wiretest.Context(t)
				h := wiretest.Mux{"session/prompt": wiretest.Hold(nil), "session/request_permission": wiretest.Hold(nil)}
				_, p := wiretest.Connect(t, tr, h, &acprpc.Options{PinnedVersion: tc.version, CancelMarkers: tc.markers})
				p.Request("1", "session/prompt", `{"sessionId":"s"}`)
				p.Request("2", "session/request_permission", `{"sessionId":"s"}`)
				p.Cancel("1")
				if tc.prompt == "" {
					p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
				} else {
					p.ExpectResult(ctx, "1", tc.prompt)
				}
				p.Cancel("2")
				p.ExpectResult(ctx, "2", `{"outcome":{"outcome":"cancelled"}}`)
			})
		})
	}
}

// A null request ID is -32600 with a null ID on both versions.
func TestNullIDByVersion(t *testing.T) {
	for _, v := range []acprpc.ProtocolVersion{acprpc.ProtocolV1, acprpc.ProtocolV2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			ctx := wiretest.Context(t)
			_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{PinnedVersion: v})
			p.Send(`{"jsonrpc":"2.0","id":null,"method":"ping"}`)
			m := p.ExpectError(ctx, "null", acprpc.CodeInvalidRequest)
			assert.Contains(t, m.Error.Message, "the id must be a string or an integer")
			expectQuiet(t, ctx, p, "1")
		})
	}
}

// ACP requires the client to initialize before it opens a session: a Call
// of a method that opens or lists sessions before this side has had an
// initialize answered is refused before it is sent, saying what to call;
// an initialize answered with an error does not count, one answered with a
// result does, and so does a version set outside the exchange.
func TestSessionMethodsBeforeInitializeAreRefused(t *testing.T) {
	refused := func(t *testing.T, ctx context.Context, c *acprpc.Conn, p *wiretest.Peer, method string) {
		t.Helper()
		err := c.Call(ctx, method, map[string]string{"cwd": "/"}, nil)
		require.Error(t, err)
		assert.Equal(t, "acprpc: "+method+": not sent: ACP requires initialize before "+method+
			", and this connection has had none: call initialize first (acpv1.ToAgent.Initialize.Call, or acpv2's), "+
			"and wait for its answer", err.Error())
		assertNotSent(t, ctx, c, p)
	}
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	for _, method := range []string{"session/new", "session/load", "session/resume", "session/fork", "session/list"} {
		refused(t, ctx, c, p, method)
	}
	failed := goCall(c, ctx, "initialize", map[string]int{"protocolVersion": 1}, nil)
	p.RespondError(string(p.ExpectRequest(ctx, "initialize").ID), acprpc.CodeInternalError, "not today")
	require.Error(t, wiretest.Recv(t, ctx, failed))
	refused(t, ctx, c, p, "session/new")

	initialized := goCall(c, ctx, "initialize", map[string]int{"protocolVersion": 1}, nil)
	p.Respond(string(p.ExpectRequest(ctx, "initialize").ID), `{"protocolVersion":1}`)
	require.NoError(t, wiretest.Recv(t, ctx, initialized))
	opened := goCall(c, ctx, "session/new", map[string]string{"cwd": "/"}, nil)
	p.Respond(string(p.ExpectRequest(ctx, "session/new").ID), `{"sessionId":"s"}`)
	require.NoError(t, wiretest.Recv(t, ctx, opened))

	t.Run("a version set outside", func(t *testing.T) {
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{PinnedVersion: acprpc.ProtocolV1})
		opened := goCall(c, ctx, "session/new", map[string]string{"cwd": "/"}, nil)
		p.Respond(string(p.ExpectRequest(ctx, "session/new").ID), `{"sessionId":"s"}`)
		require.NoError(t, wiretest.Recv(t, ctx, opened))
	})
}

// A session/prompt called before initialize is warned about, once per
// connection, and sent: its session may have been opened elsewhere. After
// initialize, nothing is logged.
func TestSessionPromptBeforeInitializeIsWarnedAbout(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{Logger: log.Logger()})
	prompt := func() {
		t.Helper()
		done := goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "s", "prompt": []any{}}, nil)
		p.Respond(string(p.ExpectRequest(ctx, "session/prompt").ID), `{"stopReason":"end_turn"}`)
		require.NoError(t, wiretest.Recv(t, ctx, done))
	}
	prompt()
	prompt()
	require.Len(t, log.Logged(), 1, "once per connection: %v", log.Logged())
	warning := log.Logged()[0]
	assert.Equal(t, slog.LevelWarn, warning.Level)
	assert.Equal(t, "acprpc: session/prompt is called before initialize, which ACP requires first: "+
		"an agent refuses it, or serves it without knowing the client's capabilities; "+
		"call initialize first (acpv1.ToAgent.Initialize.Call, or acpv2's), and wait for its answer. "+
		"It is sent, since its session may have been opened outside this connection; logged once per connection", warning.Message)
	assert.Equal(t, map[string]string{"method": "session/prompt"}, warning.Attrs)

	c, p = wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{Logger: log.Logger()})
	initialized := goCall(c, ctx, "initialize", map[string]int{"protocolVersion": 1}, nil)
	p.Respond(string(p.ExpectRequest(ctx, "initialize").ID), `{"protocolVersion":1}`)
	require.NoError(t, wiretest.Recv(t, ctx, initialized))
	prompt()
	assert.Len(t, log.Logged(), 1, "nothing logged once initialized")
}

// An agent is served the session/new of a client that skipped initialize,
// since ACP orders the client, and logs the client's mistake; after the
// client's initialize, it logs nothing.
func TestAgentWarnsOfSessionNewBeforeInitialize(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	h := wiretest.Mux{"initialize": wiretest.Echo, "session/new": wiretest.Echo}
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{Logger: log.Logger()})
	p.Request("1", "session/new", `{"cwd":"/"}`)
	p.ExpectResult(ctx, "1", `{"cwd":"/"}`)
	warning, ok := log.FindLogged(slog.LevelWarn, "before initialize")
	require.True(t, ok, "no warning: %v", log.Logged())
	assert.Equal(t, "acprpc: the client sent a session method before initialize, which ACP requires first", warning.Message)
	p.Request("2", "initialize", `{"protocolVersion":1}`)
	p.ExpectResult(ctx, "2", `{"protocolVersion":1}`)
	p.Request("3", "session/new", `{"cwd":"/"}`)
	p.ExpectResult(ctx, "3", `{"cwd":"/"}`)
	assert.Len(t, log.Logged(), 1, "one warning, for the session/new before initialize")
}

// holdingClient is a client's Conn whose handler hands each request's
// context to perm and answers only once it is cancelled, as the answer to a
// cancelled request.
func holdingClient(t *testing.T, opts *acprpc.Options) (*acprpc.Conn, *wiretest.Peer, chan context.Context) {
	perm := make(chan context.Context, 1)
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		perm <- ctx
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	c, p := wiretest.Connect(t, wiretest.Transports[0], h, opts)
	return c, p, perm
}
