package acpv2

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
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

// A prompt whose list holds null is answered -32602 naming the place, and
// never reaches the handler.
func TestNullPromptElementIsInvalidParams(t *testing.T) {
	ctx := wiretest.Context(t)
	a := Agent{SessionPrompt: func(context.Context, PromptRequest) (PromptResponse, error) {
		t.Error("the handler got a prompt holding null")
		return PromptResponse{}, nil
	}}
	_, p := wiretest.Connect(t, wiretest.Transports[0], a.Router(), nil)
	p.Request("1", MethodSessionPrompt, `{"sessionId":"s","prompt":[null]}`)
	m := p.ExpectError(ctx, "1", acprpc.CodeInvalidParams)
	assert.Contains(t, m.Error.Message, `"prompt"[0] is null`)
}

// On the client's side too: a permission request whose options hold null is
// answered -32602 naming the place, and never reaches the handler.
func TestNullPermissionOptionIsInvalidParams(t *testing.T) {
	ctx := wiretest.Context(t)
	c := Client{SessionRequestPermission: func(context.Context, RequestPermissionRequest) (RequestPermissionResponse, error) {
		t.Error("the handler got options holding null")
		return RequestPermissionResponse{}, nil
	}}
	_, p := wiretest.Connect(t, wiretest.Transports[0], c.Router(), nil)
	p.Request("1", MethodSessionRequestPermission, `{"sessionId":"s","title":"Run it?","options":[null]}`)
	m := p.ExpectError(ctx, "1", acprpc.CodeInvalidParams)
	assert.Contains(t, m.Error.Message, `"options"[0] is null`)
}
