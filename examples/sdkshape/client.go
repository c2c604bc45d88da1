package sdkshape

import (
	"context"
	"errors"

	"github.com/acpkit/acprpc"
)

// The few ACP v1 types the example's typed calls use; an SDK has them all,
// as the acpv1 package does.
type (
	// InitializeRequest opens the connection.
	InitializeRequest struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	// InitializeResponse is the agent's answer to it.
	InitializeResponse struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	// NewSessionRequest opens a session.
	NewSessionRequest struct {
		Cwd        string `json:"cwd"`
		McpServers []any  `json:"mcpServers"`
	}
	// NewSessionResponse names the session.
	NewSessionResponse struct {
		SessionID string `json:"sessionId"`
	}
	// ContentBlock is one part of a prompt (text only here).
	ContentBlock struct {
		Type string `json:"type"`
		Text string `json:"text,omitempty"`
	}
	// PromptRequest starts a turn.
	PromptRequest struct {
		SessionID string         `json:"sessionId"`
		Prompt    []ContentBlock `json:"prompt"`
	}
	// PromptResponse ends it, with its stop reason.
	PromptResponse struct {
		StopReason string `json:"stopReason"`
	}
)

// StopReasonCancelled is the stop reason of a cancelled turn.
const StopReasonCancelled = "cancelled"

// Initialize is the client's first call.
func (c *Connection) Initialize(ctx context.Context, p InitializeRequest) (InitializeResponse, error) {
	return SendRequest[InitializeResponse](ctx, c, "initialize", p)
}

// NewSession opens a session.
func (c *Connection) NewSession(ctx context.Context, p NewSessionRequest) (NewSessionResponse, error) {
	return SendRequest[NewSessionResponse](ctx, c, "session/new", p)
}

// Prompt runs a turn. When ctx ends before the turn does, acprpc cancels
// the turn the ACP v1 way: session/cancel for its session (which also
// answers the agent's pending permission requests with the cancelled
// outcome), then the agent's answer, normally "cancelled", is awaited for
// Options.CancelWait. An agent that does not answer by then has its turn
// reported "cancelled" all the same.
func (c *Connection) Prompt(ctx context.Context, p PromptRequest) (PromptResponse, error) {
	res, err := acprpc.CallFor[PromptResponse](ctx, c.conn, "session/prompt", p, acprpc.WaitAfterCancel(c.cancelWait))
	if err != nil && ctx.Err() != nil && errors.Is(err, acprpc.ErrCancelled) {
		return PromptResponse{StopReason: StopReasonCancelled}, nil
	}
	return res, fromCall(err)
}

// Cancel cancels the session's turn: session/cancel to the agent, and the
// agent's permission requests of the session answered as cancelled here.
func (c *Connection) Cancel(ctx context.Context, sessionID string) error {
	return fromCall(acprpc.CancelSession(ctx, c.conn, sessionID))
}

// ProtocolVersion is the ACP version the connection speaks: always v1.
func (c *Connection) ProtocolVersion() int { return int(c.conn.ProtocolVersion()) }
