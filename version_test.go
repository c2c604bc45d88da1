package acprpc_test

import (
	"context"
	"encoding/json"
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
		perm := make(chan context.Context, 1)
		h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			perm <- ctx
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
		c, p := wiretest.Connect(t, wiretest.Transports[0], h, pinned)
		done := make(chan error, 1)
		go func() { done <- c.Call(ctx, "initialize", map[string]int{"protocolVersion": 1}, nil) }()
		init := p.ExpectRequest(ctx, "initialize")
		p.Respond(string(init.ID), `{"protocolVersion":2}`)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, acprpc.ProtocolV1, c.ProtocolVersion())
		// v1's rule: CancelSession answers the session's permission request
		// at once.
		p.Request("1", "session/request_permission", `{"sessionId":"s"}`)
		wiretest.Recv(t, ctx, perm)
		require.NoError(t, c.CancelSession(ctx, "s"))
		p.ExpectNotification(ctx, "session/cancel")
		p.ExpectResult(ctx, "1", `{"outcome":{"outcome":"cancelled"}}`)
	})
	t.Run("agent", func(t *testing.T) {
		ctx := wiretest.Context(t)
		h := wiretest.Mux{
			"initialize": func(context.Context, *acprpc.Request) (any, error) {
				return json.RawMessage(`{"protocolVersion":2}`), nil
			},
			"session/prompt": wiretest.BlockUntilCancelled,
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
