package acprpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// tool_call/cancel and terminal/cancel for a registered entity cancel its
// context (cause ErrEntityCancelled) on the read goroutine and are answered
// at once; for an unknown or final one the handler is asked, and -32602
// goes out when it does not serve the method.
func TestV2EntityCancels(t *testing.T) {
	for _, tc := range []struct{ method, field string }{
		{"tool_call/cancel", "toolCallId"},
		{"terminal/cancel", "terminalId"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
				ctx := wiretest.Context(t)
				c, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping}, v2Options())
				register := c.CancellableToolCall
				if tc.method == "terminal/cancel" {
					register = c.CancellableTerminal
				}
				entityCtx, done := register(context.Background(), "s", "e1")
				params := func(session, id string) string {
					return fmt.Sprintf(`{"sessionId":%q,%q:%q}`, session, tc.field, id)
				}

				p.Request("1", tc.method, params("s", "unknown"))
				m := p.ExpectError(ctx, "1", acprpc.CodeInvalidParams)
				assert.Contains(t, m.Error.Message, "unknown, final or not cancellable")
				p.Request("2", tc.method, params("other", "e1"))
				p.ExpectError(ctx, "2", acprpc.CodeInvalidParams)
				p.Request("3", tc.method, `{"sessionId":"s"}`)
				p.ExpectError(ctx, "3", acprpc.CodeInvalidParams)
				assert.NoError(t, entityCtx.Err())

				p.Request("4", tc.method, params("s", "e1"))
				p.ExpectResult(ctx, "4", `{}`)
				<-entityCtx.Done()
				assert.ErrorIs(t, context.Cause(entityCtx), acprpc.ErrEntityCancelled)

				done()
				done()
				p.Request("5", tc.method, params("s", "e1"))
				p.ExpectError(ctx, "5", acprpc.CodeInvalidParams) // final
			})
		})
	}
}

// An application that serves an entity cancel itself gets the ones it did
// not register; a Conn with no handler answers -32602; on v1 the methods
// are ordinary requests.
func TestEntityCancelFallbacks(t *testing.T) {
	ctx := wiretest.Context(t)
	h := wiretest.Mux{"tool_call/cancel": func(context.Context, *acprpc.Request) (any, error) {
		return json.RawMessage(`{"_meta":{"by":"app"}}`), nil
	}}
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, v2Options())
	p.Request("1", "tool_call/cancel", `{"sessionId":"s","toolCallId":"x"}`)
	p.ExpectResult(ctx, "1", `{"_meta":{"by":"app"}}`)

	_, p = wiretest.Connect(t, wiretest.Transports[0], nil, v2Options())
	p.Request("1", "terminal/cancel", `{"sessionId":"s","terminalId":"x"}`)
	p.ExpectError(ctx, "1", acprpc.CodeInvalidParams)

	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{}, &acprpc.Options{PinnedVersion: acprpc.ProtocolV1})
	entityCtx, done := c.CancellableToolCall(context.Background(), "s", "x")
	defer done()
	p.Request("1", "tool_call/cancel", `{"sessionId":"s","toolCallId":"x"}`)
	p.ExpectError(ctx, "1", acprpc.CodeMethodNotFound)
	assert.NoError(t, entityCtx.Err(), "v1 has no entity cancels")
}

// A tool call registered under the work's context ends with the work's
// cancel too, and a tool_call/cancel leaves the work running.
func TestV2EntityUnderWork(t *testing.T) {
	ctx := wiretest.Context(t)
	a := newV2Turns()
	toolCtxs := make(chan context.Context, 1)
	a.run = func(c *acprpc.Conn, w *acprpc.Work) {
		toolCtx, done := c.CancellableToolCall(w.Context(), w.SessionID(), "call_1")
		defer done()
		toolCtxs <- toolCtx
		<-w.Context().Done()
		_ = w.End("cancelled")
	}
	_, p := wiretest.Connect(t, wiretest.Transports[0], a, v2Options())
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectAnswer(ctx, "1")
	w := wiretest.Recv(t, ctx, a.works)
	toolCtx := wiretest.Recv(t, ctx, toolCtxs)
	p.Request("2", "tool_call/cancel", `{"sessionId":"s","toolCallId":"call_1"}`)
	p.ExpectResult(ctx, "2", `{}`)
	<-toolCtx.Done()
	assert.NoError(t, w.Context().Err(), "cancelling a tool call does not cancel the work")
	p.Notify("session/cancel", `{"sessionId":"s"}`)
	expectIdle(t, ctx, p, "cancelled")
	a.wg.Wait()
}
