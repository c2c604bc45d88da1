package demo

// The ACP v2 shapes the demo uses where they differ from v1's.

// InitializeRequestV2 is a v2 client's initialize: it names itself in info
// and its capabilities in capabilities. v2 has no terminal capability.
type InitializeRequestV2 struct {
	ProtocolVersion int            `json:"protocolVersion"`
	Info            Implementation `json:"info"`
	Capabilities    struct{}       `json:"capabilities"`
}

// InitializeResponseV2 is a v2 agent's answer to initialize.
type InitializeResponseV2 struct {
	ProtocolVersion int                 `json:"protocolVersion"`
	Info            Implementation      `json:"info"`
	Capabilities    AgentCapabilitiesV2 `json:"capabilities"`
}

// AgentCapabilitiesV2 says what a v2 agent supports: an empty session
// object means the baseline session methods.
type AgentCapabilitiesV2 struct {
	Session struct{} `json:"session"`
}

// PromptResponseV2 is a v2 session/prompt's result: the ID of the user
// message the prompt was inserted as. The turn's end is an idle
// state_update, not this answer.
type PromptResponseV2 struct {
	MessageID string `json:"messageId"`
}

// RequestPermissionRequestV2 is a v2 session/request_permission's params: a
// title of its own, and the tool call as its subject.
type RequestPermissionRequestV2 struct {
	SessionID string             `json:"sessionId"`
	Title     string             `json:"title"`
	Subject   PermissionSubject  `json:"subject"`
	Options   []PermissionOption `json:"options"`
}

// PermissionSubject is what a v2 permission request is about.
type PermissionSubject struct {
	Type     string         `json:"type"` // "tool_call"
	ToolCall ToolCallUpdate `json:"toolCall"`
}
