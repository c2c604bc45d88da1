// Package acpmethods names the generated Go type of each message of ACP's
// methods, by version, method and member, for the tests that put a
// recorded wire through acpv1 and acpv2 (interoptest.TypesRoundTrip): the
// interop scenarios' and the real agents'. A method or member it does not
// list has no type here, and such a test fails on it rather than skip it.
package acpmethods

import (
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
)

// New returns a new value of the Go type of a message of ACP version:
// method's params ("params"), its notification's params ("notification"),
// its result ("result"), or an error answer's error object ("error", for
// any method); nil when none is listed.
func New(version int, method, member string) any {
	if member == "error" {
		return map[int]func() any{1: func() any { return new(acpv1.Error) }, 2: func() any { return new(acpv2.Error) }}[version]()
	}
	if f := types[version][method+" "+member]; f != nil {
		return f()
	}
	return nil
}

// types are the Go types of the messages, by method and member. v2 has no
// terminal/create: the demo's v2 scenario sends v1's, which
// interop/src/schema-check.ts checks against its v1 shape.
var types = map[int]map[string]func() any{
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
