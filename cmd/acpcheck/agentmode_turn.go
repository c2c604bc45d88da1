package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

// agentModeOptions say how acpcheck agent plays its part.
type agentModeOptions struct {
	// CancelWithin is how long a turn waits for the client to cancel it
	// before it ends by itself, end_turn.
	CancelWithin time.Duration
	// CancelWait is how long, once a turn is cancelled, acpcheck waits for
	// the client's answers: first for its own answer to the pending
	// permission request (after session/cancel), then for its answers to
	// the requests acpcheck cancelled.
	CancelWait time.Duration
	// Timeout is the longest wait for the client's initialize, and for an
	// answer the client owes at once (terminal/kill, terminal/release).
	Timeout time.Duration
	// Idle is how long the client may stay silent, no turn running, before
	// acpcheck ends the conversation.
	Idle time.Duration
}

// How a turn of acpcheck agent ended, as its record says.
const (
	turnBySessionCancel = "session/cancel"
	turnByCancelRequest = "$/cancel_request"
	turnNotCancelled    = "not cancelled"
	turnCut             = "cut short" // the connection closed, or acpcheck was stopped
)

// checkAgent is acpcheck as an ACP agent, v1 or v2 as the client asks: each
// v1 prompt turn streams updates, asks for permission and, if the client
// offered them, for a terminal (terminal/create, then
// terminal/wait_for_exit) and a file read (fs/read_text_file of a file that
// never ends until acpcheck lets it), keeping those requests open until the
// client cancels the turn or CancelWithin passes; a v2 prompt starts the
// same turn as the session's foreground work (agentmode_v2.go). The rules
// judge the conversation on the wire (the proxy's monitor); checkAgent only
// brings it about.
type checkAgent struct {
	o        agentModeOptions
	handler  acprpc.VersionRouter
	blockers *blockingFiles

	mu          sync.Mutex
	initialized chan struct{} // closed once initialize was answered
	client      string        // the client's name and version, from initialize
	terminal    bool          // the client offers terminal/*
	readFile    bool          // the client offers fs/read_text_file
	sessions    int
	turns       []string                // how each turn ended, in order of their ends
	running     int                     // turns in progress
	works       map[string]*acprpc.Work // v2: each session's latest foreground work
	messages    int                     // v2: prompts inserted so far

	wg sync.WaitGroup // the turns
	// turnEnded is called as the nth turn ends, before its answer is
	// written; nil for none.
	turnEnded func(n int)
}

func newCheckAgent(o agentModeOptions, blockers *blockingFiles) *checkAgent {
	a := &checkAgent{o: o, blockers: blockers, initialized: make(chan struct{}), works: map[string]*acprpc.Work{}}
	r := acprpc.NewRouter()
	r.Register(acpv1.MethodInitialize, acprpc.RequestHandler(a.initialize))
	r.Register(acpv1.MethodSessionNew, acprpc.RequestHandler(a.newSession))
	r.Register(acpv1.MethodSessionPrompt, acprpc.RequestHandler(a.prompt))
	// acprpc has cancelled the session's turn by the time this runs.
	r.Register(acpv1.MethodSessionCancel, acprpc.NotificationHandler(func(context.Context, acpv1.CancelNotification) {}))
	a.handler = acprpc.VersionRouter{V1: r, V2: a.v2()}
	return a
}

// Handle serves the client's requests and notifications.
func (a *checkAgent) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	return a.handler.Handle(ctx, req)
}

// ProtocolVersions are the versions acpcheck agent speaks: 1 and 2. The
// connection negotiates the highest at or below the client's.
func (a *checkAgent) ProtocolVersions() []acprpc.ProtocolVersion { return a.handler.ProtocolVersions() }

func (a *checkAgent) initialize(_ context.Context, p acpv1.InitializeRequest) (acpv1.InitializeResponse, error) {
	var client *implementation
	if p.ClientInfo != nil {
		client = &implementation{Name: p.ClientInfo.Name, Version: p.ClientInfo.Version}
	}
	a.met(client, p.ClientCapabilities.Terminal, p.ClientCapabilities.FS.ReadTextFile)
	return acpv1.InitializeResponse{
		ProtocolVersion: 1,
		AgentInfo:       &acpv1.Implementation{Name: "acpcheck", Version: version},
		AuthMethods:     []acpv1.AuthMethod{},
	}, nil
}

// met records what the client's initialize said of it, in either version:
// who it is (nil if it did not say) and what it offers.
func (a *checkAgent) met(client *implementation, terminal, readFile bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.terminal, a.readFile = terminal, readFile
	if client != nil {
		a.client = client.String()
	}
	select {
	case <-a.initialized:
	default:
		close(a.initialized)
	}
}

func (a *checkAgent) newSession(context.Context, acpv1.NewSessionRequest) (acpv1.NewSessionResponse, error) {
	return acpv1.NewSessionResponse{SessionID: acpv1.SessionID(a.newSessionID())}, nil
}

// newSessionID names a new session, in either version.
func (a *checkAgent) newSessionID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions++
	return fmt.Sprintf("acpcheck-%d", a.sessions)
}

// begin counts a turn (a v2 work) in progress; ended says how it ended.
func (a *checkAgent) begin() {
	a.mu.Lock()
	a.running++
	a.mu.Unlock()
	a.wg.Add(1)
}

// ended records how a turn begun with begin ended; a v2 prompt withdrawn
// before its insertion (turnWithdrawn) began none.
func (a *checkAgent) ended(how string) {
	a.mu.Lock()
	a.turns = append(a.turns, how)
	n := len(a.turns)
	if how != turnWithdrawn {
		a.running--
	}
	a.mu.Unlock()
	if how == turnWithdrawn {
		return
	}
	if a.turnEnded != nil {
		a.turnEnded(n)
	}
	a.wg.Done()
}

// busy reports whether a turn is in progress.
func (a *checkAgent) busy() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running > 0
}

// turnEnds returns how each turn so far ended.
func (a *checkAgent) turnEnds() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.turns...)
}

// offers returns what the client offered in initialize.
func (a *checkAgent) offers() (terminal, readFile bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.terminal, a.readFile
}

// agentTurn is one prompt turn of acpcheck agent.
type agentTurn struct {
	a       *checkAgent
	conn    *acprpc.Conn
	session acpv1.SessionID

	mu       sync.Mutex
	terminal acpv1.TerminalID // once created
}

// prompt runs a turn: it returns stopReason "cancelled" once the client
// cancelled it, "end_turn" once CancelWithin passed without a cancel, and
// an error when the connection closed under it.
func (a *checkAgent) prompt(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
	a.begin()
	how := turnCut
	defer func() { a.ended(how) }()
	t := &agentTurn{a: a, conn: acprpc.ConnFromContext(ctx), session: p.SessionID}
	// A client may send its prompt before initialize's answer is out: what
	// it offered there is known once initialize has run.
	waitFor(a.initialized, a.o.Timeout)
	how = t.run(ctx)
	switch how {
	case turnCut:
		if errors.Is(context.Cause(ctx), acprpc.ErrConnClosed) {
			return acpv1.PromptResponse{}, context.Cause(ctx) // nobody to answer
		}
	case turnNotCancelled:
		return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, nil
	}
	// Cancelled by the client, or by acpcheck's own shutdown.
	return acpv1.PromptResponse{StopReason: acpv1.StopReasonCancelled}, nil
}

// run brings the turn about and returns how it ended.
func (t *agentTurn) run(ctx context.Context) string {
	o := t.a.o
	t.say(ctx, fmt.Sprintf("acpcheck: this turn waits for you to cancel it (session/cancel, or $/cancel_request on the prompt); it ends by itself in %s.", o.CancelWithin))
	t.toolCall(ctx, acpv1.ToolCallStatusPending)
	// The permission request is cancelled by acpcheck alone, never with the
	// turn: after session/cancel the client owes it the cancelled outcome
	// of its own accord, which is what client-permission-cancelled judges.
	permCtx, stopPerm := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPerm()
	// The terminal and the file read are cancelled with the turn, each by
	// its own $/cancel_request, whose answers client-cancel-answered judges.
	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	graceful := acprpc.WaitAfterCancel(o.CancelWait)
	permDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(permDone)
		_, _ = acprpc.CallFor[acpv1.RequestPermissionResponse](permCtx, t.conn, acpv1.MethodSessionRequestPermission,
			acpv1.RequestPermissionRequest{SessionID: t.session, ToolCall: agentToolCall(acpv1.ToolCallStatusPending), Options: agentPermissionOptions}, graceful)
	})
	terminal, readFile := t.a.offers()
	if terminal {
		wg.Go(func() { t.useTerminal(ctx, work, graceful) })
	}
	var blocker *blockingFile
	if readFile {
		blocker = t.a.blockers.open()
		wg.Go(func() {
			_, _ = acprpc.CallFor[acpv1.ReadTextFileResponse](work, t.conn, acpv1.MethodFSReadTextFile,
				acpv1.ReadTextFileRequest{SessionID: t.session, Path: blocker.path}, graceful)
		})
	}
	settled := make(chan struct{})
	go func() {
		wg.Wait()
		close(settled)
	}()

	bound := time.NewTimer(o.CancelWithin)
	defer bound.Stop()
	how := turnNotCancelled
	select {
	case <-ctx.Done():
		how = cancelCause(ctx)
	case <-bound.C:
	}
	switch how {
	case turnBySessionCancel:
		// The client's own answer to the permission request, as ACP's
		// prompt-turn page requires, before acpcheck cancels it.
		waitFor(permDone, o.CancelWait)
	case turnNotCancelled:
		// Nobody cancelled: the terminal is killed and the file let go, so
		// that their requests end by themselves.
		t.kill(ctx)
		blocker.release()
		waitFor(settled, o.CancelWait)
	}
	stopPerm()
	stopWork()
	blocker.release()
	<-settled // each call waits at most CancelWait after its cancel
	if how == turnCut {
		return how
	}
	t.toolCall(context.WithoutCancel(ctx), acpv1.ToolCallStatusCompleted)
	t.say(context.WithoutCancel(ctx), "acpcheck: the turn ended: "+how+".")
	return how
}

// cancelCause says what ended a turn's context.
func cancelCause(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, acprpc.ErrSessionCancelled):
		return turnBySessionCancel
	case errors.Is(cause, acprpc.ErrPeerCancelled):
		return turnByCancelRequest
	case errors.Is(cause, acprpc.ErrEntityCancelled):
		return turnByEntityCancel
	}
	return turnCut
}

// waitFor waits for done, at most d.
func waitFor(done <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// useTerminal creates a terminal that runs until killed and waits for its
// exit under work, then kills and releases it, each within Timeout: the
// client's terminal never outlives the turn.
func (t *agentTurn) useTerminal(ctx, work context.Context, graceful acprpc.CallOption) {
	term, err := acprpc.CallFor[acpv1.CreateTerminalResponse](work, t.conn, acpv1.MethodTerminalCreate,
		acpv1.CreateTerminalRequest{SessionID: t.session, Command: "sleep", Args: []string{fmt.Sprint(int((t.a.o.CancelWithin + time.Minute).Seconds()))}}, graceful)
	if err != nil {
		return
	}
	t.mu.Lock()
	t.terminal = term.TerminalID
	t.mu.Unlock()
	_, _ = acprpc.CallFor[acpv1.WaitForTerminalExitResponse](work, t.conn, acpv1.MethodTerminalWaitForExit,
		acpv1.WaitForTerminalExitRequest{SessionID: t.session, TerminalID: term.TerminalID}, graceful)
	t.kill(ctx)
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.a.o.Timeout)
	defer cancel()
	_, _ = acprpc.CallFor[acpv1.ReleaseTerminalResponse](cleanup, t.conn, acpv1.MethodTerminalRelease,
		acpv1.ReleaseTerminalRequest{SessionID: t.session, TerminalID: term.TerminalID}, acprpc.WaitAfterCancel(0))
}

// kill kills the turn's terminal, if it has one, within Timeout.
func (t *agentTurn) kill(ctx context.Context) {
	t.mu.Lock()
	id := t.terminal
	t.mu.Unlock()
	if id == "" {
		return
	}
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.a.o.Timeout)
	defer cancel()
	_, _ = acprpc.CallFor[acpv1.KillTerminalResponse](cleanup, t.conn, acpv1.MethodTerminalKill,
		acpv1.KillTerminalRequest{SessionID: t.session, TerminalID: id}, acprpc.WaitAfterCancel(0))
}

// The tool call acpcheck agent asks permission for, and the options.
const agentToolCallID = "acpcheck-tool"

var agentPermissionOptions = []acpv1.PermissionOption{
	{OptionID: "allow", Name: "Allow once", Kind: acpv1.PermissionOptionKindAllowOnce},
	{OptionID: "reject", Name: "Reject", Kind: acpv1.PermissionOptionKindRejectOnce},
}

func agentToolCall(status acpv1.ToolCallStatus) acpv1.ToolCallUpdate {
	return acpv1.ToolCallUpdate{ToolCallID: agentToolCallID, Title: "acpcheck: a tool that waits for your cancel",
		Kind: acpv1.ToolKindExecute, Status: status}
}

// toolCall reports the turn's tool call.
func (t *agentTurn) toolCall(ctx context.Context, status acpv1.ToolCallStatus) {
	var u acpv1.SessionUpdateVariant
	if status == acpv1.ToolCallStatusPending {
		u = acpv1.ToolCall{ToolCallID: agentToolCallID, Title: "acpcheck: a tool that waits for your cancel", Kind: acpv1.ToolKindExecute, Status: status}
	} else {
		u = agentToolCall(status)
	}
	t.notify(ctx, u)
}

// say sends an agent_message_chunk.
func (t *agentTurn) say(ctx context.Context, text string) {
	t.notify(ctx, acpv1.AgentMessageChunk{Content: acpv1.ContentBlock{Value: acpv1.TextContent{Text: text}}})
}

func (t *agentTurn) notify(ctx context.Context, u acpv1.SessionUpdateVariant) {
	_ = t.conn.Notify(ctx, acpv1.MethodSessionUpdate, acpv1.SessionNotification{SessionID: t.session, Update: acpv1.SessionUpdate{Value: u}})
}
