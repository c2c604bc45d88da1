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
)

// AgentName is what the demo agent calls itself in initialize.
const AgentName = "acprpc-demo-agent"

// confirmWait is how long the agent waits, after its turn is cancelled, for
// the client to answer the requests it cancelled (ACP's "graceful
// cancellation"), so the turn ends after them, as in the specification's
// cascading flow. It stays below acprpc.DefaultCancelGrace, which would
// otherwise answer the prompt for the handler.
const confirmWait = time.Second

// Agent is the demo's ACP agent, an acprpc.Handler. Each prompt turn streams
// a message, then asks the client, concurrently, for permission to run a
// tool and for a terminal, with the turn's context: cancelling the turn
// cancels both requests, each with its own $/cancel_request.
type Agent struct {
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]bool
	nextID   int
	terminal bool // the client offers terminal/create

	turns sync.WaitGroup
}

// NewAgent returns an agent that logs to log, which may be nil.
func NewAgent(log *slog.Logger) *Agent {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Agent{log: log, sessions: make(map[string]bool)}
}

// Wait returns once no prompt turn is running. Call it after the connection
// has closed, when every turn's context has ended.
func (a *Agent) Wait() { a.turns.Wait() }

// Handle serves the client's requests and notifications.
func (a *Agent) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	switch req.Method {
	case MethodInitialize:
		return a.initialize(req)
	case MethodSessionNew:
		return a.newSession(req)
	case MethodSessionPrompt:
		a.turns.Add(1)
		defer a.turns.Done()
		return a.prompt(ctx, req)
	case acprpc.MethodSessionCancel:
		// acprpc has already cancelled the session's turn by the time this
		// runs; the handler only sees the notification go by.
		a.log.Info("session/cancel received", "session", req.SessionID)
		return nil, nil
	}
	if req.IsNotification() {
		return nil, nil // unknown notifications are ignored
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

func (a *Agent) initialize(req *acprpc.Request) (any, error) {
	var p InitializeRequest
	if err := req.DecodeParams(&p); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.terminal = p.ClientCapabilities.Terminal
	a.mu.Unlock()
	return InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			PromptCapabilities: PromptCapabilities{},
			MCPCapabilities:    MCPCapabilities{},
		},
		AuthMethods: []any{},
		AgentInfo:   &Implementation{Name: AgentName, Version: "0.1.0"},
	}, nil
}

func (a *Agent) newSession(req *acprpc.Request) (any, error) {
	var p NewSessionRequest
	if err := req.DecodeParams(&p); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.nextID++
	id := fmt.Sprintf("sess_%d", a.nextID)
	a.sessions[id] = true
	a.mu.Unlock()
	a.log.Info("session created", "session", id, "cwd", p.Cwd)
	return NewSessionResponse{SessionID: id}, nil
}

// turn is one prompt turn in progress.
type turn struct {
	conn      *acprpc.Conn
	sessionID string
	log       *slog.Logger
}

// prompt runs a turn. It honours ctx: whatever ended it (session/cancel,
// $/cancel_request on the prompt, or a cancelled answer from the client),
// it flushes a last update and answers {"stopReason":"cancelled"} itself,
// never an error.
func (a *Agent) prompt(ctx context.Context, req *acprpc.Request) (any, error) {
	var p PromptRequest
	if err := req.DecodeParams(&p); err != nil {
		return nil, err
	}
	a.mu.Lock()
	known, terminal := a.sessions[p.SessionID], a.terminal
	a.mu.Unlock()
	if !known {
		return nil, acprpc.NewError(acprpc.CodeInvalidParams, "Invalid params: unknown session "+p.SessionID)
	}
	t := &turn{conn: acprpc.ConnFromContext(ctx), sessionID: p.SessionID, log: a.log.With("session", p.SessionID, "prompt", req.ID.String())}
	text := p.Text()
	t.log.Info("turn started", "text", text)

	// (1) Say something, so the client shows the turn is under way.
	t.say(ctx, "Looking into it: I need your permission and a terminal.")

	// (2) Two requests to the client at once, both under the turn's context.
	// stop also ends the turn early when the client says the turn is over
	// (a cancelled permission outcome): the other request is then cancelled
	// too.
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg                sync.WaitGroup
		perm              RequestPermissionResponse
		term              CreateTerminalResponse
		permErr, termErr  error
		wantedTerminal    = terminal
		graceful          = acprpc.WaitAfterCancel(confirmWait)
		permissionRequest = RequestPermissionRequest{
			SessionID: p.SessionID,
			ToolCall:  ToolCallUpdate{ToolCallID: ToolCallID, Title: "Run `sleep 30`", Kind: "execute", Status: "pending"},
			Options: []PermissionOption{
				{OptionID: OptionAllow, Name: "Allow once", Kind: "allow_once"},
				{OptionID: OptionReject, Name: "Reject", Kind: "reject_once"},
			},
		}
	)
	wg.Go(func() {
		permErr = t.conn.Call(tctx, MethodRequestPermission, permissionRequest, &perm, graceful)
		if permErr == nil && perm.Outcome.Outcome == OutcomeCancelled {
			stop()
		}
	})
	if wantedTerminal {
		wg.Go(func() {
			termErr = t.conn.Call(tctx, MethodTerminalCreate,
				CreateTerminalRequest{SessionID: p.SessionID, Command: "sleep", Args: []string{"30"}}, &term, graceful)
		})
	}
	wg.Wait()

	// (3) Both are answered. Check why before anything else: the cause is
	// what tells a cancelled turn from a failed one.
	if ctx.Err() != nil || cancelledAnswer(perm, permErr, termErr) {
		return t.cancelled(ctx)
	}
	if permErr != nil {
		return nil, fmt.Errorf("asking permission: %w", permErr)
	}
	if termErr != nil {
		return nil, fmt.Errorf("creating a terminal: %w", termErr)
	}
	if perm.Outcome.OptionID != OptionAllow {
		t.say(ctx, "Permission denied: I will not run the tool.")
		return PromptResponse{StopReason: StopEndTurn}, nil
	}
	if !wantedTerminal {
		term.TerminalID = "(none: the client has no terminals)"
	}
	if strings.Contains(strings.ToLower(text), SlowWord) {
		t.say(ctx, "Permission granted; terminal "+term.TerminalID+" runs `sleep 30`. This will take a while.")
		<-ctx.Done()
		return t.cancelled(ctx)
	}
	t.say(ctx, "Permission granted; terminal "+term.TerminalID+" runs `sleep 30`. Done.")
	t.log.Info("turn ended", "stopReason", StopEndTurn)
	return PromptResponse{StopReason: StopEndTurn}, nil
}

// cancelledAnswer reports whether the client ended the turn through one of
// the agent's requests: the cancelled permission outcome, or -32800.
func cancelledAnswer(perm RequestPermissionResponse, errs ...error) bool {
	if perm.Outcome.Outcome == OutcomeCancelled {
		return true
	}
	for _, err := range errs {
		if errors.Is(err, acprpc.ErrCancelled) {
			return true
		}
	}
	return false
}

// cancelled ends a cancelled turn: a last update, then the stop reason as a
// result. When the connection itself is gone there is nobody to tell.
func (t *turn) cancelled(ctx context.Context) (any, error) {
	cause := context.Cause(ctx)
	if errors.Is(cause, acprpc.ErrConnClosed) {
		t.log.Info("turn abandoned: the connection closed")
		return nil, ctx.Err()
	}
	why := "the client cancelled it"
	switch {
	case errors.Is(cause, acprpc.ErrSessionCancelled):
		why = "session/cancel"
	case errors.Is(cause, acprpc.ErrPeerCancelled):
		why = "$/cancel_request on the prompt"
	case errors.Is(cause, acprpc.ErrDeadline):
		why = "the turn's deadline passed"
	}
	t.log.Info("turn cancelled", "by", why)
	// The turn's context has ended, but this update belongs to the turn and
	// must go out before its answer.
	t.say(context.WithoutCancel(ctx), "Stopped ("+why+").")
	return PromptResponse{StopReason: StopCancelled}, nil
}

// say sends an agent_message_chunk update.
func (t *turn) say(ctx context.Context, text string) {
	block := TextBlock(text)
	err := t.conn.Notify(ctx, MethodSessionUpdate, SessionNotification{
		SessionID: t.sessionID,
		Update:    SessionUpdate{SessionUpdate: "agent_message_chunk", Content: &block},
	})
	if err != nil {
		t.log.Debug("update not sent", "error", err) // the turn or the connection has ended
	}
}
