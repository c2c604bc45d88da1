package bench

import (
	"context"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	acp "github.com/coder/acp-go-sdk"
)

// The turn workload: each prompt turn says something, then asks the client
// at once for permission to run a tool (session/request_permission) and for
// a terminal (terminal/create), both under the turn's context, and waits
// until the turn is cancelled; then it says so and answers
// {"stopReason":"cancelled"}. It is what examples/agent does with a prompt
// that contains "slow", written here with coder's SDK so that the two can
// be measured against one client (acpbench burst).

// coderTurnAgent serves the turn workload with coder's agent side.
type coderTurnAgent struct {
	coderAgent
	sessions atomic.Int64
	stopped  bool // a cancelled turn says so before it answers
}

// ServeCoderTurns serves the turn workload with coder's SDK on r and w and
// returns a channel closed once the connection has ended (its input did).
// With stopped, a cancelled turn sends a last update saying so, as
// examples/agent's does; without, it answers at once, as coder's example
// agent does.
func ServeCoderTurns(r io.Reader, w io.Writer, stopped bool) <-chan struct{} {
	a := &coderTurnAgent{stopped: stopped}
	a.conn = acp.NewAgentSideConnection(a, w, r)
	a.conn.SetLogger(coderQuiet)
	return a.conn.Done()
}

func (a *coderTurnAgent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber}, nil
}

func (a *coderTurnAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: acp.SessionId("sess_" + strconv.FormatInt(a.sessions.Add(1), 10))}, nil
}

var (
	turnTitle   = "Run `sleep 30`"
	turnKind    = acp.ToolKindExecute
	turnStatus  = acp.ToolCallStatusPending
	turnOptions = []acp.PermissionOption{
		{OptionId: "allow", Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
	}
)

func (a *coderTurnAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	say := func(ctx context.Context, text string) {
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateAgentMessageText(text)})
	}
	say(ctx, "Looking into it: I need your permission and a terminal.")
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: p.SessionId, Options: turnOptions,
			ToolCall: acp.ToolCallUpdate{ToolCallId: "call_1", Title: &turnTitle, Kind: &turnKind, Status: &turnStatus}})
	})
	wg.Go(func() {
		_, _ = a.conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: p.SessionId, Command: "sleep", Args: []string{"30"}})
	})
	wg.Wait()
	<-ctx.Done()
	if a.stopped {
		say(context.WithoutCancel(ctx), "Stopped (session/cancel).")
	}
	return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
}
