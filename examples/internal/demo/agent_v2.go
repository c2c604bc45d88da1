package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv2"
)

// v2 is the agent's ACP v2 handler. The turn is v1's, in v2's form:
// session/prompt is answered with the prompt's messageId once it is
// inserted, and the turn runs on as the session's foreground work, which
// reports state_update running, echoes the prompt, and ends with an idle
// state_update carrying its stop reason. A prompt that arrives while the
// session works is held until that work ends; cancelled before that (by
// $/cancel_request or session/cancel) it is answered -32800, never
// inserted. v2 has no terminal/create and no terminal capability: the turn
// still sends it, in its v1 shape, as its second nested request. A slow
// turn's tool call advertises capabilities.cancel, and tool_call/cancel ends
// it (see turn.run).
func (a *Agent) v2() acprpc.Handler {
	r := acprpc.NewRouter()
	r.Register(acpv2.MethodInitialize, acprpc.RequestHandler(a.initializeV2))
	r.Register(acpv2.MethodSessionNew, acprpc.RequestHandler(func(_ context.Context, p acpv2.NewSessionRequest) (acpv2.NewSessionResponse, error) {
		return acpv2.NewSessionResponse{SessionID: acpv2.SessionID(a.newSession(string(p.Cwd)))}, nil
	}))
	r.Register(acpv2.MethodSessionPrompt, acprpc.RequestHandler(a.promptV2))
	r.Register(acpv2.MethodSessionClose, acprpc.RequestHandler(a.closeSession))
	r.Register(acpv2.MethodSessionCancel, acprpc.NotificationHandler(func(_ context.Context, p acpv2.CancelSessionNotification) {
		a.sessionCancelled(string(p.SessionID))
	}))
	return r
}

func (a *Agent) initializeV2(context.Context, acpv2.InitializeRequest) (acpv2.InitializeResponse, error) {
	return acpv2.InitializeResponse{
		ProtocolVersion: ProtocolV2,
		Info:            acpv2.Implementation{Name: AgentName, Version: "0.1.0"},
		Capabilities:    acpv2.AgentCapabilities{Session: &acpv2.SessionCapabilities{}},
	}, nil
}

// The tool call the agent asks permission for, and the options it offers.
var (
	toolCallV2 = acpv2.ToolCallUpdate{ToolCallID: ToolCallID, Title: "Run `sleep 30`",
		Kind: acpv2.ToolKindExecute, Status: acpv2.ToolCallStatusPending}
	permissionOptionsV2 = []acpv2.PermissionOption{
		{OptionID: OptionAllow, Name: "Allow once", Kind: acpv2.PermissionOptionKindAllowOnce},
		{OptionID: OptionReject, Name: "Reject", Kind: acpv2.PermissionOptionKindRejectOnce},
	}
)

// promptV2 inserts the prompt and starts its work, once the session's
// earlier work, if any, has ended.
func (a *Agent) promptV2(ctx context.Context, p acpv2.PromptRequest) (acpv2.PromptResponse, error) {
	if !a.known(string(p.SessionID)) {
		return acpv2.PromptResponse{}, unknownSession(string(p.SessionID))
	}
	req, _ := acprpc.RequestFromContext(ctx)
	log := a.log.With("session", p.SessionID, "prompt", req.ID.String())
	if earlier := a.working(string(p.SessionID)); earlier != nil {
		log.Info("prompt held: the session is working")
		select {
		case <-earlier.Done():
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		// Not inserted: acprpc answers -32800, v2's answer for a prompt
		// cancelled before insertion.
		log.Info("prompt cancelled before it was inserted", "cause", context.Cause(ctx))
		return acpv2.PromptResponse{}, context.Cause(ctx)
	}
	work, _ := acprpc.WorkFromContext(ctx)
	messageID := a.startWork(string(p.SessionID), work)
	t := &turn{conn: acprpc.ConnFromContext(ctx), sessionID: string(p.SessionID), log: log, v2: true,
		messageID: messageID + "_reply", confirmWait: a.ConfirmWait}
	a.turns.Go(func() { t.runV2(work, p, messageID) })
	return acpv2.PromptResponse{MessageID: acpv2.MessageID(messageID)}, nil
}

// working returns the session's foreground work while it runs.
func (a *Agent) working(sessionID string) *acprpc.Work {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[sessionID]
	if s == nil || s.work == nil {
		return nil
	}
	select {
	case <-s.work.Done():
		return nil
	default:
		return s.work
	}
}

// startWork records the session's new work and numbers the prompt's
// message.
func (a *Agent) startWork(sessionID string, w *acprpc.Work) (messageID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[sessionID]
	s.work = w
	s.messages++
	return fmt.Sprintf("msg_%d", s.messages)
}

// runV2 is a v2 turn's foreground work, after its prompt's answer.
func (t *turn) runV2(work *acprpc.Work, p acpv2.PromptRequest, messageID string) {
	ctx := work.Context()
	text := promptText(p.Prompt)
	t.log.Info("turn started", "text", text, "messageId", messageID)
	t.updateV2(ctx, acpv2.StateUpdate{Value: acpv2.RunningStateUpdate{}})
	for _, block := range p.Prompt { // the prompt, echoed as the inserted user message
		t.updateV2(ctx, acpv2.UserMessageChunk{MessageID: acpv2.MessageID(messageID), Content: block})
	}
	stopReason, err := t.run(ctx, text, true)
	switch {
	case errors.Is(err, errAbandoned):
		return // the work ended with the connection: there is no one to tell
	case err != nil:
		t.log.Info("turn failed", "error", err)
		stopReason = StopError
	}
	if err := work.End(stopReason); err != nil {
		t.log.Debug("the work had already ended", "error", err) // acprpc ended it after its grace period
	}
	t.log.Info("turn ended", "stopReason", stopReason)
}

// closeSession frees a session. acprpc has cancelled its work and held
// prompts before this runs, and answers only once the work's idle
// state_update is out.
func (a *Agent) closeSession(_ context.Context, p acpv2.CloseSessionRequest) (acpv2.CloseSessionResponse, error) {
	a.closed(string(p.SessionID))
	return acpv2.CloseSessionResponse{}, nil
}

// closed frees a session that session/close closed, in either version.
func (a *Agent) closed(sessionID string) {
	a.mu.Lock()
	delete(a.sessions, sessionID)
	a.mu.Unlock()
	a.log.Info("session closed", "session", sessionID)
}
