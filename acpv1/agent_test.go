package acpv1

import (
	"cmp"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Agent's defaults answer initialize with version 1 (and Info as agentInfo
// once it has a name) and session/new with a new ID each time, counted per
// Register.
func TestAgentDefaults(t *testing.T) {
	ctx := wiretest.Context(t)
	conn := wiretest.NewWire(t, wiretest.Side{Handler: Agent{}.Router()}, wiretest.Side{}).B
	init, err := ToAgent.Initialize.Call(ctx, conn, InitializeRequest{ProtocolVersion: 1})
	require.NoError(t, err)
	assert.Equal(t, ProtocolVersion(1), Version)
	assert.Equal(t, Version, init.ProtocolVersion)
	assert.Nil(t, init.AgentInfo)
	for _, want := range []SessionID{"sess_1", "sess_2"} {
		session, err := ToAgent.SessionNew.Call(ctx, conn, NewSessionRequest{Cwd: "/"})
		require.NoError(t, err)
		assert.Equal(t, want, session.SessionID)
	}

	named := Agent{Info: Implementation{Name: "hello", Version: "1.0"}}
	conn = wiretest.NewWire(t, wiretest.Side{Handler: named.Router()}, wiretest.Side{}).B
	init, err = ToAgent.Initialize.Call(ctx, conn, InitializeRequest{ProtocolVersion: 1})
	require.NoError(t, err)
	require.NotNil(t, init.AgentInfo)
	assert.Equal(t, named.Info, *init.AgentInfo)
	session, err := ToAgent.SessionNew.Call(ctx, conn, NewSessionRequest{Cwd: "/"})
	require.NoError(t, err)
	assert.Equal(t, SessionID("sess_1"), session.SessionID, "a new Router counts from 1")
}

// An Agent's own Initialize and SessionNew replace the defaults.
func TestAgentOwnInitializeAndSessionNew(t *testing.T) {
	ctx := wiretest.Context(t)
	a := Agent{
		Initialize: func(context.Context, InitializeRequest) (InitializeResponse, error) {
			return InitializeResponse{ProtocolVersion: 1, AgentCapabilities: AgentCapabilities{LoadSession: true}}, nil
		},
		SessionNew: func(_ context.Context, p NewSessionRequest) (NewSessionResponse, error) {
			return NewSessionResponse{SessionID: SessionID("in " + p.Cwd)}, nil
		},
	}
	conn := wiretest.NewWire(t, wiretest.Side{Handler: a.Router()}, wiretest.Side{}).B
	init, err := ToAgent.Initialize.Call(ctx, conn, InitializeRequest{ProtocolVersion: 1})
	require.NoError(t, err)
	assert.True(t, init.AgentCapabilities.LoadSession)
	session, err := ToAgent.SessionNew.Call(ctx, conn, NewSessionRequest{Cwd: "/tmp"})
	require.NoError(t, err)
	assert.Equal(t, SessionID("in /tmp"), session.SessionID)
}

// A typed turn, Agent and Client both: the prompt's update reaches the
// client's typed handler, and cancelling the client's prompt call cancels
// the agent's turn with session/cancel, as CancelSession does: the client
// answers the agent's permission request cancelled, and the call returns
// the turn's stop reason, cancelled.
func TestTypedTurnCancelPassesThrough(t *testing.T) {
	ctx := wiretest.Context(t)
	asked := make(chan struct{})
	clientSaw := make(chan error, 1)
	agentSaw := make(chan error, 1)
	agent := Agent{SessionPrompt: func(ctx context.Context, p PromptRequest) (PromptResponse, error) {
		conn := acprpc.ConnFromContext(ctx)
		if err := ToClient.SessionUpdate.Notify(ctx, conn, AgentText(p.SessionID, "thinking")); err != nil {
			return PromptResponse{}, err
		}
		_, err := ToClient.SessionRequestPermission.Call(ctx, conn, RequestPermissionRequest{SessionID: p.SessionID})
		agentSaw <- context.Cause(ctx)
		return PromptResponse{}, cmp.Or(err, ctx.Err()) // answered with the marker
	}}
	updates := make(chan string, 1)
	client := Client{
		SessionUpdate: func(_ context.Context, n SessionNotification) {
			text, _ := AgentTextOf(n.Update)
			updates <- text
		},
		SessionRequestPermission: func(ctx context.Context, _ RequestPermissionRequest) (RequestPermissionResponse, error) {
			close(asked)
			<-ctx.Done()
			clientSaw <- context.Cause(ctx)
			return RequestPermissionResponse{}, ctx.Err()
		},
	}
	conn := wiretest.NewWire(t, wiretest.Side{Handler: agent.Router()}, wiretest.Side{Handler: client.Router()}).B
	turn, cancel := context.WithCancel(ctx)
	go func() {
		wiretest.Recv(t, ctx, asked)
		cancel()
	}()
	res, err := ToAgent.SessionPrompt.Call(turn, conn, TextPrompt("sess_1", "hello"))
	require.NoError(t, err)
	assert.Equal(t, StopReasonCancelled, res.StopReason)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, agentSaw), acprpc.ErrSessionCancelled, "the agent's turn")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, clientSaw), acprpc.ErrSessionCancelled, "the agent's call to the client, answered by the client")
	assert.Equal(t, "thinking", wiretest.Recv(t, ctx, updates))
}

// The default session/new gives every call its own ID, also when the calls
// come at once.
func TestAgentDefaultSessionIDsUnderConcurrency(t *testing.T) {
	ctx := wiretest.Context(t)
	conn := wiretest.NewWire(t, wiretest.Side{Handler: Agent{}.Router()}, wiretest.Side{}).B
	_, err := ToAgent.Initialize.Call(ctx, conn, InitializeRequest{ProtocolVersion: Version})
	require.NoError(t, err)
	const calls = 64
	ids := make(chan SessionID, calls)
	errs := make(chan error, calls)
	for range calls {
		go func() {
			session, err := ToAgent.SessionNew.Call(ctx, conn, NewSessionRequest{Cwd: "/"})
			ids <- session.SessionID
			errs <- err
		}()
	}
	seen := map[SessionID]bool{}
	for range calls {
		require.NoError(t, wiretest.Recv(t, ctx, errs))
		id := wiretest.Recv(t, ctx, ids)
		assert.False(t, seen[id], "%s given twice", id)
		seen[id] = true
	}
	assert.Len(t, seen, calls)
	assert.True(t, seen["sess_1"] && seen[SessionID("sess_64")], "counted from 1")
}

// A request whose params are absent or null is decoded as one with an empty
// object: a method whose params require members is answered -32602 naming
// the first one missing, as for "{}", and one whose params are all optional
// reaches its handler with the zero value.
func TestAbsentParamsAreAnEmptyObject(t *testing.T) {
	ctx := wiretest.Context(t)
	listed := make(chan ListSessionsRequest, 3)
	a := Agent{SessionList: func(_ context.Context, p ListSessionsRequest) (ListSessionsResponse, error) {
		listed <- p
		return ListSessionsResponse{}, nil
	}}
	_, p := wiretest.Connect(t, wiretest.Transports[0], a.Router(), nil)
	for i, params := range []string{"", "null", "{}"} {
		id := fmt.Sprint(i + 1)
		p.Request(id, MethodSessionNew, params)
		m := p.ExpectError(ctx, id, acprpc.CodeInvalidParams)
		assert.Contains(t, m.Error.Message, `without "cwd"`, "params %q", params)
	}
	for i, params := range []string{"", "null", "{}"} {
		id := fmt.Sprint(i + 4)
		p.Request(id, MethodSessionList, params)
		p.ExpectResult(ctx, id, `{"sessions":[]}`)
		assert.Equal(t, ListSessionsRequest{}, wiretest.Recv(t, ctx, listed), "params %q", params)
	}
}

// A list holding null is answered -32602 naming the place, and never
// reaches the handler: a prompt on the agent's side, a permission request's
// options on the client's.
func TestNullListElementIsInvalidParams(t *testing.T) {
	reached := func(what string) { t.Errorf("the handler got %s holding null", what) }
	a := Agent{SessionPrompt: func(context.Context, PromptRequest) (PromptResponse, error) {
		reached("a prompt")
		return PromptResponse{StopReason: StopReasonEndTurn}, nil
	}}
	c := Client{SessionRequestPermission: func(context.Context, RequestPermissionRequest) (RequestPermissionResponse, error) {
		reached("options")
		return RequestPermissionResponse{}, nil
	}}
	for _, tc := range []struct {
		router                acprpc.Handler
		method, params, place string
	}{
		{a.Router(), MethodSessionPrompt, `{"sessionId":"s","prompt":[{"type":"text","text":"x"},null]}`, `"prompt"[1] is null`},
		{c.Router(), MethodSessionRequestPermission, `{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[null]}`, `"options"[0] is null`},
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

// A prompt naming its session twice, once in another case, is served in
// the session the Conn reads, the one its session/cancel cancels: member
// names match exactly, as JSON.parse and the SDK's validators match them.
func TestPromptIsServedInTheSessionTheWireNames(t *testing.T) {
	ctx := wiretest.Context(t)
	sessions := make(chan SessionID, 1)
	a := Agent{SessionPrompt: func(ctx context.Context, p PromptRequest) (PromptResponse, error) {
		sessions <- p.SessionID
		<-ctx.Done()
		return PromptResponse{}, ctx.Err()
	}}
	_, p := wiretest.Connect(t, wiretest.Transports[0], a.Router(), nil)
	p.Request("1", MethodSessionPrompt, `{"sessionId":"a","SESSIONID":"b","prompt":[]}`)
	assert.Equal(t, SessionID("a"), wiretest.Recv(t, ctx, sessions))
	p.Notify(MethodSessionCancel, `{"sessionId":"a"}`)
	p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
}
