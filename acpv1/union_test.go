package acpv1

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// TestUnknownTagIsAnError: v1's SessionUpdate and ContentBlock list every
// tag they accept, so an unknown one fails the value, as the SDK's
// validators fail it, and a Router answers such params -32602.
func TestUnknownTagIsAnError(t *testing.T) {
	var u SessionUpdate
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"sessionUpdate":"_custom","x":1}`), &u), `unknown SessionUpdate sessionUpdate "_custom"`)
	var b ContentBlock
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"text":"no type"}`), &b), `ContentBlock without "type"`)
	_, err := json.Marshal(ContentBlock{})
	assert.ErrorContains(t, err, "ContentBlock has no Value", "a union with no variant cannot be sent")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := acprpc.NewRouter()
	r.Register(MethodSessionPrompt, acprpc.RequestHandler(func(context.Context, PromptRequest) (PromptResponse, error) {
		return PromptResponse{StopReason: StopReasonEndTurn}, nil
	}))
	a, c := acprpc.Pipe()
	agent := acprpc.NewConn(ctx, a, r, nil)
	defer agent.Close()
	client := acprpc.NewConn(ctx, c, nil, nil)
	defer client.Close()
	err = client.Call(ctx, MethodSessionPrompt, json.RawMessage(`{"sessionId":"s","prompt":[{"type":"video","url":"x"}]}`), nil)
	var rpcErr *acprpc.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.EqualValues(t, acprpc.CodeInvalidParams, rpcErr.Code)
}

// TestDefaultVariant: a v1 MCP server without "type" is the stdio one, and
// is written without a type, as the TypeScript SDK writes it.
func TestDefaultVariant(t *testing.T) {
	in := `{"name":"fs","command":"/bin/mcp-fs","args":[],"env":[]}`
	var s MCPServer
	require.NoError(t, json.Unmarshal([]byte(in), &s))
	stdio, ok := s.Value.(MCPServerStdio)
	require.True(t, ok, "%#v", s.Value)
	assert.Equal(t, "/bin/mcp-fs", stdio.Command)
	out, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))

	out, err = json.Marshal(MCPServer{Value: MCPServerHTTP{Name: "web", URL: "https://example.com/mcp"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"http","name":"web","url":"https://example.com/mcp","headers":[]}`, string(out),
		"a tagged variant writes its tag first, and its required list empty")
}

// TestMalformedMeta: a _meta that is not an object reads as no metadata,
// as the schema says (x-deserialize-default-on-error), instead of failing
// the message; a well-formed one is kept.
func TestMalformedMeta(t *testing.T) {
	var p PromptRequest
	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"s","prompt":[],"_meta":"not an object"}`), &p))
	assert.Nil(t, p.Meta)
	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"s","prompt":[],"_meta":{"trace":"abc"}}`), &p))
	assert.Equal(t, Meta{"trace": "abc"}, p.Meta)
	out, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, `{"sessionId":"s","prompt":[],"_meta":{"trace":"abc"}}`, string(out))
}

// TestNullUnion: an optional union member sent as null is unset, as the
// schema makes null and an omitted member the same (claude-agent-acp sends
// each command's "input" null when it takes none), and it is left out when
// written again.
func TestNullUnion(t *testing.T) {
	in := `{"name":"simplify","description":"Review changed code","input":null}`
	var c AvailableCommand
	require.NoError(t, json.Unmarshal([]byte(in), &c))
	assert.Nil(t, c.Input.Value)
	out, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"simplify","description":"Review changed code"}`, string(out))

	var o SessionConfigOption
	require.NoError(t, json.Unmarshal([]byte(`null`), &o), "an object that is a union reads null as nothing too")
	assert.Nil(t, o.Type)
}
