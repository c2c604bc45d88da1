package acpv1

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/interoptest"
)

// TestSchemaRoundTrip checks every generated type against the TypeScript
// SDK's validators: samples of each definition, stable and unstable, decode
// into the Go type and encode back to what the SDK reads the same way.
func TestSchemaRoundTrip(t *testing.T) {
	interoptest.SchemaRoundTrip(t, 1, "../interop", schemaTypes)
}

// TestDecodeChecks: decoding refuses what the SDK's validators refuse (a
// required member missing or null, a value a closed enum does not list)
// and accepts what they accept (members it does not know, an enum value the
// schema reads as unset, null where null is a value).
func TestDecodeChecks(t *testing.T) {
	interoptest.DecodeChecksAgree(t, 1, "../interop", schemaTypes, []interoptest.DecodeCase{
		interoptest.Valid("PromptRequest", `{"sessionId":"s","prompt":[]}`),
		interoptest.Valid("PromptRequest", `{"sessionId":"s","prompt":[],"futureMember":{"x":1}}`),
		interoptest.Invalid("PromptRequest", `{"prompt":[]}`),
		interoptest.Invalid("PromptRequest", `{"sessionId":null,"prompt":[]}`),
		interoptest.Invalid("PromptRequest", `{"sessionId":"s"}`),
		interoptest.Invalid("PromptRequest", `{"sessionId":"s","prompt":[{"type":"text"}]}`),
		interoptest.Valid("PromptRequest", `{"sessionId":"s","prompt":[{"type":"text","text":""}]}`),
		interoptest.Valid("PromptResponse", `{"stopReason":"end_turn"}`),
		interoptest.Invalid("PromptResponse", `{"stopReason":"bored"}`),
		interoptest.Invalid("PromptResponse", `{}`),
		interoptest.Invalid("InitializeRequest", `{}`),
		interoptest.Valid("InitializeRequest", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}`),
		interoptest.Valid("SessionNotification", `{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","kind":"teleport","status":"pending"}}`),
		interoptest.Invalid("SessionNotification", `{"sessionId":"s","update":{"sessionUpdate":"tool_call","title":"x"}}`),
		interoptest.Valid("SessionNotification", `{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"c","priority":"urgent","status":"pending"}]}}`),
		interoptest.Invalid("SessionNotification", `{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":null,"size":1}}`),
		interoptest.Valid("SessionNotification", `{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":0,"size":1}}`),
		interoptest.Valid("RequestPermissionRequest", `{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[{"optionId":"o","name":"n","kind":"allow_once"}]}`),
		interoptest.Invalid("RequestPermissionRequest", `{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[{"optionId":"o","name":"n","kind":"allow_forever"}]}`),
		interoptest.Valid("CancelRequestNotification", `{"requestId":null}`),
		interoptest.Invalid("CancelRequestNotification", `{}`),
		interoptest.Valid("ContentBlock", `{"type":"text","text":"hi","annotations":{"audience":["user","robot"]}}`),
		interoptest.Invalid("PlanEntry", `{"content":"c","priority":"urgent","status":"pending"}`),
		interoptest.Valid("ContentBlock", `{"type":"text","text":"hi","_meta":"not an object"}`),
	})
}

// A null element of a list is refused, as the SDK's validators refuse it,
// except in a list whose invalid items the schema leaves out.
func TestNullListElements(t *testing.T) {
	interoptest.DecodeChecksAgree(t, 1, "../interop", schemaTypes, []interoptest.DecodeCase{
		interoptest.Invalid("PromptRequest", `{"sessionId":"s","prompt":[null]}`),
		interoptest.Invalid("PromptRequest", `{"sessionId":"s","prompt":[{"type":"text","text":"x"},null]}`),
		interoptest.Invalid("RequestPermissionRequest", `{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[null]}`),
		interoptest.Valid("SessionNotification", `{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[null,{"content":"b","priority":"high","status":"pending"}]}}`),
	})
	var n SessionNotification
	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[null,{"content":"b","priority":"high","status":"pending"}]}}`), &n))
	assert.Equal(t, []PlanEntry{{Content: "b", Priority: PlanEntryPriorityHigh, Status: PlanEntryStatusPending}}, n.Update.Value.(Plan).Entries)
	var r PromptRequest
	err := json.Unmarshal([]byte(`{"sessionId":"s","prompt":[{"type":"text","text":"x"},null]}`), &r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"prompt"[1] is null`)
}

// A member met twice is read as JSON.parse, encoding/json and the wire
// parse read it: the last one wins, for a union's discriminator and for a
// required member alike.
func TestRepeatedMembersLastWins(t *testing.T) {
	interoptest.DecodeChecksAgree(t, 1, "../interop", schemaTypes, []interoptest.DecodeCase{
		interoptest.Valid("ContentBlock", `{"type":"text","type":"image","data":"d","mimeType":"image/png"}`),
		interoptest.Invalid("ContentBlock", `{"type":"image","data":"d","mimeType":"image/png","type":"text"}`),
		interoptest.Invalid("PromptRequest", `{"sessionId":"s","sessionId":null,"prompt":[]}`),
		interoptest.Valid("PromptRequest", `{"sessionId":null,"sessionId":"s","prompt":[]}`),
		interoptest.Invalid("PromptRequest", `{"sessionId":"s","prompt":[],"prompt":null}`),
		interoptest.Valid("SessionNotification", `{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[],"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`),
	})
	var b ContentBlock
	require.NoError(t, json.Unmarshal([]byte(`{"type":"text","text":"t","type":"image","data":"d","mimeType":"image/png"}`), &b))
	assert.IsType(t, ImageContent{}, b.Value)
	var n SessionNotification
	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[],"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`), &n))
	assert.IsType(t, AgentMessageChunk{}, n.Update.Value)
	var r PromptRequest
	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"a","prompt":[],"sessionId":"b"}`), &r))
	assert.Equal(t, SessionID("b"), r.SessionID)
}

// A member's name matches exactly, as JSON.parse and the SDK's validators
// match it: a member whose name differs from a field's in case alone is
// one the type does not know (encoding/json would take it for the field),
// also when a member is met twice, which JSON.parse reads as its last.
func TestMemberNamesMatchExactly(t *testing.T) {
	cases := []struct{ def, json string }{
		{"PromptRequest", `{"sessionId":"a","SESSIONID":"b","prompt":[]}`},
		{"PromptRequest", `{"sessionId":"a","\u017fessionId":"b","prompt":[]}`},
		{"PromptRequest", `{"sessionId":"x","sessionId":"a","SessionId":"b","prompt":[]}`},
		{"ContentBlock", `{"type":"text","text":"a","TEXT":"b"}`},
		{"SessionNotification", `{"sessionId":"a","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","Text":"b"}}}`},
	}
	var valid []interoptest.DecodeCase
	for _, c := range cases {
		valid = append(valid, interoptest.Valid(c.def, c.json))
	}
	interoptest.DecodeChecksAgree(t, 1, "../interop", schemaTypes, valid)
	var r PromptRequest
	for _, c := range cases[:3] {
		r = PromptRequest{}
		require.NoError(t, json.Unmarshal([]byte(c.json), &r))
		assert.Equal(t, SessionID("a"), r.SessionID, c.json)
	}
	var b ContentBlock
	require.NoError(t, json.Unmarshal([]byte(cases[3].json), &b))
	assert.Equal(t, TextContent{Text: "a"}, b.Value)
	var n SessionNotification
	require.NoError(t, json.Unmarshal([]byte(cases[4].json), &n))
	assert.Equal(t, TextContent{Text: "a"}, n.Update.Value.(AgentMessageChunk).Content.Value)
}

// TestLenientMembers: what the schema reads leniently is read as the SDK
// reads it: a plan entry that does not decode is left out of the list, an
// audience that is not a Role too, and a tool call's kind the schema does
// not list reads as unset.
func TestLenientMembers(t *testing.T) {
	var n SessionNotification
	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[`+
		`{"content":"a","priority":"urgent","status":"pending"},{"content":"b","priority":"high","status":"pending"}]}}`), &n))
	assert.Equal(t, []PlanEntry{{Content: "b", Priority: PlanEntryPriorityHigh, Status: PlanEntryStatusPending}}, n.Update.Value.(Plan).Entries)

	var b ContentBlock
	require.NoError(t, json.Unmarshal([]byte(`{"type":"text","text":"hi","annotations":{"audience":["user","robot",3]}}`), &b))
	assert.Equal(t, []Role{RoleUser}, b.Value.(TextContent).Annotations.Audience)

	require.NoError(t, json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","kind":"teleport"}}`), &n))
	assert.Empty(t, n.Update.Value.(ToolCall).Kind)
}
