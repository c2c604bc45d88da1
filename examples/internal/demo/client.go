package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
)

// ClientName is what the demo client calls itself in initialize.
const ClientName = "acprpc-demo-client"

// How a client cancels a turn.
const (
	CancelSession = "session" // session/cancel, by acprpc.CancelSession
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
	// OnAgentMessage, if set, sees the text of each agent_message_chunk
	// update, in order.
	OnAgentMessage func(text string)
	// OnRequest, if set, is told of each request from the agent as it
	// arrives.
	OnRequest func(method string)

	mu      sync.Mutex
	arrived map[string]int
	idle    map[string]string // v2: each session's stop reason, once its work has ended
	changed chan struct{}
	served  sync.WaitGroup
}

// Handle serves the agent's requests and notifications.
func (c *Client) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	v2 := acprpc.ConnFromContext(ctx).ProtocolVersion() == acprpc.ProtocolV2
	switch req.Method {
	case acpv1.MethodSessionUpdate:
		if v2 {
			c.updateV2(req)
		} else {
			c.updateV1(req)
		}
		return nil, nil
	case acpv1.MethodSessionRequestPermission:
		c.served.Add(1)
		defer c.served.Done()
		c.arrive(req.Method)
		switch {
		case c.Approve && v2:
			return acpv2.RequestPermissionResponse{Outcome: acpv2.RequestPermissionOutcome{
				Value: acpv2.SelectedPermissionOutcome{OptionID: OptionAllow}}}, nil
		case c.Approve:
			return acpv1.RequestPermissionResponse{Outcome: acpv1.RequestPermissionOutcome{
				Value: acpv1.SelectedPermissionOutcome{OptionID: OptionAllow}}}, nil
		}
		// The dialog stays open until the turn is cancelled. Returning the
		// context's error lets acprpc answer with the method's marker,
		// {"outcome":{"outcome":"cancelled"}}, as ACP requires.
		<-ctx.Done()
		return nil, ctx.Err()
	case acpv1.MethodTerminalCreate:
		c.served.Add(1)
		defer c.served.Done()
		c.arrive(req.Method)
		t := time.NewTimer(c.TerminalStartup)
		defer t.Stop()
		select {
		case <-t.C:
			return acpv1.CreateTerminalResponse{TerminalID: DemoTerminalID}, nil
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

// updateV1 sees a v1 session/update.
func (c *Client) updateV1(req *acprpc.Request) {
	var n acpv1.SessionNotification
	if req.DecodeParams(&n) != nil || c.OnAgentMessage == nil {
		return
	}
	if chunk, ok := n.Update.Value.(acpv1.AgentMessageChunk); ok {
		if text, ok := chunk.Content.Value.(acpv1.TextContent); ok {
			c.OnAgentMessage(text.Text)
		}
	}
}

// updateV2 sees a v2 session/update: an agent message, or the idle
// state_update that ends the session's work.
func (c *Client) updateV2(req *acprpc.Request) {
	var n acpv2.UpdateSessionNotification
	if req.DecodeParams(&n) != nil {
		return
	}
	switch u := n.Update.Value.(type) {
	case acpv2.AgentMessageChunk:
		if text, ok := u.Content.Value.(acpv2.TextContent); ok && c.OnAgentMessage != nil {
			c.OnAgentMessage(text.Text)
		}
	case acpv2.StateUpdate:
		if idle, ok := u.Value.(acpv2.IdleStateUpdate); ok {
			c.ended(string(n.SessionID), string(idle.StopReason))
		}
	}
}

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

// ended records a v2 session's idle state_update: its work has ended.
func (c *Client) ended(sessionID, stopReason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		c.idle = make(map[string]string)
	}
	c.idle[sessionID] = stopReason
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// awaitRequests returns a channel closed once each method has arrived at
// least once, or ctx has ended.
func (c *Client) awaitRequests(ctx context.Context, methods ...string) <-chan struct{} {
	return c.await(ctx, func() bool {
		for _, m := range methods {
			if c.arrived[m] == 0 {
				return false
			}
		}
		return true
	})
}

// awaitIdle returns a channel closed once the v2 session's work has ended,
// or ctx has ended.
func (c *Client) awaitIdle(ctx context.Context, sessionID string) <-chan struct{} {
	return c.await(ctx, func() bool {
		_, ok := c.idle[sessionID]
		return ok
	})
}

// await returns a channel closed once ready, checked under c.mu whenever a
// request arrives or a work ends, holds, or ctx has ended.
func (c *Client) await(ctx context.Context, ready func() bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c.mu.Lock()
			if ready() {
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
	// Protocol is the ACP version the client asks for: ProtocolV1 (the
	// default) or ProtocolV2. In v2 the turn can only be cancelled with
	// session/cancel: the prompt is answered as soon as it is inserted.
	Protocol int
	// Await are the agent's requests whose arrival the cancel waits for;
	// nil means the demo agent's two, session/request_permission and
	// terminal/create. An agent that sends no terminal/create (a v2 agent
	// other than the demo's: v2 has none) is cancelled once its permission
	// request came with []string{acpv1.MethodSessionRequestPermission}.
	Await []string
}

// TurnResult is what a turn ended with.
type TurnResult struct {
	AgentName  string
	SessionID  string
	StopReason string
	// MessageID is, in v2, the ID the agent gave the prompt's message.
	MessageID string
}

// ErrRequestCancelV2 is why a v2 turn cannot be cancelled by
// $/cancel_request on its prompt: the prompt is answered as soon as the
// agent inserts it, and the turn runs on as the session's foreground work.
var ErrRequestCancelV2 = errors.New("in ACP v2 a prompt is answered once inserted, so its turn is cancelled with session/cancel, not $/cancel_request")

// RunTurn initializes the connection with t.Protocol, opens a session,
// sends the prompt and, unless t.Cancel is CancelNone, cancels the turn
// t.Delay after the agent's two requests have arrived. It returns the
// turn's stop reason: the prompt's answer in v1, the idle state_update that
// ends the session's work in v2.
func (c *Client) RunTurn(ctx context.Context, conn *acprpc.Conn, t Turn) (TurnResult, error) {
	v2 := t.Protocol == ProtocolV2
	if v2 && t.Cancel == CancelRequest {
		return TurnResult{}, ErrRequestCancelV2
	}
	res, err := c.initialize(ctx, conn, v2)
	if err != nil {
		return res, err
	}
	cwd := t.Cwd
	if cwd == "" {
		cwd = "/"
	}
	var sess acpv1.NewSessionResponse // the same in v2
	if err := conn.Call(ctx, acpv1.MethodSessionNew, acpv1.NewSessionRequest{Cwd: cwd}, &sess); err != nil {
		return res, err
	}
	res.SessionID = string(sess.SessionID)

	promptCtx, cancelPrompt := context.WithCancel(ctx)
	defer cancelPrompt()
	var (
		v1Answer acpv1.PromptResponse
		v2Answer acpv2.PromptResponse
		answer   any = &v1Answer
		done         = make(chan error, 1)
		prompt       = acpv1.PromptRequest{SessionID: sess.SessionID, // the same in v2
			Prompt: []acpv1.ContentBlock{{Value: acpv1.TextContent{Text: t.Prompt}}}}
	)
	if v2 {
		answer = &v2Answer
	}
	opts := []acprpc.CallOption{acprpc.WaitAfterCancel(5 * time.Second)}
	if t.Cancel == CancelRequest {
		// Ending the prompt's context would cancel its turn with
		// session/cancel; this demo shows $/cancel_request on the prompt.
		opts = append(opts, acprpc.CancelRequestOnly())
	}
	go func() {
		// WaitAfterCancel: after the cancel, wait for the agent's answer,
		// which in v1 carries the turn's stop reason.
		done <- conn.Call(promptCtx, acpv1.MethodSessionPrompt, prompt, answer, opts...)
	}()
	if v2 {
		// In v2 the answer comes at once, and the turn's end later.
		if err := <-done; err != nil {
			return res, err
		}
		res.MessageID = string(v2Answer.MessageID)
		done = c.turnEnd(ctx, res.SessionID)
	}
	finish := func(err error) (TurnResult, error) {
		if err != nil {
			return res, err
		}
		if v2 {
			res.StopReason = c.stopReason(res.SessionID)
		} else {
			res.StopReason = string(v1Answer.StopReason)
		}
		return res, nil
	}

	if t.Cancel == CancelSession || t.Cancel == CancelRequest {
		arrivedCtx, stopWaiting := context.WithCancel(ctx)
		await := t.Await
		if await == nil {
			await = []string{acpv1.MethodSessionRequestPermission, acpv1.MethodTerminalCreate}
		}
		arrived := c.awaitRequests(arrivedCtx, await...)
		select {
		case err = <-done:
			stopWaiting()
			<-arrived
			return finish(err)
		case <-arrived:
		}
		stopWaiting()
		timer := time.NewTimer(t.Delay)
		select {
		case err = <-done:
			timer.Stop()
			return finish(err)
		case <-timer.C:
		}
		if t.OnCancel != nil {
			t.OnCancel(t.Cancel)
		}
		if t.Cancel == CancelSession {
			if err := acprpc.CancelSession(ctx, conn, res.SessionID); err != nil {
				return res, err
			}
		} else {
			cancelPrompt()
		}
	}
	return finish(<-done)
}

// initialize runs initialize in the version asked for and checks that the
// agent speaks it.
func (c *Client) initialize(ctx context.Context, conn *acprpc.Conn, v2 bool) (TurnResult, error) {
	var res TurnResult
	var agentVersion int
	if v2 {
		init, err := acprpc.CallFor[acpv2.InitializeResponse](ctx, conn, acpv2.MethodInitialize, acpv2.InitializeRequest{
			ProtocolVersion: ProtocolV2,
			Info:            acpv2.Implementation{Name: ClientName, Version: "0.1.0"},
		})
		if err != nil {
			return res, err
		}
		agentVersion, res.AgentName = int(init.ProtocolVersion), init.Info.Name
	} else {
		init, err := acprpc.CallFor[acpv1.InitializeResponse](ctx, conn, acpv1.MethodInitialize, acpv1.InitializeRequest{
			ProtocolVersion:    ProtocolV1,
			ClientCapabilities: acpv1.ClientCapabilities{Terminal: true},
			ClientInfo:         &acpv1.Implementation{Name: ClientName, Version: "0.1.0"},
		})
		if err != nil {
			return res, err
		}
		agentVersion = int(init.ProtocolVersion)
		if init.AgentInfo != nil {
			res.AgentName = init.AgentInfo.Name
		}
	}
	want := ProtocolV1
	if v2 {
		want = ProtocolV2
	}
	if agentVersion != want {
		return res, fmt.Errorf("the agent speaks ACP version %d, not %d", agentVersion, want)
	}
	return res, nil
}

// turnEnd returns a channel that gets nil once the v2 session's work has
// ended with its idle state_update, or ctx's error.
func (c *Client) turnEnd(ctx context.Context, sessionID string) chan error {
	done := make(chan error, 1)
	idle := c.awaitIdle(ctx, sessionID)
	go func() {
		<-idle
		done <- ctx.Err()
	}()
	return done
}

// stopReason is the stop reason of the v2 session's idle state_update.
func (c *Client) stopReason(sessionID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle[sessionID]
}
