package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
)

// AgentName is what the demo agent calls itself in initialize.
const AgentName = "acprpc-demo-agent"

// confirmWait is how long the agent waits, after its turn is cancelled, for
// the client to answer the requests it cancelled (ACP's "graceful
// cancellation"), so the turn ends after them, as in the specification's
// cascading flow. It stays below acprpc.DefaultCancelGrace, which would
// otherwise answer the prompt (v1) or end the work (v2) for the agent.
const confirmWait = time.Second

// Agent is the demo's ACP agent, an acprpc.Handler for ACP v1 and v2 on one
// connection: a VersionRouter with a handler for each, so the Conn
// negotiates the version the client asks for. Each prompt turn streams a
// message, then asks the client, concurrently, for permission to run a tool
// and for a terminal, with the turn's context: cancelling the turn cancels
// both requests, each with its own $/cancel_request. In v1 the turn ends
// with the prompt's answer; in v2 the prompt is answered with its messageId
// at once and the turn, the session's foreground work, ends with an idle
// state_update (see agent_v2.go).
type Agent struct {
	// ConfirmWait is how long a cancelled turn waits for the client to
	// answer the requests the cancel cut short, so that it ends after
	// them, as in ACP's cascading flow. NewAgent sets it to one second;
	// zero ends the turn at once, as agents that do not wait do. Set it
	// before the agent serves.
	ConfirmWait time.Duration

	log     *slog.Logger
	handler acprpc.VersionRouter

	mu       sync.Mutex
	sessions map[string]*session
	nextID   int
	terminal bool // the v1 client offers terminal/create

	turns sync.WaitGroup
}

// session is what the agent keeps of a session.
type session struct {
	work     *acprpc.Work // v2: its foreground work, while it runs
	messages int          // v2: messages numbered so far
}

// NewAgent returns an agent that logs to log, which may be nil.
func NewAgent(log *slog.Logger) *Agent {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{ConfirmWait: confirmWait, log: log, sessions: make(map[string]*session)}
	a.handler = acprpc.VersionRouter{V1: a.v1(), V2: a.v2()}
	return a
}

// v1 is the agent's ACP v1 handler.
func (a *Agent) v1() acprpc.Handler {
	r := acprpc.NewRouter()
	r.Register(acpv1.MethodInitialize, acprpc.RequestHandler(a.initializeV1))
	r.Register(acpv1.MethodSessionNew, acprpc.RequestHandler(func(_ context.Context, p acpv1.NewSessionRequest) (acpv1.NewSessionResponse, error) {
		return acpv1.NewSessionResponse{SessionID: acpv1.SessionID(a.newSession(p.Cwd))}, nil
	}))
	r.Register(acpv1.MethodSessionPrompt, acprpc.RequestHandler(a.promptV1))
	r.Register(acpv1.MethodSessionCancel, acprpc.NotificationHandler(func(_ context.Context, p acpv1.CancelNotification) {
		a.sessionCancelled(string(p.SessionID))
	}))
	r.Register(acpv1.MethodSessionClose, acprpc.RequestHandler(func(_ context.Context, p acpv1.CloseSessionRequest) (acpv1.CloseSessionResponse, error) {
		a.closed(string(p.SessionID))
		return acpv1.CloseSessionResponse{}, nil
	}))
	return r
}

// Handle serves the client's requests and notifications with the handler of
// the connection's version.
func (a *Agent) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	return a.handler.Handle(ctx, req)
}

// ProtocolVersions are the ACP versions the agent serves: 1 and 2.
func (a *Agent) ProtocolVersions() []acprpc.ProtocolVersion { return a.handler.ProtocolVersions() }

// Wait returns once no prompt turn is running. Call it after the connection
// has closed, when every turn's context has ended.
func (a *Agent) Wait() { a.turns.Wait() }

func (a *Agent) initializeV1(_ context.Context, p acpv1.InitializeRequest) (acpv1.InitializeResponse, error) {
	a.mu.Lock()
	a.terminal = p.ClientCapabilities.Terminal
	a.mu.Unlock()
	return acpv1.InitializeResponse{
		ProtocolVersion: ProtocolV1,
		AgentInfo:       &acpv1.Implementation{Name: AgentName, Version: "0.1.0"},
		// session/close: acprpc cancels the session's turn before the
		// handler runs, as session/cancel does, and answers once the
		// requests it cancelled are answered.
		AgentCapabilities: acpv1.AgentCapabilities{SessionCapabilities: acpv1.SessionCapabilities{Close: &acpv1.SessionCloseCapabilities{}}},
	}, nil
}

// newSession creates a session (session/new, in either version) and
// returns its ID.
func (a *Agent) newSession(cwd string) string {
	a.mu.Lock()
	a.nextID++
	id := fmt.Sprintf("sess_%d", a.nextID)
	a.sessions[id] = &session{}
	a.mu.Unlock()
	a.log.Info("session created", "session", id, "cwd", cwd)
	return id
}

// sessionCancelled sees session/cancel go by: acprpc has already cancelled
// the session's turn by the time it runs.
func (a *Agent) sessionCancelled(sessionID string) {
	a.log.Info("session/cancel received", "session", sessionID)
}

// known reports whether the session exists.
func (a *Agent) known(sessionID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[sessionID] != nil
}

func unknownSession(sessionID string) error {
	return acprpc.NewError(acprpc.CodeInvalidParams, "Invalid params: unknown session "+sessionID)
}

// promptV1 runs a v1 turn. It honours ctx: whatever ended it
// (session/cancel, $/cancel_request on the prompt, or a cancelled answer
// from the client), it flushes a last update and answers
// {"stopReason":"cancelled"} itself, never an error.
func (a *Agent) promptV1(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
	a.turns.Add(1)
	defer a.turns.Done()
	req, _ := acprpc.RequestFromContext(ctx)
	a.mu.Lock()
	terminal := a.terminal
	a.mu.Unlock()
	sessionID := string(p.SessionID)
	if !a.known(sessionID) {
		return acpv1.PromptResponse{}, unknownSession(sessionID)
	}
	t := &turn{conn: acprpc.ConnFromContext(ctx), sessionID: sessionID, confirmWait: a.ConfirmWait,
		log: a.log.With("session", sessionID, "prompt", req.ID.String())}
	text := promptText(p.Prompt)
	t.log.Info("turn started", "text", text)
	stopReason, err := t.run(ctx, text, terminal)
	if err != nil {
		return acpv1.PromptResponse{}, err
	}
	return acpv1.PromptResponse{StopReason: acpv1.StopReason(stopReason)}, nil
}

// The tool call the agent asks permission for, and the options it offers.
var (
	toolCallV1 = acpv1.ToolCallUpdate{ToolCallID: ToolCallID, Title: "Run `sleep 30`",
		Kind: acpv1.ToolKindExecute, Status: acpv1.ToolCallStatusPending}
	permissionOptionsV1 = []acpv1.PermissionOption{
		{OptionID: OptionAllow, Name: "Allow once", Kind: acpv1.PermissionOptionKindAllowOnce},
		{OptionID: OptionReject, Name: "Reject", Kind: acpv1.PermissionOptionKindRejectOnce},
	}
)

// turn is one prompt turn in progress.
type turn struct {
	conn        *acprpc.Conn
	sessionID   string
	log         *slog.Logger
	v2          bool
	messageID   string        // v2: the agent message its chunks belong to
	confirmWait time.Duration // see Agent.ConfirmWait
	toolDone    func()        // v2, a slow turn: ends its cancellable tool call
}

// errAbandoned ends a turn whose connection has closed: there is nobody to
// tell.
var errAbandoned = errors.New("the connection closed")

// run does a turn's work under ctx and returns its stop reason: the same
// work in both versions, told apart only by the shapes of the permission
// request and the updates, and by whether terminal/create is sent. A
// cancelled turn flushes a last update and returns StopCancelled; a turn
// whose connection closed returns ctx's error.
func (t *turn) run(ctx context.Context, text string, wantTerminal bool) (string, error) {
	slow := strings.Contains(strings.ToLower(text), SlowWord)
	// (1) Say something, so the client shows the turn is under way. A slow
	// v2 turn also shows its tool call, which the client may cancel on its
	// own (tool_call/cancel): toolCtx ends then, and with it what the tool
	// call waits on.
	t.say(ctx, "Looking into it: I need your permission and a terminal.")
	toolCtx := ctx
	if t.v2 && slow {
		var done func()
		toolCtx, done = t.conn.CancellableToolCall(ctx, t.sessionID, ToolCallID)
		t.toolDone = done
		defer done()
		cancellable := toolCallV2
		cancellable.Capabilities = &acpv2.ToolCallCapabilities{Cancel: &acpv2.ToolCallCancelCapabilities{}}
		t.updateV2(ctx, cancellable)
	}

	// (2) Two requests to the client at once, both under the turn's context.
	// stop also ends the turn early when the client says the turn is over
	// (a cancelled permission outcome): the other request is then cancelled
	// too.
	tctx, stop := context.WithCancel(toolCtx)
	defer stop()
	var (
		wg               sync.WaitGroup
		perm             permission
		term             acpv1.CreateTerminalResponse
		permErr, termErr error
		graceful         = acprpc.WaitAfterCancel(t.confirmWait)
	)
	wg.Go(func() {
		perm, permErr = t.askPermission(tctx, graceful)
		if permErr == nil && perm.cancelled {
			stop()
		}
	})
	if wantTerminal {
		wg.Go(func() {
			// v2 has no terminal/create: the demo sends v1's, on purpose.
			term, termErr = acprpc.CallFor[acpv1.CreateTerminalResponse](tctx, t.conn, acpv1.MethodTerminalCreate,
				acpv1.CreateTerminalRequest{SessionID: acpv1.SessionID(t.sessionID), Command: "sleep", Args: []string{"30"}}, graceful)
		})
	}
	wg.Wait()

	// (3) Both are answered. Check why before anything else: the cause is
	// what tells a cancelled turn from a failed one.
	if ctx.Err() == nil && toolCtx.Err() != nil {
		return t.toolCancelled(ctx)
	}
	if ctx.Err() != nil || cancelledAnswer(perm, permErr, termErr) {
		return t.cancelled(ctx)
	}
	if permErr != nil {
		return "", fmt.Errorf("asking permission: %w", permErr)
	}
	if termErr != nil {
		return "", fmt.Errorf("creating a terminal: %w", termErr)
	}
	if perm.optionID != OptionAllow {
		t.say(ctx, "Permission denied: I will not run the tool.")
		return StopEndTurn, nil
	}
	if !wantTerminal {
		term.TerminalID = "(none: the client has no terminals)"
	}
	if slow {
		t.say(ctx, "Permission granted; terminal "+string(term.TerminalID)+" runs `sleep 30`. This will take a while.")
		<-toolCtx.Done()
		if ctx.Err() == nil {
			return t.toolCancelled(ctx)
		}
		return t.cancelled(ctx)
	}
	t.say(ctx, "Permission granted; terminal "+string(term.TerminalID)+" runs `sleep 30`. Done.")
	t.log.Info("turn ended", "stopReason", StopEndTurn)
	return StopEndTurn, nil
}

// permission is the client's answer to the permission request, in either
// version: the option selected, or the cancelled outcome.
type permission struct {
	optionID  string
	cancelled bool
}

// askPermission asks the client for permission to run the tool call, in
// the connection's version.
func (t *turn) askPermission(ctx context.Context, opts ...acprpc.CallOption) (permission, error) {
	if t.v2 {
		res, err := acprpc.CallFor[acpv2.RequestPermissionResponse](ctx, t.conn, acpv2.MethodSessionRequestPermission,
			acpv2.RequestPermissionRequest{
				SessionID: acpv2.SessionID(t.sessionID),
				Title:     "Run `sleep 30`?",
				Subject:   acpv2.RequestPermissionSubject{Value: acpv2.ToolCallPermissionSubject{ToolCall: toolCallV2}},
				Options:   permissionOptionsV2,
			}, opts...)
		switch o := res.Outcome.Value.(type) {
		case acpv2.SelectedPermissionOutcome:
			return permission{optionID: string(o.OptionID)}, err
		case acpv2.CancelledPermissionOutcome:
			return permission{cancelled: true}, err
		}
		return permission{}, err
	}
	res, err := acprpc.CallFor[acpv1.RequestPermissionResponse](ctx, t.conn, acpv1.MethodSessionRequestPermission,
		acpv1.RequestPermissionRequest{SessionID: acpv1.SessionID(t.sessionID), ToolCall: toolCallV1, Options: permissionOptionsV1}, opts...)
	switch o := res.Outcome.Value.(type) {
	case acpv1.SelectedPermissionOutcome:
		return permission{optionID: string(o.OptionID)}, err
	case acpv1.CancelledPermissionOutcome:
		return permission{cancelled: true}, err
	}
	return permission{}, err
}

// cancelledAnswer reports whether the client ended the turn through one of
// the agent's requests: the cancelled permission outcome, or -32800.
func cancelledAnswer(perm permission, errs ...error) bool {
	if perm.cancelled {
		return true
	}
	for _, err := range errs {
		if errors.Is(err, acprpc.ErrCancelled) {
			return true
		}
	}
	return false
}

// cancelled ends a cancelled turn: a last update, then the stop reason.
// When the connection itself is gone there is nobody to tell.
func (t *turn) cancelled(ctx context.Context) (string, error) {
	cause := context.Cause(ctx)
	if errors.Is(cause, acprpc.ErrConnClosed) {
		t.log.Info("turn abandoned: the connection closed")
		return "", errors.Join(errAbandoned, ctx.Err())
	}
	why := "the client cancelled it"
	switch {
	case errors.Is(cause, acprpc.ErrSessionCancelled):
		why = "session/cancel"
	case errors.Is(cause, acprpc.ErrPeerCancelled):
		why = "$/cancel_request on the prompt"
	case errors.Is(cause, acprpc.ErrDeadline):
		why = "the turn's deadline passed"
	case errors.Is(cause, acprpc.ErrShutdown):
		why = "the agent is shutting down"
	}
	t.log.Info("turn cancelled", "by", why)
	// The turn's context has ended, but these updates belong to the turn
	// and must go out before its end.
	t.toolFinal(context.WithoutCancel(ctx))
	t.say(context.WithoutCancel(ctx), "Stopped ("+why+").")
	return StopCancelled, nil
}

// toolCancelled ends a turn whose tool call the client cancelled on its
// own: the tool call is final, and the turn has nothing more to do.
func (t *turn) toolCancelled(ctx context.Context) (string, error) {
	t.log.Info("tool call cancelled", "by", "tool_call/cancel")
	t.toolFinal(ctx)
	t.say(ctx, "The tool call was cancelled: `sleep 30` stopped.")
	return StopEndTurn, nil
}

// toolFinal reports a v2 slow turn's tool call cancelled, once it is no
// longer cancellable: a tool_call/cancel after this update is refused.
func (t *turn) toolFinal(ctx context.Context) {
	if t.toolDone == nil {
		return
	}
	t.toolDone()
	t.toolDone = nil
	final := toolCallV2
	final.Status = acpv2.ToolCallStatusCancelled
	final.Capabilities = &acpv2.ToolCallCapabilities{} // an object without cancel: no longer cancellable
	t.updateV2(ctx, final)
}

// say sends an agent_message_chunk update.
func (t *turn) say(ctx context.Context, text string) {
	if t.v2 {
		t.updateV2(ctx, acpv2.AgentMessageChunk{MessageID: acpv2.MessageID(t.messageID),
			Content: acpv2.ContentBlock{Value: acpv2.TextContent{Text: text}}})
		return
	}
	t.notify(ctx, acpv1.SessionNotification{SessionID: acpv1.SessionID(t.sessionID), Update: acpv1.SessionUpdate{
		Value: acpv1.AgentMessageChunk{Content: acpv1.ContentBlock{Value: acpv1.TextContent{Text: text}}}}})
}

// updateV2 sends a v2 session/update of the turn.
func (t *turn) updateV2(ctx context.Context, u acpv2.SessionUpdateVariant) {
	t.notify(ctx, acpv2.UpdateSessionNotification{SessionID: acpv2.SessionID(t.sessionID), Update: acpv2.SessionUpdate{Value: u}})
}

// notify sends the session/update params n.
func (t *turn) notify(ctx context.Context, n any) {
	if err := t.conn.Notify(ctx, acpv1.MethodSessionUpdate, n); err != nil {
		t.log.Debug("update not sent", "error", err) // the turn or the connection has ended
	}
}
