package interop

import (
	"context"
	"errors"
	"io"
	"log"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/sourcegraph"
)

// pipePair is the agent's stdout and stdin as the one ReadWriteCloser
// sourcegraph's streams take.
type pipePair struct {
	io.ReadCloser
	io.WriteCloser
}

func (p pipePair) Close() error { return errors.Join(p.WriteCloser.Close(), p.ReadCloser.Close()) }

// sgHandled is what a handler on sourcegraph's engine went through.
type sgHandled struct {
	method string
	cause  error
}

// A client on sourcegraph's engine, with the sourcegraph package, against
// the TypeScript SDK's agent: sourcegraph.Call's $/cancel_request for the
// prompt is the one the SDK's handler sees (its signal aborts with -32800),
// and the agent's own $/cancel_request for its permission and terminal
// requests cancel the engine's handlers, whose requests are answered once
// each, with the cancelled outcome and -32800.
func TestSourcegraphWithTSAgent(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	a, stdout, stdin := spawnTSAgent(t, "--terminal")
	arrived := make(chan string, 2)
	handled := make(chan sgHandled, 2)
	h := jsonrpc2.HandlerWithError(func(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Notif {
			return nil, nil // session/update
		}
		arrived <- req.Method
		<-ctx.Done() // the user never answers; the command never ends
		handled <- sgHandled{req.Method, context.Cause(ctx)}
		return nil, &jsonrpc2.Error{Code: -32000, Message: "gave up"}
	})
	conn := sourcegraph.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(pipePair{stdout, stdin}), h, nil,
		jsonrpc2.SetLogger(log.New(&a.stderr, "jsonrpc2: ", 0)))
	a.closeConn = conn.Close

	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	require.NoError(t, sourcegraph.Call(ctx, conn, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": true},
		"clientInfo":         map[string]string{"name": "acprpc-interop-sourcegraph-client", "version": "0.0.0"},
	}, &init))
	require.Equal(t, 1, init.ProtocolVersion)
	var session struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, sourcegraph.Call(ctx, conn, "session/new", map[string]any{"cwd": interopDir, "mcpServers": []any{}}, &session))

	promptCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- sourcegraph.Call(promptCtx, conn, "session/prompt", map[string]any{"sessionId": session.SessionID,
			"prompt": []any{map[string]string{"type": "text", "text": "please be slow"}}}, nil)
	}()
	seen := map[string]bool{}
	for range 2 {
		select {
		case m := <-arrived:
			seen[m] = true
		case <-ctx.Done():
			t.Fatalf("the agent's requests did not arrive (got %v)", seen)
		}
	}
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, acprpc.ErrCancelled)
	case <-ctx.Done():
		t.Fatal("sourcegraph.Call did not return on its context's end")
	}
	for range 2 {
		select {
		case h := <-handled:
			assert.ErrorIs(t, h.cause, acprpc.ErrPeerCancelled, "%s: the agent's $/cancel_request", h.method)
		case <-ctx.Done():
			t.Fatal("the agent's cascade did not cancel the engine's handlers")
		}
	}
	// Both answers are on the wire before the agent is stopped: the two
	// handlers return together, so either may be written first.
	require.NoError(t, a.tap.await(ctx, goToTS, func(m wireMsg) bool { return m.isResponse() && m.Error != nil }))
	require.NoError(t, a.tap.await(ctx, goToTS, func(m wireMsg) bool { return m.isResponse() && m.Result != nil }))

	r := a.finish()
	require.Len(t, r.Prompts, 1)
	prompt := r.Prompts[0]
	if assert.NotNil(t, prompt.CancelledBy) {
		assert.Equal(t, "$/cancel_request", *prompt.CancelledBy)
	}
	if assert.NotNil(t, prompt.HandlerSignalReason) {
		assert.Equal(t, int64(-32800), prompt.HandlerSignalReason.Code)
	}
	assert.Contains(t, string(prompt.RequestID), `"acprpc-`, "sourcegraph.Call's own string ID")
	assert.Equal(t, []string{string(prompt.RequestID)}, r.Wire.cancels("in"), "the client's $/cancel_request names the prompt")
	out := map[string]agentOutgoing{}
	for _, o := range prompt.Outgoing {
		out[o.Method] = o
	}
	perm, term := out["session/request_permission"], out["terminal/create"]
	assert.ElementsMatch(t, []string{string(perm.RequestID), string(term.RequestID)}, r.Wire.cancels("out"))
	assert.JSONEq(t, `{"outcome":{"outcome":"cancelled"}}`, string(perm.wireAnswer().Result), "the marker, not the handler's -32000")
	if e := term.wireAnswer().Error; assert.NotNil(t, e, "terminal/create answer") {
		assert.Equal(t, int64(-32800), e.Code)
	}
	for _, o := range []agentOutgoing{perm, term} {
		assert.Equal(t, 1, o.AnswersOnWireCount, "%s: answered once", o.Method)
	}
}
