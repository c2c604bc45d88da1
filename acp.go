package acprpc

import "encoding/json"

// This file is ACP's vocabulary as the library reads and writes it: the
// methods it acts on, the versions, the error codes and the cancellation
// markers. The rest of ACP's schema is the application's (acpv1, acpv2).

// JSON-RPC 2.0 and ACP error codes used on the wire, the codes the library
// answers with itself. They are acpv1.ErrorCodeParseError and its siblings
// (and v2's), untyped here so that they compare with Error.Code; the
// generated ErrorCode values name the rest of ACP's codes.
const (
	CodeParseError       = -32700 // the line is not JSON
	CodeInvalidRequest   = -32600 // not a JSON-RPC object, a batch, or an ID that cannot be carried
	CodeMethodNotFound   = -32601 // no such method, or a request for a $/ method
	CodeInvalidParams    = -32602 // params do not fit the method
	CodeInternalError    = -32603 // the handler failed or panicked
	CodeRequestCancelled = -32800 // the request was cancelled, by the peer or internally

	// CodeUnsupportedProtocolVersion is ACP's error for an initialize that
	// asks for a version below every version the agent supports. Its data
	// is {"requested": n, "supported": [...]}.
	CodeUnsupportedProtocolVersion = -32022
)

// Method names of the cancellation protocol, which the connection handles
// itself (a Router refuses to register them): MethodCancelRequest is
// acpv1.MethodCancelRequest (and v2's), and MethodLSPCancelRequest is LSP's
// spelling, read only with Options.AcceptLSPCancel.
const (
	MethodCancelRequest    = "$/cancel_request"
	MethodLSPCancelRequest = "$/cancelRequest"
)

// The ACP methods and stop reasons the library acts on. Applications use
// the generated ones (acpv1.MethodSessionPrompt, acpv2.StopReasonEndTurn,
// ...), which the root package cannot import: acpv1 and acpv2 import it.
const (
	methodInitialize        = "initialize"     // negotiates the version
	methodSessionCancel     = "session/cancel" // cancels its session's requests (params.sessionId)
	methodSessionClose      = "session/close"
	methodRequestPermission = "session/request_permission" // answered "cancelled" as soon as its turn is
	methodSessionPrompt     = "session/prompt"
	methodSessionNew        = "session/new" // this and the four below need initialize first
	methodSessionLoad       = "session/load"
	methodSessionResume     = "session/resume"
	methodSessionFork       = "session/fork"
	methodSessionList       = "session/list"
	methodSessionUpdate     = "session/update"
	methodToolCallCancel    = "tool_call/cancel" // v2: cancels one tool call
	methodTerminalCancel    = "terminal/cancel"  // v2: cancels one terminal
	stopReasonEndTurn       = "end_turn"
	stopReasonCancelled     = "cancelled"
)

// acpMethodNames are the method names ACP v1 and v2 define. A message
// naming one of them, as written without escapes, takes its Method from
// here: a request or notification then allocates nothing for its name.
var acpMethodNames = func() map[string]string {
	names := []string{
		"initialize", "authenticate", "$/cancel_request",
		"session/new", "session/load", "session/prompt", "session/cancel", "session/update",
		"session/request_permission", "session/set_mode", "session/set_config_option", "session/close",
		"session/list", "session/resume", "session/fork", "session/delete", "session/archive",
		"session/unarchive", "session/set_title", "session/status",
		"fs/read_text_file", "fs/write_text_file",
		"terminal/create", "terminal/output", "terminal/release", "terminal/wait_for_exit",
		"terminal/kill", "terminal/cancel", "tool_call/cancel",
		"auth/login", "auth/logout", "auth/status", "auth/status_update",
		"elicitation/create", "elicitation/complete", "mcp/message",
		"providers/list", "providers/set", "providers/disable", "proxy/initialize", "proxy/successor",
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()

// ProtocolVersion is an ACP protocol version: the integer that initialize
// negotiates.
type ProtocolVersion int

// The ACP versions this library knows the rules of.
const (
	ProtocolV1 ProtocolVersion = 1
	ProtocolV2 ProtocolVersion = 2
)

// ACPCancelMarkers returns the cancellation markers of ACP version v: the
// result that answers a cancelled request of each method instead of
// -32800. A cancelled permission request has the cancelled outcome in every
// version. In v1 (and for 0, a version not known yet) a cancelled prompt
// turn ends with stopReason "cancelled"; in v2 session/prompt has none,
// since a prompt is answered when it is inserted and a turn ends with an
// idle state_update, so a prompt cancelled before insertion is answered
// -32800. The map is new on each call, so a caller may add its own methods.
func ACPCancelMarkers(v ProtocolVersion) map[string]json.RawMessage {
	m := map[string]json.RawMessage{
		methodRequestPermission: json.RawMessage(`{"outcome":{"outcome":"cancelled"}}`),
	}
	if v < ProtocolV2 {
		m[methodSessionPrompt] = json.RawMessage(`{"stopReason":"cancelled"}`)
	}
	return m
}
