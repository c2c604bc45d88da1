package sdkshape_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/examples/sdkshape"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// connect joins a client and an agent over a byte stream, as an SDK's user
// does over an agent's stdin and stdout.
func connect(t *testing.T, agent, client sdkshape.MethodHandler, clientOpts *sdkshape.Options) (c, a *sdkshape.Connection) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	a = sdkshape.NewConnection(agent, toClientW, toAgentR, nil)
	c = sdkshape.NewConnection(client, toAgentW, toClientR, clientOpts)
	t.Cleanup(func() {
		_ = c.Close()
		_ = a.Close()
	})
	return c, a
}

// scripted is a Connection with a scripted raw peer at the other end.
func scripted(t *testing.T, h sdkshape.MethodHandler, opts *sdkshape.Options) (*sdkshape.Connection, *wiretest.Peer) {
	tr, peer := acprpc.Pipe()
	p := wiretest.PeerOf(t, peer)
	c := sdkshape.NewConnectionOver(h, tr, opts)
	t.Cleanup(func() { _ = c.Close() })
	return c, p
}

// methods serves a few methods, -32601 for the rest.
func methods(m map[string]sdkshape.MethodHandler) sdkshape.MethodHandler {
	return func(ctx context.Context, method string, params json.RawMessage) (any, *sdkshape.RequestError) {
		if h, ok := m[method]; ok {
			return h(ctx, method, params)
		}
		return nil, sdkshape.NewMethodNotFound(method)
	}
}

// The raw handler's RequestError is the answer, code, message and data;
// the caller gets it back as a RequestError.
func TestOwnErrorBothWays(t *testing.T) {
	ctx := wiretest.Context(t)
	agent := methods(map[string]sdkshape.MethodHandler{
		"session/new": func(context.Context, string, json.RawMessage) (any, *sdkshape.RequestError) {
			return nil, sdkshape.NewAuthRequired(map[string]any{"methods": []string{"oauth"}})
		},
		"ok": func(context.Context, string, json.RawMessage) (any, *sdkshape.RequestError) {
			return map[string]int{"n": 1}, nil // a nil *RequestError is no error
		},
	})
	_, p := scripted(t, agent, nil)
	p.Request("1", "session/new", `{"cwd":"/","mcpServers":[]}`)
	m := p.ExpectError(ctx, "1", -32000)
	assert.Equal(t, "Authentication required", m.Error.Message)
	assert.JSONEq(t, `{"methods":["oauth"]}`, string(m.Error.Data))
	p.Request("2", "ok", `{}`)
	p.ExpectResult(ctx, "2", `{"n":1}`)
	p.Request("3", "nope", `{}`)
	m = p.ExpectError(ctx, "3", acprpc.CodeMethodNotFound)
	assert.JSONEq(t, `{"method":"nope"}`, string(m.Error.Data))

	c, _ := connect(t, agent, nil, nil)
	_, err := c.NewSession(ctx, sdkshape.NewSessionRequest{Cwd: "/"})
	var re *sdkshape.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, -32000, re.Code)
	assert.Equal(t, map[string]any{"methods": []any{"oauth"}}, re.Data)
}

// A handler that returns the RequestError of a call it made does not pass
// the peer's code on as its own answer.
func TestPeerErrorIsNotForwarded(t *testing.T) {
	ctx := wiretest.Context(t)
	var a *sdkshape.Connection
	agent := methods(map[string]sdkshape.MethodHandler{
		"session/prompt": func(ctx context.Context, _ string, _ json.RawMessage) (any, *sdkshape.RequestError) {
			_, err := sdkshape.SendRequest[json.RawMessage](ctx, a, "session/request_permission", map[string]string{"sessionId": "s"})
			var re *sdkshape.RequestError
			errors.As(err, &re)
			return nil, re
		},
	})
	a, p := scripted(t, agent, nil)
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	perm := p.ExpectRequest(ctx, "session/request_permission")
	p.RespondError(string(perm.ID), acprpc.CodeMethodNotFound, "Method not found")
	m := p.ExpectError(ctx, "1", acprpc.CodeInternalError)
	assert.Contains(t, m.Error.Message, "session/request_permission")
}

// A typed call cancels with its context: the agent's handler sees its
// context end by the peer's $/cancel_request, and the caller gets -32800.
func TestTypedCallCancels(t *testing.T) {
	ctx := wiretest.Context(t)
	causes := make(chan error, 1)
	started := make(chan struct{})
	agent := methods(map[string]sdkshape.MethodHandler{
		"slow": func(ctx context.Context, _ string, _ json.RawMessage) (any, *sdkshape.RequestError) {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, sdkshape.NewRequestCancelled()
		},
	})
	c, _ := connect(t, agent, nil, nil)
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := sdkshape.SendRequest[json.RawMessage](callCtx, c, "slow", map[string]int{})
		done <- err
	}()
	wiretest.Recv(t, ctx, started)
	cancel()
	err := wiretest.Recv(t, ctx, done)
	var re *sdkshape.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, acprpc.CodeRequestCancelled, re.Code)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrPeerCancelled)
}

// Prompt cancels through session/cancel: the agent's turn ends with cause
// ErrSessionCancelled, the client's side cancels the agent's pending
// permission request at once (its answer is the cancelled outcome), and
// Prompt returns the agent's "cancelled".
func TestPromptCancelsThroughCancelSession(t *testing.T) {
	ctx := wiretest.Context(t)
	var a *sdkshape.Connection
	agentCause := make(chan error, 1)
	agent := methods(map[string]sdkshape.MethodHandler{
		"session/prompt": func(ctx context.Context, _ string, _ json.RawMessage) (any, *sdkshape.RequestError) {
			_, _ = sdkshape.SendRequest[json.RawMessage](ctx, a, "session/request_permission", map[string]string{"sessionId": "s"})
			<-ctx.Done()
			agentCause <- context.Cause(ctx)
			return sdkshape.PromptResponse{StopReason: sdkshape.StopReasonCancelled}, nil
		},
	})
	asked := make(chan struct{})
	permCause := make(chan error, 1)
	client := methods(map[string]sdkshape.MethodHandler{
		"session/request_permission": func(ctx context.Context, _ string, _ json.RawMessage) (any, *sdkshape.RequestError) {
			close(asked)
			<-ctx.Done() // the user never answers
			permCause <- context.Cause(ctx)
			return nil, sdkshape.NewRequestCancelled()
		},
	})
	c, a := connect(t, agent, client, nil)
	turnCtx, cancel := context.WithCancel(ctx)
	done := make(chan sdkshape.PromptResponse, 1)
	go func() {
		res, err := c.Prompt(turnCtx, sdkshape.PromptRequest{SessionID: "s", Prompt: []sdkshape.ContentBlock{{Type: "text", Text: "hi"}}})
		assert.NoError(t, err)
		done <- res
	}()
	wiretest.Recv(t, ctx, asked)
	cancel()
	assert.Equal(t, sdkshape.StopReasonCancelled, wiretest.Recv(t, ctx, done).StopReason)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, permCause), acprpc.ErrSessionCancelled)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, agentCause), acprpc.ErrSessionCancelled, "session/cancel, not $/cancel_request, ended the turn")
}

// An agent that answers "end_turn" after session/cancel: with
// ReportCancelledTurns the SDK's Prompt says "cancelled", without it the
// agent's word stands.
func TestEndTurnAfterCancel(t *testing.T) {
	for _, report := range []bool{false, true} {
		ctx := wiretest.Context(t)
		c, p := scripted(t, nil, &sdkshape.Options{ReportCancelledTurns: report})
		turnCtx, cancel := context.WithCancel(ctx)
		done := make(chan sdkshape.PromptResponse, 1)
		go func() {
			res, err := c.Prompt(turnCtx, sdkshape.PromptRequest{SessionID: "s"})
			assert.NoError(t, err)
			done <- res
		}()
		m := p.ExpectRequest(ctx, "session/prompt")
		cancel()
		p.ExpectNotification(ctx, "session/cancel")
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		want := "end_turn"
		if report {
			want = "cancelled"
		}
		assert.Equal(t, want, wiretest.Recv(t, ctx, done).StopReason, "ReportCancelledTurns %v", report)
	}
}

// An agent that never answers a cancelled turn holds Prompt for CancelWait
// only: the turn is cancelled with session/cancel alone, and Prompt then
// returns "cancelled".
func TestPromptGivesUpOnSilentAgent(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := scripted(t, nil, &sdkshape.Options{CancelWait: 20 * time.Millisecond})
	turnCtx, cancel := context.WithCancel(ctx)
	done := make(chan sdkshape.PromptResponse, 1)
	go func() {
		res, err := c.Prompt(turnCtx, sdkshape.PromptRequest{SessionID: "s"})
		assert.NoError(t, err)
		done <- res
	}()
	m := p.ExpectRequest(ctx, "session/prompt")
	cancel()
	cancelNote := p.ExpectNotification(ctx, "session/cancel")
	assert.JSONEq(t, `{"sessionId":"s"}`, string(cancelNote.Params))
	assert.Equal(t, sdkshape.StopReasonCancelled, wiretest.Recv(t, ctx, done).StopReason)
	p.Respond(string(m.ID), `{"stopReason":"cancelled"}`) // late: dropped
}

// The SDK's logger, set after construction, gets the connection's
// diagnostics, and each handler logs through a logger that names its
// request.
func TestLoggerSetLater(t *testing.T) {
	ctx := wiretest.Context(t)
	agent := methods(map[string]sdkshape.MethodHandler{
		"work": func(ctx context.Context, _ string, _ json.RawMessage) (any, *sdkshape.RequestError) {
			sdkshape.LoggerFromContext(ctx).Info("working")
			return "done", nil
		},
	})
	a, p := scripted(t, agent, nil)
	log := &wiretest.Recorder{}
	logger := log.Logger()
	a.SetLogger(logger)
	p.Request("7", "work", `{}`)
	p.ExpectResult(ctx, "7", `"done"`)
	r, found := log.FindLogged(slog.LevelInfo, "working")
	require.True(t, found)
	assert.Equal(t, map[string]string{"method": "work", "id": "7"}, r.Attrs)
	p.Send(`{"jsonrpc":`)
	p.ExpectError(ctx, "null", acprpc.CodeParseError)
	_, found = log.FindLogged(slog.LevelWarn, "not JSON")
	assert.True(t, found, "the connection's own diagnostics go to the logger set later")
}

// The SDK speaks v1 alone: an agent that answers initialize with 2 leaves
// the connection on v1's rules.
func TestStaysOnV1(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := scripted(t, nil, nil)
	done := make(chan sdkshape.InitializeResponse, 1)
	go func() {
		res, err := c.Initialize(ctx, sdkshape.InitializeRequest{ProtocolVersion: 1})
		assert.NoError(t, err)
		done <- res
	}()
	m := p.ExpectRequest(ctx, "initialize")
	p.Respond(string(m.ID), `{"protocolVersion":2}`)
	assert.Equal(t, 2, wiretest.Recv(t, ctx, done).ProtocolVersion, "the answer is the SDK's to judge")
	assert.Equal(t, 1, c.ProtocolVersion())
}
