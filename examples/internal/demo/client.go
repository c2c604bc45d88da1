package demo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
)

// ClientName is what the demo client calls itself in initialize.
const ClientName = "acprpc-demo-client"

// How a client cancels a turn.
const (
	CancelSession = "session" // session/cancel, by Conn.CancelSession
	CancelRequest = "request" // $/cancel_request on the prompt, by ending the Call's context
	CancelNone    = "none"    // let the turn end on its own
)

// Client is the demo's ACP client, an acprpc.Handler. It serves the agent's
// requests the way an editor would: a permission request waits for the user
// (who, in the demo, never answers unless Approve is set), and a terminal
// takes TerminalStartup to start. Both honour their context, so a
// cancelled turn answers them at once: the permission request with the
// cancelled outcome (acprpc's marker) and terminal/create with -32800.
type Client struct {
	// Approve makes the user allow the tool at once.
	Approve bool
	// TerminalStartup is how long terminal/create takes to answer.
	TerminalStartup time.Duration
	// OnUpdate, if set, sees each session/update, in order.
	OnUpdate func(SessionNotification)
	// OnRequest, if set, is told of each request from the agent as it
	// arrives.
	OnRequest func(method string)

	mu      sync.Mutex
	arrived map[string]int
	changed chan struct{}
	served  sync.WaitGroup
}

// Handle serves the agent's requests and notifications.
func (c *Client) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	switch req.Method {
	case MethodSessionUpdate:
		var n SessionNotification
		if err := req.DecodeParams(&n); err == nil && c.OnUpdate != nil {
			c.OnUpdate(n)
		}
		return nil, nil
	case MethodRequestPermission:
		c.served.Add(1)
		defer c.served.Done()
		c.arrive(req.Method)
		if c.Approve {
			return RequestPermissionResponse{Outcome: PermissionOutcome{Outcome: OutcomeSelected, OptionID: OptionAllow}}, nil
		}
		// The dialog stays open until the turn is cancelled. Returning the
		// context's error lets acprpc answer with the method's marker,
		// {"outcome":{"outcome":"cancelled"}}, as ACP requires.
		<-ctx.Done()
		return nil, ctx.Err()
	case MethodTerminalCreate:
		c.served.Add(1)
		defer c.served.Done()
		c.arrive(req.Method)
		t := time.NewTimer(c.TerminalStartup)
		defer t.Stop()
		select {
		case <-t.C:
			return CreateTerminalResponse{TerminalID: DemoTerminalID}, nil
		case <-ctx.Done():
			return nil, ctx.Err() // no marker for terminal/create: -32800
		}
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

// DemoTerminalID is the terminal the demo client creates.
const DemoTerminalID = "term_1"

func (c *Client) arrive(method string) {
	if c.OnRequest != nil {
		c.OnRequest(method)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arrived == nil {
		c.arrived = make(map[string]int)
	}
	c.arrived[method]++
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// awaitRequests returns a channel closed once each method has arrived at
// least once, or ctx has ended.
func (c *Client) awaitRequests(ctx context.Context, methods ...string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c.mu.Lock()
			all := true
			for _, m := range methods {
				all = all && c.arrived[m] > 0
			}
			if all {
				c.mu.Unlock()
				return
			}
			if c.changed == nil {
				c.changed = make(chan struct{})
			}
			changed := c.changed
			c.mu.Unlock()
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return done
}

// Wait returns once no request from the agent is being served. Call it after
// the connection has closed.
func (c *Client) Wait() { c.served.Wait() }

// Turn says what RunTurn does.
type Turn struct {
	Prompt string
	// Cancel is CancelSession, CancelRequest or CancelNone.
	Cancel string
	// Delay is how long after the agent's permission and terminal requests
	// have both arrived the turn is cancelled.
	Delay time.Duration
	// Cwd is the session's working directory.
	Cwd string
	// OnCancel, if set, is called just before the turn is cancelled.
	OnCancel func(how string)
}

// TurnResult is what a turn ended with.
type TurnResult struct {
	AgentName  string
	SessionID  string
	StopReason string
}

// RunTurn initializes the connection, opens a session, sends the prompt and,
// unless t.Cancel is CancelNone, cancels the turn t.Delay after the agent's
// two requests have arrived. It returns the turn's stop reason.
func (c *Client) RunTurn(ctx context.Context, conn *acprpc.Conn, t Turn) (TurnResult, error) {
	var res TurnResult
	var init InitializeResponse
	err := conn.Call(ctx, MethodInitialize, InitializeRequest{
		ProtocolVersion:    ProtocolVersion,
		ClientCapabilities: ClientCapabilities{Terminal: true},
		ClientInfo:         &Implementation{Name: ClientName, Version: "0.1.0"},
	}, &init)
	if err != nil {
		return res, err
	}
	if init.ProtocolVersion != ProtocolVersion {
		return res, fmt.Errorf("the agent speaks ACP version %d, not %d", init.ProtocolVersion, ProtocolVersion)
	}
	if init.AgentInfo != nil {
		res.AgentName = init.AgentInfo.Name
	}
	cwd := t.Cwd
	if cwd == "" {
		cwd = "/"
	}
	var sess NewSessionResponse
	if err := conn.Call(ctx, MethodSessionNew, NewSessionRequest{Cwd: cwd, MCPServers: []any{}}, &sess); err != nil {
		return res, err
	}
	res.SessionID = sess.SessionID

	promptCtx, cancelPrompt := context.WithCancel(ctx)
	defer cancelPrompt()
	var (
		prompt PromptResponse
		done   = make(chan error, 1)
	)
	go func() {
		// WaitAfterCancel: after $/cancel_request, wait for the agent's
		// answer, which carries the turn's stop reason.
		done <- conn.Call(promptCtx, MethodSessionPrompt,
			PromptRequest{SessionID: sess.SessionID, Prompt: []ContentBlock{TextBlock(t.Prompt)}},
			&prompt, acprpc.WaitAfterCancel(5*time.Second))
	}()

	if t.Cancel == CancelSession || t.Cancel == CancelRequest {
		arrivedCtx, stopWaiting := context.WithCancel(ctx)
		arrived := c.awaitRequests(arrivedCtx, MethodRequestPermission, MethodTerminalCreate)
		select {
		case err = <-done:
			stopWaiting()
			<-arrived
			return c.ended(res, prompt, err)
		case <-arrived:
		}
		stopWaiting()
		timer := time.NewTimer(t.Delay)
		select {
		case err = <-done:
			timer.Stop()
			return c.ended(res, prompt, err)
		case <-timer.C:
		}
		if t.OnCancel != nil {
			t.OnCancel(t.Cancel)
		}
		if t.Cancel == CancelSession {
			if err := conn.CancelSession(ctx, sess.SessionID); err != nil {
				return res, err
			}
		} else {
			cancelPrompt()
		}
	}
	return c.ended(res, prompt, <-done)
}

func (c *Client) ended(res TurnResult, prompt PromptResponse, err error) (TurnResult, error) {
	if err != nil {
		return res, err
	}
	res.StopReason = prompt.StopReason
	return res, nil
}
