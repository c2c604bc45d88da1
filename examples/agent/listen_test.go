package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/examples/internal/demo"
	"github.com/acpkit/acprpc/remote"
)

// With -listen, an interrupt mid-turn shuts every connection down
// gracefully: the turn is cancelled, its nested requests are cancelled by
// the agent's own $/cancel_request, the prompt is answered "cancelled", and
// the agent exits with status 0.
func TestListenShutsDownGracefully(t *testing.T) {
	for _, scheme := range []string{"ws", "http"} {
		t.Run(scheme, func(t *testing.T) {
			proc, url, err := demo.StartListeningAgent(agentBin, nil)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			tr, err := remote.Dial(ctx, scheme+strings.TrimPrefix(url, "http"), nil)
			require.NoError(t, err)
			arrived := make(chan string, 2)
			causes := make(chan error, 2)
			held := func(ctx context.Context, req *acprpc.Request) (any, error) {
				arrived <- req.Method
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}
			client := acprpc.NewConn(ctx, tr, acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
				switch req.Method {
				case demo.MethodRequestPermission, demo.MethodTerminalCreate:
					return held(ctx, req)
				}
				return nil, nil
			}), nil)
			defer client.Close()

			require.NoError(t, client.Call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"terminal": true}}, nil))
			var sess struct {
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, client.Call(ctx, "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, &sess))
			turn := make(chan json.RawMessage, 1)
			go func() {
				var res json.RawMessage
				_ = client.Call(ctx, "session/prompt", map[string]any{"sessionId": sess.SessionID,
					"prompt": []map[string]string{{"type": "text", "text": "slow: analyze file X"}}}, &res)
				turn <- res
			}()
			<-arrived
			<-arrived

			require.NoError(t, proc.Signal(os.Interrupt))
			assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(<-turn))
			for range 2 {
				assert.ErrorIs(t, <-causes, acprpc.ErrPeerCancelled, "cancelled by the agent's own $/cancel_request")
			}
			require.NoError(t, proc.Wait(), "the agent exits with status 0")
			<-client.Done()
		})
	}
}
