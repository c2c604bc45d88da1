package acpv1

import (
	"context"
	"encoding/json"
	"math"
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

// TestScalarUnion: a union of scalars is a type switch over named Go
// types, built with a composite literal, read by the JSON type of the
// value (an integer however it is spelled, null as RequestId's own
// variant), and written as the schema has it.
func TestScalarUnion(t *testing.T) {
	for in, want := range map[string]RequestIDVariant{
		`7`: RequestIDNumber(7), `2.0`: RequestIDNumber(2), `-3e2`: RequestIDNumber(-300),
		`"abc"`: RequestIDStr("abc"), `null`: RequestIDNull{},
	} {
		var n CancelRequestNotification
		require.NoError(t, json.Unmarshal([]byte(`{"requestId":`+in+`}`), &n), in)
		assert.Equal(t, want, n.RequestID.Value, in)
	}
	for _, in := range []string{`1.5`, `true`, `{}`, `[1]`, `1e19`} {
		var id RequestID
		assert.ErrorContains(t, json.Unmarshal([]byte(in), &id), "RequestID matches none of its variants", in)
	}
	for v, want := range map[RequestIDVariant]string{RequestIDNumber(3): `3`, RequestIDStr("s"): `"s"`, RequestIDNull{}: `null`} {
		out, err := json.Marshal(CancelRequestNotification{RequestID: RequestID{Value: v}})
		require.NoError(t, err)
		assert.JSONEq(t, `{"requestId":`+want+`}`, string(out))
	}
	_, err := json.Marshal(CancelRequestNotification{})
	assert.ErrorContains(t, err, "RequestID has no Value", "a required union must be set")

	in := `{"a":"s","b":3,"c":2.5,"d":true,"e":["x","y"],"f":[]}`
	var content map[string]ElicitationContentValue
	require.NoError(t, json.Unmarshal([]byte(in), &content))
	assert.Equal(t, map[string]ElicitationContentValue{
		"a": {ElicitationContentValueString("s")}, "b": {ElicitationContentValueInteger(3)},
		"c": {ElicitationContentValueNumber(2.5)}, "d": {ElicitationContentValueBoolean(true)},
		"e": {ElicitationContentValueStringArray{"x", "y"}}, "f": {ElicitationContentValueStringArray{}},
	}, content)
	out, err := json.Marshal(content)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))
	out, err = json.Marshal(ElicitationContentValue{Value: ElicitationContentValueStringArray(nil)})
	require.NoError(t, err)
	assert.Equal(t, `[]`, string(out), "a nil list is sent as the list the schema requires")
	for _, bad := range []string{`null`, `{}`, `[1]`} {
		var v ElicitationContentValue
		assert.Error(t, json.Unmarshal([]byte(bad), &v), "v1 has no variant for %s, as the SDK has none", bad)
	}
}

// An integer RequestID is read exactly however it is spelled, as the wire
// reads a request's ID, so a $/cancel_request names the request the wire
// took: no float64 rounds 9007199254740993.0 to its neighbour or refuses
// 9223372036854775807.0 as beyond 64 bits.
func TestRequestIDIntegerIsExact(t *testing.T) {
	for in, want := range map[string]RequestIDNumber{
		`9223372036854775807.0`:   math.MaxInt64,
		`92233720368547758070e-1`: math.MaxInt64,
		`-9223372036854775808.0`:  math.MinInt64,
		`9007199254740993.0`:      9007199254740993,
		`9007199254740993e0`:      9007199254740993,
	} {
		var n CancelRequestNotification
		require.NoError(t, json.Unmarshal([]byte(`{"requestId":`+in+`}`), &n), in)
		assert.Equal(t, want, n.RequestID.Value, in)
	}
	for _, in := range []string{`9223372036854775808.0`, `9223372036854775807.5`, `1e19`} {
		var id RequestID
		assert.Error(t, json.Unmarshal([]byte(in), &id), in)
	}
}
