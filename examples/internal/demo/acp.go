// Package demo holds the pieces of the cascading-cancellation demo that its
// commands share: a small ACP agent, a small ACP client, a tap that records
// the wire between them, and the timeline that shows it.
//
// Only the parts of ACP's schema the demo uses are spelled out here; a real
// agent or client would use a full schema package.
package demo

import "strings"

// ACP method names used by the demo. session/cancel is acprpc's
// MethodSessionCancel.
const (
	MethodInitialize        = "initialize"
	MethodSessionNew        = "session/new"
	MethodSessionPrompt     = "session/prompt"
	MethodSessionUpdate     = "session/update"
	MethodRequestPermission = "session/request_permission"
	MethodTerminalCreate    = "terminal/create"
)

// The ACP versions the demo speaks. A client asks for one; the agent
// serves both.
const (
	ProtocolV1 = 1
	ProtocolV2 = 2
)

// Stop reasons of a prompt turn.
const (
	StopEndTurn   = "end_turn"
	StopCancelled = "cancelled"
	StopError     = "error" // v2: the work failed
)

// The permission options the agent offers, and the outcomes a client
// answers with: the user's selection, or "cancelled" for a cancelled turn.
const (
	OptionAllow      = "allow"
	OptionReject     = "reject"
	OutcomeSelected  = "selected"
	OutcomeCancelled = "cancelled"
)

// What the demo agent does in a turn: it asks permission for tool call
// ToolCallID and starts `sleep 30` in a terminal; a prompt containing
// SlowWord keeps it working until the turn is cancelled.
const (
	ToolCallID = "call_1"
	SlowWord   = "slow"
)

// Implementation names a peer in initialize.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeRequest is the client's initialize.
type InitializeRequest struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
}

// ClientCapabilities says which client methods an agent may call.
type ClientCapabilities struct {
	FS       FileSystemCapability `json:"fs"`
	Terminal bool                 `json:"terminal"`
}

// FileSystemCapability says whether the client serves fs/ methods.
type FileSystemCapability struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// InitializeResponse is the agent's answer to initialize.
type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []any             `json:"authMethods"`
	AgentInfo         *Implementation   `json:"agentInfo,omitempty"`
}

// AgentCapabilities says what the agent supports beyond the baseline.
type AgentCapabilities struct {
	LoadSession        bool               `json:"loadSession"`
	PromptCapabilities PromptCapabilities `json:"promptCapabilities"`
	MCPCapabilities    MCPCapabilities    `json:"mcpCapabilities"`
}

// PromptCapabilities lists the content a prompt may carry beyond text.
type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// MCPCapabilities lists the MCP transports the agent connects to.
type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// NewSessionRequest is session/new's params.
type NewSessionRequest struct {
	Cwd        string `json:"cwd"`
	MCPServers []any  `json:"mcpServers"`
}

// NewSessionResponse is session/new's result.
type NewSessionResponse struct {
	SessionID string `json:"sessionId"`
}

// ContentBlock is a piece of content; the demo uses text only.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// TextBlock returns a text content block.
func TextBlock(text string) ContentBlock { return ContentBlock{Type: "text", Text: text} }

// PromptRequest is session/prompt's params.
type PromptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

// Text returns the prompt's text blocks joined.
func (p *PromptRequest) Text() string {
	var parts []string
	for _, b := range p.Prompt {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// PromptResponse is session/prompt's result.
type PromptResponse struct {
	StopReason string `json:"stopReason"`
}

// SessionNotification is session/update's params.
type SessionNotification struct {
	SessionID string        `json:"sessionId"`
	Update    SessionUpdate `json:"update"`
}

// SessionUpdate is one update of a turn: a message chunk (v1 and v2), or,
// in v2, a state_update. v2's chunks carry the ID of the message they
// belong to; v1's do not.
type SessionUpdate struct {
	SessionUpdate string        `json:"sessionUpdate"`
	MessageID     string        `json:"messageId,omitempty"`
	Content       *ContentBlock `json:"content,omitempty"`
	State         string        `json:"state,omitempty"`      // v2 state_update: running, idle, ...
	StopReason    string        `json:"stopReason,omitempty"` // v2 idle state_update: why the work ended
}

// IsIdle reports whether the update is v2's idle state_update, which ends
// a session's foreground work.
func (u SessionUpdate) IsIdle() bool { return u.SessionUpdate == "state_update" && u.State == "idle" }

// ToolCallUpdate describes the tool call a permission request is about.
type ToolCallUpdate struct {
	ToolCallID string `json:"toolCallId"`
	Title      string `json:"title,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Status     string `json:"status,omitempty"`
}

// PermissionOption is one choice offered to the user.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// RequestPermissionRequest is session/request_permission's params.
type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCallUpdate     `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// RequestPermissionResponse is session/request_permission's result.
type RequestPermissionResponse struct {
	Outcome PermissionOutcome `json:"outcome"`
}

// PermissionOutcome is the user's choice, or "cancelled" for a cancelled
// turn.
type PermissionOutcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
}

// CreateTerminalRequest is terminal/create's params.
type CreateTerminalRequest struct {
	SessionID string   `json:"sessionId"`
	Command   string   `json:"command"`
	Args      []string `json:"args,omitempty"`
}

// CreateTerminalResponse is terminal/create's result.
type CreateTerminalResponse struct {
	TerminalID string `json:"terminalId"`
}
