package remote

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Scripted conversations of the shared kit, over the remote transports with
// a raw peer that writes JSON-RPC byte for byte.
func TestScriptsOverRemoteTransports(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		causes := make(chan error, 1)
		mux := wiretest.Mux{
			"echo": wiretest.Echo,
			"session/prompt": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			},
		}
		_, p := wiretest.Connect(t, tr, mux, nil)
		ctx := wiretest.Context(t)

		t.Run("IDs come back byte for byte", func(t *testing.T) {
			for _, id := range []string{`1`, `"1"`, `-1`, `9007199254740993`, `"caf\u00e9"`, `"a\"b"`} {
				p.Request(id, "echo", `{"n":1}`)
				p.ExpectResult(ctx, id, `{"n":1}`)
			}
		})
		t.Run("session/cancel ends the turn with its marker", func(t *testing.T) {
			p.Request(`"turn"`, "session/prompt", `{"sessionId":"s1","prompt":[]}`)
			p.Request(`"sync"`, "echo", `[1]`) // the prompt is registered once this is answered
			p.ExpectResult(ctx, `"sync"`, `[1]`)
			p.Notify("session/cancel", `{"sessionId":"s1"}`)
			p.ExpectResult(ctx, `"turn"`, `{"stopReason":"cancelled"}`)
			assert.ErrorIs(t, <-causes, acprpc.ErrSessionCancelled)
		})
		t.Run("twenty requests at once, each answered once", func(t *testing.T) {
			for i := range 20 {
				p.Request(strconv.Itoa(100+i), "echo", `[]`)
			}
			seen := map[string]bool{}
			for _, m := range p.ExpectN(ctx, 20) {
				seen[string(m.ID)] = true
			}
			assert.Len(t, seen, 20)
		})
		if tr.Name == "websocket" { // a POST of bad JSON is refused by HTTP itself (400)
			t.Run("bad input is answered and the connection lives on", func(t *testing.T) {
				p.Send(`{"jsonrpc":`)
				p.ExpectError(ctx, "null", acprpc.CodeParseError)
				p.Send(`[{"jsonrpc":"2.0","id":9,"method":"echo"}]`)
				p.ExpectError(ctx, "null", acprpc.CodeInvalidRequest)
				p.Request("10", "echo", `["still here"]`)
				p.ExpectResult(ctx, "10", `["still here"]`)
			})
		}
	}, remoteTransports...)
}
