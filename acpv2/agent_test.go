package acpv2

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Agent's default initialize answers version 2 with Info, which v2
// requires, and its default session/new a new ID.
func TestAgentDefaults(t *testing.T) {
	ctx := wiretest.Context(t)
	a := Agent{Info: Implementation{Name: "hello", Version: "1.0"}}
	conn := wiretest.NewWire(t, wiretest.Side{Handler: a.Router()}, wiretest.Side{}).B
	init, err := ToAgent.Initialize.Call(ctx, conn, InitializeRequest{ProtocolVersion: 2, Info: Implementation{Name: "client", Version: "1"}})
	require.NoError(t, err)
	assert.Equal(t, ProtocolVersion(2), Version)
	assert.Equal(t, InitializeResponse{ProtocolVersion: Version, Info: a.Info}, init)
	session, err := ToAgent.SessionNew.Call(ctx, conn, NewSessionRequest{Cwd: "/"})
	require.NoError(t, err)
	assert.Equal(t, SessionID("sess_1"), session.SessionID)
}

// A list holding null is answered -32602 naming the place, and never
// reaches the handler: a prompt on the agent's side, a permission request's
// options on the client's.
func TestNullListElementIsInvalidParams(t *testing.T) {
	reached := func(what string) { t.Errorf("the handler got %s holding null", what) }
	a := Agent{SessionPrompt: func(context.Context, PromptRequest) (PromptResponse, error) {
		reached("a prompt")
		return PromptResponse{}, nil
	}}
	c := Client{SessionRequestPermission: func(context.Context, RequestPermissionRequest) (RequestPermissionResponse, error) {
		reached("options")
		return RequestPermissionResponse{}, nil
	}}
	for _, tc := range []struct {
		router                acprpc.Handler
		method, params, place string
	}{
		{a.Router(), MethodSessionPrompt, `{"sessionId":"s","prompt":[null]}`, `"prompt"[0] is null`},
		{c.Router(), MethodSessionRequestPermission, `{"sessionId":"s","title":"Run it?","options":[null]}`, `"options"[0] is null`},
	} {
		t.Run(tc.method, func(t *testing.T) {
			ctx := wiretest.Context(t)
			_, p := wiretest.Connect(t, wiretest.Transports[0], tc.router, nil)
			p.Request("1", tc.method, tc.params)
			m := p.ExpectError(ctx, "1", acprpc.CodeInvalidParams)
			assert.Contains(t, m.Error.Message, tc.place)
		})
	}
}

// A typed v2 prompt whose context ends before the agent has inserted it
// cancels the session's work with session/cancel, as CancelSession does,
// not with $/cancel_request: the agent answers the held prompt -32800,
// which the call returns with the cancel.
func TestTypedPromptCancelSendsSessionCancel(t *testing.T) {
	ctx := wiretest.Context(t)
	conn, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{PinnedVersion: acprpc.ProtocolV2})
	turn, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := ToAgent.SessionPrompt.Call(turn, conn, TextPrompt("sess_1", "hello"))
		done <- err
	}()
	prompt := p.ExpectRequest(ctx, MethodSessionPrompt)
	cancel()
	m := p.ExpectNotification(ctx, MethodSessionCancel)
	assert.JSONEq(t, `{"sessionId":"sess_1"}`, string(m.Params))
	p.RespondError(string(prompt.ID), acprpc.CodeRequestCancelled, "Request cancelled")
	err := wiretest.Recv(t, ctx, done)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.ErrorIs(t, err, context.Canceled)
	var answer *acprpc.Error
	require.ErrorAs(t, err, &answer)
	assert.EqualValues(t, acprpc.CodeRequestCancelled, answer.Code)
}

// A v2 client of a v1 agent is told, on the initialize answer that v2's
// types cannot read and on the agent's refusal of v2's session/new, that
// the agent answered protocolVersion 1 and what to do instead.
func TestClientOfV1AgentIsToldItsVersion(t *testing.T) {
	ctx := wiretest.Context(t)
	v1 := acpv1.Agent{Info: acpv1.Implementation{Name: "old", Version: "1.0"}}
	conn := wiretest.NewWire(t, wiretest.Side{Handler: v1.Router()}, wiretest.Side{}).B
	const declined = "the agent answered initialize with protocolVersion 1, though this side asked for 2: " +
		"it does not speak ACP v2, and this connection follows v1's rules: send it v1's messages (acpv1's types and " +
		"methods; a handler that serves both versions is an acprpc.VersionRouter), or close the connection if this side speaks v2 alone"

	_, err := ToAgent.Initialize.Call(ctx, conn, InitializeRequest{ProtocolVersion: 2, Info: Implementation{Name: "client", Version: "1"}})
	require.Error(t, err)
	assert.Equal(t, `acprpc: call initialize (id 1): cannot decode result: acpv2: InitializeResponse without "info", which the schema requires; `+declined, err.Error())
	assert.Equal(t, acprpc.ProtocolV1, conn.ProtocolVersion())

	_, err = ToAgent.SessionNew.Call(ctx, conn, NewSessionRequest{Cwd: "/"})
	var rpcErr *acprpc.Error
	require.ErrorAs(t, err, &rpcErr, "the agent's answer is still there")
	assert.EqualValues(t, acprpc.CodeInvalidParams, rpcErr.Code)
	assert.Equal(t, "acprpc: call session/new (id 2): "+rpcErr.Error()+"; "+declined, err.Error())
}
