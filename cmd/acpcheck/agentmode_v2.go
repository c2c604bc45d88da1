package main

import (
	"context"
	"fmt"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv2"
)

// How a v2 prompt or work of acpcheck agent ended, besides the ways a v1
// turn ends.
const (
	turnByEntityCancel = "tool_call/cancel"
	turnWithdrawn      = "withdrawn" // a prompt held behind running work, cancelled before insertion
)

// v2 is acpcheck agent's ACP v2 handler: the turn of v1 in v2's shape.
// session/prompt is answered with the prompt's messageId as soon as it is
// inserted, and the work runs on as the session's foreground work: it
// reports state_update running, echoes the prompt, streams a message and
// its tool call (cancellable by tool_call/cancel), asks permission, and
// ends with one idle state_update. A prompt that comes while the session
// works is held until that work ends; cancelled before (by $/cancel_request
// or session/cancel) it is answered -32800, never inserted. v2 offers no
// terminal and no file read to an agent: the permission request is the
// request the work keeps open.
func (a *checkAgent) v2() acprpc.Handler {
	r := acprpc.NewRouter()
	r.Register(acpv2.MethodInitialize, acprpc.RequestHandler(a.initializeV2))
	r.Register(acpv2.MethodSessionNew, acprpc.RequestHandler(func(context.Context, acpv2.NewSessionRequest) (acpv2.NewSessionResponse, error) {
		return acpv2.NewSessionResponse{SessionID: acpv2.SessionID(a.newSessionID())}, nil
	}))
	r.Register(acpv2.MethodSessionPrompt, acprpc.RequestHandler(a.promptV2))
	// acprpc has cancelled the session's work and held prompts by the time
	// these run, and answers session/close once the work's idle is out.
	r.Register(acpv2.MethodSessionCancel, acprpc.NotificationHandler(func(context.Context, acpv2.CancelSessionNotification) {}))
	r.Register(acpv2.MethodSessionClose, acprpc.RequestHandler(func(context.Context, acpv2.CloseSessionRequest) (acpv2.CloseSessionResponse, error) {
		return acpv2.CloseSessionResponse{}, nil
	}))
	return r
}

func (a *checkAgent) initializeV2(_ context.Context, p acpv2.InitializeRequest) (acpv2.InitializeResponse, error) {
	a.met(&implementation{Name: p.Info.Name, Version: p.Info.Version}, false, false)
	return acpv2.InitializeResponse{
		ProtocolVersion: acpv2.Version,
		Info:            acpv2.Implementation{Name: "acpcheck", Version: version},
		Capabilities:    acpv2.AgentCapabilities{Session: &acpv2.SessionCapabilities{}},
	}, nil
}

// promptV2 inserts the prompt once the session's earlier work, if any, has
// ended, answers its messageId and runs its work.
func (a *checkAgent) promptV2(ctx context.Context, p acpv2.PromptRequest) (acpv2.PromptResponse, error) {
	waitFor(a.initialized, a.o.Timeout)
	session := string(p.SessionID)
	if earlier := a.working(session); earlier != nil {
		select {
		case <-earlier.Done():
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		// Not inserted: acprpc answers -32800, v2's answer for a prompt
		// cancelled before its insertion.
		a.ended(turnWithdrawn)
		return acpv2.PromptResponse{}, context.Cause(ctx)
	}
	work, _ := acprpc.WorkFromContext(ctx)
	messageID := a.startWork(session, work)
	t := &agentWork{a: a, conn: acprpc.ConnFromContext(ctx), work: work, session: p.SessionID, reply: messageID + "-reply"}
	a.begin()
	go func() {
		how := turnCut
		defer func() { a.ended(how) }()
		how = t.run(p, messageID)
	}()
	return acpv2.PromptResponse{MessageID: acpv2.MessageID(messageID)}, nil
}

// working returns the session's foreground work while it runs.
func (a *checkAgent) working(session string) *acprpc.Work {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.works[session]
	if w == nil {
		return nil
	}
	select {
	case <-w.Done():
		return nil
	default:
		return w
	}
}

// startWork records the session's new work and names its prompt's message.
func (a *checkAgent) startWork(session string, w *acprpc.Work) (messageID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.works[session] = w
	a.messages++
	return fmt.Sprintf("acpcheck-msg-%d", a.messages)
}

// agentWork is one v2 foreground work of acpcheck agent.
type agentWork struct {
	a       *checkAgent
	conn    *acprpc.Conn
	work    *acprpc.Work
	session acpv2.SessionID
	reply   string // the messageId of acpcheck's messages
}

// run does the work and ends it with its idle state_update; it returns
// how the work ended.
func (t *agentWork) run(p acpv2.PromptRequest, messageID string) string {
	o := t.a.o
	ctx := t.work.Context()
	t.update(ctx, acpv2.StateUpdate{Value: acpv2.RunningStateUpdate{}})
	for _, block := range p.Prompt { // the prompt, echoed as the inserted user message
		t.update(ctx, acpv2.UserMessageChunk{MessageID: acpv2.MessageID(messageID), Content: block})
	}
	t.say(ctx, fmt.Sprintf("acpcheck: this work waits for you to cancel it (session/cancel, or tool_call/cancel on its tool call); it ends by itself in %s.", o.CancelWithin))
	// The tool call is cancellable until its final update: tool_call/cancel
	// ends toolCtx, and with it the permission request, which acpcheck then
	// cancels with $/cancel_request, as it does for session/cancel (the
	// work's context) and at the end of CancelWithin.
	toolCtx, toolDone := t.conn.CancellableToolCall(ctx, string(t.session), agentToolCallID)
	defer toolDone()
	t.update(ctx, agentToolCallV2(acpv2.ToolCallStatusPending, true))
	permCtx, stopPerm := context.WithCancel(toolCtx)
	defer stopPerm()
	permDone := make(chan struct{})
	go func() {
		defer close(permDone)
		_, _ = acprpc.CallFor[acpv2.RequestPermissionResponse](permCtx, t.conn, acpv2.MethodSessionRequestPermission,
			acpv2.RequestPermissionRequest{SessionID: t.session, Title: "acpcheck: allow a tool that waits for your cancel?",
				Subject: acpv2.RequestPermissionSubject{Value: acpv2.ToolCallPermissionSubject{ToolCall: agentToolCallV2(acpv2.ToolCallStatusPending, false)}},
				Options: agentPermissionOptionsV2}, acprpc.WaitAfterCancel(o.CancelWait))
	}()

	bound := time.NewTimer(o.CancelWithin)
	defer bound.Stop()
	how := turnNotCancelled
	select {
	case <-toolCtx.Done():
		how = cancelCause(toolCtx)
	case <-bound.C:
	}
	stopPerm()
	<-permDone // the call waits at most CancelWait after its cancel
	toolDone()
	if how == turnCut && t.conn.Err() != nil {
		return how // nobody to tell
	}
	final, stop := acpv2.ToolCallStatusCancelled, string(acpv2.StopReasonCancelled)
	switch how {
	case turnNotCancelled:
		final, stop = acpv2.ToolCallStatusCompleted, string(acpv2.StopReasonEndTurn)
	case turnByEntityCancel:
		// Cancelling a tool call leaves the foreground work to the agent:
		// with nothing more to do, it ends end_turn.
		stop = string(acpv2.StopReasonEndTurn)
	}
	// The work's context may have ended; these updates are still its own,
	// and go out before its idle state_update.
	after := context.WithoutCancel(ctx)
	t.update(after, agentToolCallV2(final, false))
	t.say(after, "acpcheck: the work ended: "+how+".")
	_ = t.work.End(stop) // a cancelled work ends "cancelled" whatever stop says
	return how
}

// agentToolCallV2 is the work's tool call with status; cancellable, it
// advertises capabilities.cancel, and no longer once final.
func agentToolCallV2(status acpv2.ToolCallStatus, cancellable bool) acpv2.ToolCallUpdate {
	u := acpv2.ToolCallUpdate{ToolCallID: agentToolCallID, Title: "acpcheck: a tool that waits for your cancel",
		Kind: acpv2.ToolKindExecute, Status: status, Capabilities: &acpv2.ToolCallCapabilities{}}
	if cancellable {
		u.Capabilities.Cancel = &acpv2.ToolCallCancelCapabilities{}
	}
	return u
}

var agentPermissionOptionsV2 = []acpv2.PermissionOption{
	{OptionID: "allow", Name: "Allow once", Kind: acpv2.PermissionOptionKindAllowOnce},
	{OptionID: "reject", Name: "Reject", Kind: acpv2.PermissionOptionKindRejectOnce},
}

// say sends an agent_message_chunk of acpcheck's reply.
func (t *agentWork) say(ctx context.Context, text string) {
	t.update(ctx, acpv2.AgentMessageChunk{MessageID: acpv2.MessageID(t.reply), Content: acpv2.ContentBlock{Value: acpv2.TextContent{Text: text}}})
}

func (t *agentWork) update(ctx context.Context, u acpv2.SessionUpdateVariant) {
	_ = t.conn.Notify(ctx, acpv2.MethodSessionUpdate, acpv2.UpdateSessionNotification{SessionID: t.session, Update: acpv2.SessionUpdate{Value: u}})
}
