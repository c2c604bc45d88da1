package acpv2

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
	interoptest.SchemaRoundTrip(t, 2, "../interop", schemaTypes)
}

// TestDecodeChecks: v2's enums are open, and its required members are
// checked as v1's are, as the SDK's validators check them.
func TestDecodeChecks(t *testing.T) {
	interoptest.DecodeChecksAgree(t, 2, "../interop", schemaTypes, []interoptest.DecodeCase{
		interoptest.Valid("PromptRequest", `{"sessionId":"s","prompt":[{"type":"text","text":"x"}]}`),
		interoptest.Valid("PromptRequest", `{"sessionId":"s","prompt":[{"type":"text","text":"x"}],"futureMember":1}`),
		interoptest.Invalid("PromptRequest", `{"prompt":[{"type":"text","text":"x"}]}`),
		interoptest.Invalid("CancelRequestNotification", `{"requestId":null}`),
		interoptest.Valid("CancelRequestNotification", `{"requestId":"r"}`),
		interoptest.Valid("RequestPermissionRequest", `{"sessionId":"s","title":"t","options":[{"optionId":"o","name":"n","kind":"_vendor_kind"}]}`),
		interoptest.Invalid("RequestPermissionRequest", `{"sessionId":"s","title":"t","options":[{"optionId":"o","name":"n"}]}`),
		interoptest.Invalid("RequestPermissionRequest", `{"sessionId":"s","options":[]}`),
	})
}

// A null element of a list is refused, as the SDK's validators refuse it,
// and a member met twice is read as its last, as JSON.parse reads it: a
// union's discriminator and a required member alike.
func TestNullListElementsAndRepeatedMembers(t *testing.T) {
	interoptest.DecodeChecksAgree(t, 2, "../interop", schemaTypes, []interoptest.DecodeCase{
		interoptest.Invalid("PromptRequest", `{"sessionId":"s","prompt":[null]}`),
		interoptest.Invalid("RequestPermissionRequest", `{"sessionId":"s","title":"t","options":[null]}`),
		interoptest.Valid("ContentBlock", `{"type":"text","type":"image","data":"d","mimeType":"image/png"}`),
		interoptest.Invalid("ContentBlock", `{"type":"image","data":"d","mimeType":"image/png","type":"text"}`),
		interoptest.Invalid("PromptRequest", `{"sessionId":"s","sessionId":null,"prompt":[{"type":"text","text":"x"}]}`),
		interoptest.Valid("PromptRequest", `{"sessionId":null,"sessionId":"s","prompt":[{"type":"text","text":"x"}]}`),
	})
	var b ContentBlock
	require.NoError(t, json.Unmarshal([]byte(`{"type":"text","text":"t","type":"image","data":"d","mimeType":"image/png"}`), &b))
	assert.IsType(t, ImageContent{}, b.Value)
}

// A member's name matches exactly, as JSON.parse and the SDK's validators
// match it: one whose name differs from a field's in case alone is a
// member the type does not know.
func TestMemberNamesMatchExactly(t *testing.T) {
	in := `{"sessionId":"a","SESSIONID":"b","prompt":[{"type":"text","text":"x","TEXT":"y"}]}`
	interoptest.DecodeChecksAgree(t, 2, "../interop", schemaTypes, []interoptest.DecodeCase{interoptest.Valid("PromptRequest", in)})
	var r PromptRequest
	require.NoError(t, json.Unmarshal([]byte(in), &r))
	assert.Equal(t, SessionID("a"), r.SessionID)
	assert.Equal(t, TextContent{Text: "x"}, r.Prompt[0].Value)
}
