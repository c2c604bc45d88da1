package interop

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
	"github.com/acpkit/acprpc/internal/interoptest"
)

// The generated types on every message of the scenarios: each TypeScript
// scenario's wire log goes through acpv1 or acpv2 (decoded, encoded, and
// read by the SDK's validators the same way before and after), so the
// types are proved on what the SDK and the Go examples really send.

// typesOf are the Go types of the scenarios' messages, by method and
// member ("params", "notification", "result"). terminal/create keeps its
// v1 shape in the demo's v2 scenario, as src/schema-check.ts allows.
var typesOf = map[int]map[string]func() any{
	1: {
		"initialize params":                 func() any { return new(acpv1.InitializeRequest) },
		"initialize result":                 func() any { return new(acpv1.InitializeResponse) },
		"session/new params":                func() any { return new(acpv1.NewSessionRequest) },
		"session/new result":                func() any { return new(acpv1.NewSessionResponse) },
		"session/prompt params":             func() any { return new(acpv1.PromptRequest) },
		"session/prompt result":             func() any { return new(acpv1.PromptResponse) },
		"session/cancel notification":       func() any { return new(acpv1.CancelNotification) },
		"session/update notification":       func() any { return new(acpv1.SessionNotification) },
		"session/request_permission params": func() any { return new(acpv1.RequestPermissionRequest) },
		"session/request_permission result": func() any { return new(acpv1.RequestPermissionResponse) },
		"terminal/create params":            func() any { return new(acpv1.CreateTerminalRequest) },
		"terminal/create result":            func() any { return new(acpv1.CreateTerminalResponse) },
		"$/cancel_request notification":     func() any { return new(acpv1.CancelRequestNotification) },
	},
	2: {
		"initialize params":                 func() any { return new(acpv2.InitializeRequest) },
		"initialize result":                 func() any { return new(acpv2.InitializeResponse) },
		"session/new params":                func() any { return new(acpv2.NewSessionRequest) },
		"session/new result":                func() any { return new(acpv2.NewSessionResponse) },
		"session/prompt params":             func() any { return new(acpv2.PromptRequest) },
		"session/prompt result":             func() any { return new(acpv2.PromptResponse) },
		"session/close params":              func() any { return new(acpv2.CloseSessionRequest) },
		"session/close result":              func() any { return new(acpv2.CloseSessionResponse) },
		"session/cancel notification":       func() any { return new(acpv2.CancelSessionNotification) },
		"session/update notification":       func() any { return new(acpv2.UpdateSessionNotification) },
		"session/request_permission params": func() any { return new(acpv2.RequestPermissionRequest) },
		"session/request_permission result": func() any { return new(acpv2.RequestPermissionResponse) },
		"tool_call/cancel params":           func() any { return new(acpv2.CancelToolCallRequest) },
		"tool_call/cancel result":           func() any { return new(acpv2.CancelToolCallResponse) },
		"terminal/cancel params":            func() any { return new(acpv2.CancelTerminalRequest) },
		"terminal/cancel result":            func() any { return new(acpv2.CancelTerminalResponse) },
		"$/cancel_request notification":     func() any { return new(acpv2.CancelRequestNotification) },
	},
}

// checkTypes round-trips every message of a scenario's wire log through
// the generated types of ACP version v.
func checkTypes(t *testing.T, v int, name string, wire wireLog) {
	t.Helper()
	if len(wire) == 0 {
		return
	}
	msgs := make([]interoptest.GoldenMessage, len(wire))
	for i, e := range wire {
		msgs[i] = interoptest.GoldenMessage{Dir: e.Dir, Msg: e.Msg}
	}
	validator := interoptest.NewSchemaValidator(t, interopDir)
	n := interoptest.TypesRoundTrip(t, validator, v, name, msgs, func(method, member string) any {
		if f := typesOf[v][method+" "+member]; f != nil {
			return f()
		}
		return nil
	})
	assert.Positive(t, n, "%s: no message went through the generated types", name)
}
