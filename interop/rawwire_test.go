package interop

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// causes records how each blocking handler's request ended, by ID.
type causes chan struct {
	id    string
	cause error
}

func (c causes) block(ctx context.Context, req *acprpc.Request) (any, error) {
	<-ctx.Done()
	cause := context.Cause(ctx)
	c <- struct {
		id    string
		cause error
	}{req.ID.String(), cause}
	return nil, cause
}

// collect waits for n recorded causes.
func (c causes) collect(t *testing.T, ctx context.Context, n int) map[string]error {
	t.Helper()
	out := map[string]error{}
	for len(out) < n {
		select {
		case r := <-c:
			out[r.id] = r.cause
		case <-ctx.Done():
			t.Fatalf("handlers ended: %v, want %d: %v", out, n, ctx.Err())
		}
	}
	return out
}

// A peer that numbers its requests with UUID strings, as the Rust SDK does,
// and cancels them with $/cancel_request naming those strings: each answer
// carries the request's ID byte for byte, a cancelled request is answered
// with its method's marker or -32800 exactly once, and the handlers see
// ErrPeerCancelled.
func TestRawPeerUUIDRequestIDs(t *testing.T) {
	const (
		prompt     = `"0b6f3c1e-7a52-4d8e-9f21-5c3a8e9d0f14"`
		permission = `"9d2e4a70-1b3c-4f5d-8e6a-7c9b0d1e2f3a"`
		slow       = `"f47ac10b-58cc-4372-a567-0e02b2c3d479"`
		echo       = `"3e0c5d2a-8b41-4c6f-a9d7-12ef34ab56cd"`
		escaped    = `"c0ffee00-1234-4abc-8def-0123456789ab"`
		ping       = `"6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"`
	)
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		rec := make(causes, 8)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{
			"session/prompt":             rec.block,
			"session/request_permission": rec.block,
			"x/slow":                     rec.block,
			"x/echo":                     wiretest.Echo,
			"ping":                       wiretest.Ping,
		}, nil)

		p.Request(prompt, "session/prompt", `{"sessionId":"sess-rust","prompt":[{"type":"text","text":"hi"}]}`)
		p.Request(permission, "session/request_permission", `{"sessionId":"sess-rust","toolCall":{"toolCallId":"call_1"},"options":[]}`)
		p.Request(slow, "x/slow", `{}`)
		p.Request(escaped, "x/slow", `{}`)
		p.Request(echo, "x/echo", `{"n":1}`)
		m := p.ExpectResult(ctx, echo, `{"n":1}`)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+echo+`,"result":{"n":1}}`, m.Raw)

		p.Cancel(prompt)
		m = p.ExpectResult(ctx, prompt, `{"stopReason":"cancelled"}`)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+prompt+`,"result":{"stopReason":"cancelled"}}`, m.Raw)

		p.Cancel(permission)
		m = p.ExpectResult(ctx, permission, `{"outcome":{"outcome":"cancelled"}}`)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+permission+`,"result":{"outcome":{"outcome":"cancelled"}}}`, m.Raw)

		p.Cancel(slow)
		m = p.ExpectError(ctx, slow, acprpc.CodeRequestCancelled)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+slow+`,"error":{"code":-32800,"message":"Request cancelled"}}`, m.Raw)

		// The same string spelled with an escape in the cancel still names
		// the request, and the answer carries the ID as the request spelled it.
		p.Cancel(`"\u00630ffee00-1234-4abc-8def-0123456789ab"`)
		m = p.ExpectError(ctx, escaped, acprpc.CodeRequestCancelled)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+escaped+`,"error":{"code":-32800,"message":"Request cancelled"}}`, m.Raw)

		// Cancels for answered and unknown UUIDs are ignored: nothing is sent
		// before the ping's answer.
		p.Cancel(prompt)
		p.Cancel(echo)
		p.Cancel(`"00000000-0000-4000-8000-000000000000"`)
		p.Request(ping, "ping", "")
		p.ExpectResult(ctx, ping, `"pong"`)

		got := rec.collect(t, ctx, 4)
		for _, id := range []string{prompt, permission, slow, escaped} {
			assert.ErrorIs(t, got[id], acprpc.ErrPeerCancelled, "cause of %s", id)
		}
		assert.Equal(t, uint64(7), c.Stats().CancelsReceived)
		assert.Zero(t, c.Stats().IncomingInFlight)
	})
}

// LSP's spelling, $/cancelRequest with {"id": ...}, cancels a request only
// when Options.AcceptLSPCancel is set; otherwise it is an ordinary
// notification and the request runs to completion.
func TestRawPeerLSPCancelRequest(t *testing.T) {
	t.Run("accepted", func(t *testing.T) {
		wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
			ctx := wiretest.Context(t)
			rec := make(causes, 8)
			notes := make(chan string, 8)
			c, p := wiretest.Connect(t, tr, wiretest.Mux{
				"x/slow":         rec.block,
				"session/prompt": rec.block,
				"ping":           wiretest.Ping,
				"$/cancelRequest": func(_ context.Context, req *acprpc.Request) (any, error) {
					notes <- string(req.Params)
					return nil, nil
				},
			}, &acprpc.Options{AcceptLSPCancel: true})

			p.Request(`"lsp-1"`, "x/slow", "")
			p.Request(`7`, "x/slow", "")
			p.Request(`"lsp-prompt"`, "session/prompt", `{"sessionId":"s"}`)
			p.Request(`8`, "x/slow", "")

			p.Notify("$/cancelRequest", `{"id":"lsp-1"}`)
			m := p.ExpectError(ctx, `"lsp-1"`, acprpc.CodeRequestCancelled)
			assert.Equal(t, `{"jsonrpc":"2.0","id":"lsp-1","error":{"code":-32800,"message":"Request cancelled"}}`, m.Raw)
			p.Notify("$/cancelRequest", `{"id":7}`)
			p.ExpectError(ctx, `7`, acprpc.CodeRequestCancelled)
			p.Notify("$/cancelRequest", `{"id":"lsp-prompt"}`)
			p.ExpectResult(ctx, `"lsp-prompt"`, `{"stopReason":"cancelled"}`)
			// ACP's own spelling still works alongside.
			p.Cancel(`8`)
			p.ExpectError(ctx, `8`, acprpc.CodeRequestCancelled)
			// LSP's member name under ACP's method is not a cancel.
			p.Notify(acprpc.MethodCancelRequest, `{"id":9}`)
			p.Request(`"sync"`, "ping", "")
			p.ExpectResult(ctx, `"sync"`, `"pong"`)

			got := rec.collect(t, ctx, 4)
			for _, id := range []string{`"lsp-1"`, `7`, `"lsp-prompt"`, `8`} {
				assert.ErrorIs(t, got[id], acprpc.ErrPeerCancelled, "cause of %s", id)
			}
			assert.Equal(t, uint64(4), c.Stats().CancelsReceived)
			select {
			case n := <-notes:
				t.Errorf("an accepted $/cancelRequest reached the handler: %s", n)
			default:
			}
		})
	})

	t.Run("ignored", func(t *testing.T) {
		wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
			ctx := wiretest.Context(t)
			release := make(chan struct{})
			started := make(chan struct{})
			cancelled := make(chan error, 1)
			c, p := wiretest.Connect(t, tr, wiretest.Mux{
				"x/hold": func(ctx context.Context, _ *acprpc.Request) (any, error) {
					close(started)
					select {
					case <-release:
						if ctx.Err() != nil {
							cancelled <- context.Cause(ctx)
						}
						return "completed", nil
					case <-ctx.Done():
						cancelled <- context.Cause(ctx)
						return nil, context.Cause(ctx)
					}
				},
				"ping": wiretest.Ping,
			}, &acprpc.Options{AcceptLSPCancel: false})

			p.Request(`"lsp-2"`, "x/hold", "")
			select {
			case <-started:
			case <-ctx.Done():
				t.Fatal("x/hold never started")
			}
			p.Notify("$/cancelRequest", `{"id":"lsp-2"}`)
			p.Request(`"sync"`, "ping", "") // answered only after the cancel line was read
			p.ExpectResult(ctx, `"sync"`, `"pong"`)
			select {
			case err := <-cancelled:
				t.Fatalf("$/cancelRequest cancelled the request (cause %v) with AcceptLSPCancel off", err)
			default:
			}
			close(release)
			m := p.ExpectResult(ctx, `"lsp-2"`, `"completed"`)
			assert.Equal(t, `{"jsonrpc":"2.0","id":"lsp-2","result":"completed"}`, m.Raw)
			assert.Empty(t, cancelled, "the handler's context ended before it returned")
			assert.Zero(t, c.Stats().CancelsReceived)
		})
	})
}

// Every line the Go Conn writes is JSON a peer of another language can parse,
// whatever bytes the method name holds: control characters, DEL and invalid
// UTF-8 are escaped as JSON escapes them, not as Go does.
func TestRawPeerReadsEveryMethodName(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, nil)
		for _, method := range []string{"x/\a\x7f", "x/é\u2028\"\\", "x/\xff"} {
			require.NoError(t, c.Notify(ctx, method, nil))
			m := p.ExpectNotification(ctx, strings.ToValidUTF8(method, "\uFFFD")) // Expect fails on a line that is not JSON
			assert.NotContains(t, m.Raw, `\x`)

			done := make(chan error, 1)
			go func() { done <- c.Call(ctx, method, nil, nil) }()
			req := p.ExpectRequest(ctx, strings.ToValidUTF8(method, "\uFFFD"))
			p.Respond(string(req.ID), `null`)
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-ctx.Done():
				t.Fatalf("Call %q did not return", method)
			}
		}
	})
}
