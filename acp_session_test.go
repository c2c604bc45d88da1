package acprpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// sessionAgent is a handler whose requests wait for their context, and
// which records the session notifications it receives.
type sessionAgent struct {
	wiretest.Recorder
	notes chan noteSeen
}

type noteSeen struct {
	method, sessionID string
	// whether every request of the session was already cancelled when the
	// application's handler saw the notification
	alreadyCancelled bool
}

func newSessionAgent() *sessionAgent {
	return &sessionAgent{notes: make(chan noteSeen, 16)}
}

func (a *sessionAgent) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	if !req.IsNotification() {
		return a.Block(ctx, req)
	}
	seen := noteSeen{method: req.Method, sessionID: req.SessionID, alreadyCancelled: true}
	for _, key := range a.Starts() {
		c := a.Context(key)
		r, _ := acprpc.RequestFromContext(c)
		if r.SessionID == req.SessionID && c.Err() == nil {
			seen.alreadyCancelled = false
		}
	}
	a.notes <- seen
	return nil, nil
}

// The peer's session/cancel and session/close cancel the requests in flight
// for that session (cause ErrSessionCancelled; a prompt answers with its
// marker), leave every other request alone, and still reach the handler,
// after the cancellation.
func TestSessionCancelFromPeer(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		a := newSessionAgent()
		c, p := wiretest.Connect(t, tr, a, nil)
		p.Request("1", "session/prompt", `{"sessionId":"s1","prompt":[]}`)
		p.Request("2", "session/prompt", `{"sessionId":"s2","prompt":[]}`)
		p.Request("3", "x/tool", `{"sessionId":"s1"}`)
		p.Request("4", "x/nosession", `{"other":{"sessionId":"s1"}}`)
		p.Request(`"5"`, "x/array", `["s1"]`)
		for range 5 {
			a.NextStart(t, ctx)
		}

		p.Notify("session/cancel", `{"sessionId":"s1"}`)
		got := p.ExpectByID(ctx, 2)
		assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(got["1"].Result))
		assert.EqualValues(t, acprpc.CodeRequestCancelled, got["3"].Code())
		for range 2 {
			key, cause := a.NextReturn(t, ctx)
			assert.Contains(t, []string{"1", "3"}, key)
			assert.ErrorIs(t, cause, acprpc.ErrSessionCancelled)
			assert.NotErrorIs(t, cause, acprpc.ErrPeerCancelled)
		}
		note := wiretest.Recv(t, ctx, a.notes)
		assert.Equal(t, noteSeen{"session/cancel", "s1", true}, note)
		assert.Equal(t, 3, c.Stats().IncomingInFlight)

		p.Notify("session/close", `{"sessionId":"s2"}`)
		p.ExpectResult(ctx, "2", `{"stopReason":"cancelled"}`)
		_, cause := a.NextReturn(t, ctx)
		assert.ErrorIs(t, cause, acprpc.ErrSessionCancelled)
		assert.Equal(t, noteSeen{"session/close", "s2", true}, wiretest.Recv(t, ctx, a.notes))

		// Unknown, missing or non-string session IDs cancel nothing.
		p.Notify("session/cancel", `{"sessionId":"nope"}`)
		p.Notify("session/cancel", `{"sessionId":1}`)
		p.Notify("session/cancel", `{}`)
		for range 3 {
			wiretest.Recv(t, ctx, a.notes)
		}
		assert.Equal(t, 2, c.Stats().IncomingInFlight)
		assert.Len(t, a.Returns(), 3, "no other request ended")

		p.Cancel("4")
		p.Cancel(`"5"`)
		got = p.ExpectByID(ctx, 2)
		assert.EqualValues(t, acprpc.CodeRequestCancelled, got["4"].Code())
		assert.EqualValues(t, acprpc.CodeRequestCancelled, got[`"5"`].Code())
	})
}

// SessionCancelMethods chooses which notifications cancel a session; an
// empty list turns session cancellation off.
func TestSessionCancelMethodsOption(t *testing.T) {
	ctx := wiretest.Context(t)
	a := newSessionAgent()
	c, p := wiretest.Connect(t, wiretest.Transports[0], a, &acprpc.Options{SessionCancelMethods: []string{}})
	p.Request("1", "session/prompt", `{"sessionId":"s"}`)
	a.NextStart(t, ctx)
	p.Notify("session/cancel", `{"sessionId":"s"}`)
	note := wiretest.Recv(t, ctx, a.notes)
	assert.False(t, note.alreadyCancelled)
	assert.Equal(t, 1, c.Stats().IncomingInFlight)

	a2 := newSessionAgent()
	_, p2 := wiretest.Connect(t, wiretest.Transports[0], a2, &acprpc.Options{SessionCancelMethods: []string{"x/stop"}})
	p2.Request("1", "session/prompt", `{"sessionId":"s"}`)
	a2.NextStart(t, ctx)
	p2.Notify("x/stop", `{"sessionId":"s"}`)
	p2.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
	_, cause := a2.NextReturn(t, ctx)
	assert.ErrorIs(t, cause, acprpc.ErrSessionCancelled)
}

// CancelSession sends session/cancel and cancels this side's requests
// of that session (the agent's permission requests), which answer with the
// cancelled outcome; other sessions are left alone.
func TestSessionCancelSession(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		a := newSessionAgent()
		c, p := wiretest.Connect(t, tr, a, nil)
		p.Request("7", "session/request_permission", `{"sessionId":"s1","toolCall":{"toolCallId":"t"},"options":[]}`)
		p.Request("8", "session/request_permission", `{"sessionId":"s2","toolCall":{"toolCallId":"t"},"options":[]}`)
		a.NextStart(t, ctx)
		a.NextStart(t, ctx)

		require.NoError(t, acprpc.CancelSession(ctx, c, "s1"))
		m := p.ExpectNotification(ctx, "session/cancel")
		assert.Equal(t, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`, m.Raw)
		p.ExpectResult(ctx, "7", `{"outcome":{"outcome":"cancelled"}}`)
		key, cause := a.NextReturn(t, ctx)
		assert.Equal(t, "7", key)
		assert.ErrorIs(t, cause, acprpc.ErrSessionCancelled)
		assert.Equal(t, 1, c.Stats().IncomingInFlight)

		// A session with nothing in flight here: only the notification.
		require.NoError(t, acprpc.CancelSession(ctx, c, "s3"))
		p.ExpectNotification(ctx, "session/cancel")
		assert.Equal(t, 1, c.Stats().IncomingInFlight)
	})
}

// The prompt turn of the facts sheet, with a raw client: the agent's
// prompt handler calls the client with its own context; session/cancel
// cancels the prompt, whose calls each get their own $/cancel_request, and
// the prompt ends with stopReason "cancelled" after its updates.
func TestSessionPromptTurnOnTheWire(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		callErrs := make(chan error, 2)
		agent := wiretest.Mux{
			"session/prompt": func(ctx context.Context, req *acprpc.Request) (any, error) {
				conn := acprpc.ConnFromContext(ctx)
				if err := conn.Notify(ctx, "session/update", map[string]any{"sessionId": req.SessionID, "update": map[string]string{"k": "v"}}); err != nil {
					return nil, err
				}
				var wg sync.WaitGroup
				for _, method := range []string{"terminal/create", "session/request_permission"} {
					wg.Go(func() {
						callErrs <- conn.Call(ctx, method, map[string]string{"sessionId": req.SessionID}, nil)
					})
				}
				wg.Wait()
				return nil, ctx.Err() // an error: the marker answers anyway
			},
		}
		_, p := wiretest.Connect(t, tr, agent, &acprpc.Options{WaitAfterCancel: time.Minute})
		p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}`)
		p.ExpectNotification(ctx, "session/update")
		ids := map[string]string{} // method → ID
		for range 2 {
			m := p.Expect(ctx)
			require.True(t, m.IsRequest(), m.Raw)
			ids[m.Method] = string(m.ID)
		}
		require.Contains(t, ids, "terminal/create")
		require.Contains(t, ids, "session/request_permission")
		assert.ElementsMatch(t, []string{"1", "2"}, []string{ids["terminal/create"], ids["session/request_permission"]})
		p.Notify("session/cancel", `{"sessionId":"s"}`)
		cancels := map[string]bool{}
		for range 2 {
			m := p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
			cancels[string(m.ParamMember("requestId"))] = true
		}
		assert.Equal(t, map[string]bool{"1": true, "2": true}, cancels)
		p.RespondError(ids["terminal/create"], acprpc.CodeRequestCancelled, "Request cancelled")
		p.Respond(ids["session/request_permission"], `{"outcome":{"outcome":"cancelled"}}`)
		p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
		errs := []error{wiretest.Recv(t, ctx, callErrs), wiretest.Recv(t, ctx, callErrs)}
		nils := 0
		for _, err := range errs {
			if err == nil {
				nils++
			} else {
				assert.ErrorIs(t, err, acprpc.ErrCancelled)
			}
		}
		assert.Equal(t, 1, nils, "the permission's marker is a nil error: %v", errs)
	})
}

// The same turn between two Conns: the client cancels with CancelSession;
// its own pending permission request answers with the cancelled outcome,
// the agent's prompt ends with the marker, and the client's Call gets it.
func TestSessionCancelBothSides(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		permAsked := make(chan struct{})
		permCause := make(chan error, 1)
		promptCause := make(chan error, 1)
		var outcome struct{ Outcome struct{ Outcome string } }
		outcomeErr := make(chan error, 1)
		client := wiretest.Mux{
			"session/request_permission": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				close(permAsked)
				<-ctx.Done()
				permCause <- context.Cause(ctx)
				return nil, ctx.Err()
			},
		}
		agent := wiretest.Mux{
			"session/prompt": func(ctx context.Context, req *acprpc.Request) (any, error) {
				err := acprpc.ConnFromContext(ctx).Call(ctx, "session/request_permission",
					map[string]string{"sessionId": req.SessionID}, &outcome, acprpc.WaitAfterCancel(time.Minute))
				outcomeErr <- err
				<-ctx.Done()
				promptCause <- context.Cause(ctx)
				return nil, ctx.Err()
			},
			"session/cancel": func(context.Context, *acprpc.Request) (any, error) { return nil, nil },
		}
		l := wiretest.NewWire(t, wiretest.Side{Handler: client}, wiretest.Side{Handler: agent}, wiretest.With{Relay: tr})
		var res struct{ StopReason string }
		done := goCall(l.A, ctx, "session/prompt", map[string]string{"sessionId": "s"}, &res)
		wiretest.Recv(t, ctx, (<-chan struct{})(permAsked))
		require.NoError(t, acprpc.CancelSession(ctx, l.A, "s"))

		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, "cancelled", res.StopReason)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, permCause), acprpc.ErrSessionCancelled)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, promptCause), acprpc.ErrSessionCancelled)
		assert.NoError(t, wiretest.Recv(t, ctx, outcomeErr))
		assert.Equal(t, "cancelled", outcome.Outcome.Outcome)

		// On the wire: session/cancel before the permission's answer.
		lines := l.Lines(wiretest.AtoB)
		cancelAt, answerAt := -1, -1
		for i, m := range lines {
			switch {
			case m.Method == "session/cancel":
				cancelAt = i
			case m.IsResponse():
				answerAt = i
			}
		}
		assert.True(t, cancelAt >= 0 && answerAt > cancelAt, "session/cancel at %d, answer at %d: %v", cancelAt, answerAt, lines)
		perm := l.Await(ctx, wiretest.BtoA, func(m wiretest.Msg) bool { return m.IsRequestOf("session/request_permission") })
		prompt := l.Await(ctx, wiretest.AtoB, func(m wiretest.Msg) bool { return m.IsRequestOf("session/prompt") })
		assert.Equal(t, 1, l.Count(wiretest.AtoB, func(m wiretest.Msg) bool { return m.IsAnswerTo(string(perm.ID)) }))
		assert.Equal(t, 1, l.Count(wiretest.BtoA, func(m wiretest.Msg) bool { return m.IsAnswerTo(string(prompt.ID)) }))
	})
}

// CancelSession answers the session's permission request at once, and
// leaves its terminal/create to the agent's $/cancel_request, as ACP's
// diagram orders them: cancel, cascade, confirmations, stop reason.
func TestCancelSessionLeavesOtherRequestsToTheCascade(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started := make(chan string, 2)
		block := func(ctx context.Context, req *acprpc.Request) (any, error) {
			started <- req.Method
			return wiretest.Hold(nil)(ctx, req)
		}
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"session/request_permission": block, "terminal/create": block},
			&acprpc.Options{CancelGrace: -1})
		p.Request("7", "session/request_permission", `{"sessionId":"s1","toolCall":{"toolCallId":"t"},"options":[]}`)
		p.Request("8", "terminal/create", `{"sessionId":"s1","command":"make"}`)
		wiretest.Recv(t, ctx, started)
		wiretest.Recv(t, ctx, started)

		require.NoError(t, acprpc.CancelSession(ctx, c, "s1"))
		p.ExpectNotification(ctx, "session/cancel")
		p.ExpectResult(ctx, "7", `{"outcome":{"outcome":"cancelled"}}`)
		assert.Equal(t, 1, c.Stats().IncomingInFlight, "terminal/create waits for the agent's cancel")

		p.Cancel("8")
		p.ExpectError(ctx, "8", acprpc.CodeRequestCancelled)
		assert.Equal(t, 0, c.Stats().IncomingInFlight)
	})
}

// An agent's $/cancel_request for a permission request can reach the
// client while CancelSession is still between sending session/cancel and
// cancelling the request itself (the agent read session/cancel and
// cascaded at once). The permission's context still ends with
// ErrSessionCancelled every time: CancelSession decides the cause before
// it sends, so the cause does not depend on which cancel runs first. The
// peer here cascades from the Sent hook, as the line goes out, so the race
// is as close as it gets.
func TestCancelSessionCauseWinsOverTheAgentsCascade(t *testing.T) {
	ctx := wiretest.Context(t)
	causes := make(chan error, 1)
	asked := make(chan string, 1)
	perm := func(ctx context.Context, req *acprpc.Request) (any, error) {
		asked <- req.ID.String()
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}
	var p *wiretest.Peer
	pending := make(chan string, 1)
	hooks := acprpc.Hooks{Sent: func(_ context.Context, m *acprpc.Message) {
		if m.Method == "session/cancel" {
			p.Cancel(<-pending)
		}
	}}
	c, peer := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"session/request_permission": perm},
		&acprpc.Options{Hooks: hooks})
	p = peer
	for i := range 300 {
		id := strconv.Itoa(i)
		p.Request(id, "session/request_permission", `{"sessionId":"s1","toolCall":{"toolCallId":"t"},"options":[]}`)
		pending <- wiretest.Recv(t, ctx, asked)
		require.NoError(t, acprpc.CancelSession(ctx, c, "s1"))
		require.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrSessionCancelled, "round %d", i)
		p.ExpectNotification(ctx, "session/cancel")
		p.ExpectResult(ctx, id, `{"outcome":{"outcome":"cancelled"}}`)
	}
}

// An agent that never cancels its terminal/create does not hold the client:
// after the grace period, CancelSession cancels it too.
func TestCancelSessionCancelsWhatTheAgentLeaves(t *testing.T) {
	ctx := wiretest.Context(t)
	started := make(chan struct{})
	block := func(ctx context.Context, req *acprpc.Request) (any, error) {
		close(started)
		return wiretest.Hold(nil)(ctx, req)
	}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"terminal/create": block},
		&acprpc.Options{CancelGrace: 50 * time.Millisecond})
	p.Request("8", "terminal/create", `{"sessionId":"s1","command":"make"}`)
	wiretest.Recv(t, ctx, started)
	require.NoError(t, acprpc.CancelSession(ctx, c, "s1"))
	p.ExpectNotification(ctx, "session/cancel")
	m := p.ExpectError(ctx, "8", acprpc.CodeRequestCancelled)
	assert.Contains(t, m.Raw, "Request cancelled")
}

// A v1 session/close sent as a request, as the schema and the TypeScript
// SDK's closeSession send it, cancels the session's requests in flight
// before it is served (cause ErrSessionCancelled), and is answered only
// after the prompt it cancelled has been answered.
func TestV1SessionCloseRequestCancelsThePrompt(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		promptEnded := make(chan error, 1)
		proceed := make(chan struct{})
		closeServed := make(chan struct{})
		h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			switch req.Method {
			case "session/close":
				close(closeServed)
				return struct{}{}, nil
			case "session/prompt":
				<-ctx.Done()
				promptEnded <- context.Cause(ctx)
				<-proceed // the close is served, its answer held
				return nil, context.Cause(ctx)
			}
			return "pong", nil
		})
		_, p := wiretest.Connect(t, tr, h, &acprpc.Options{PinnedVersion: acprpc.ProtocolV1, CancelGrace: -1})
		p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		expectQuiet(t, ctx, p, "2")
		p.Request("3", "session/close", `{"sessionId":"s"}`)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, promptEnded), acprpc.ErrSessionCancelled)
		wiretest.Recv(t, ctx, closeServed)
		close(proceed)
		p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
		p.ExpectResult(ctx, "3", `{}`)
	})
}

// Options.ReportCancelledTurns: a prompt whose turn this side cancelled
// returns stopReason "cancelled" even when the agent answers "end_turn",
// whether the cancel was CancelSession or the call's own context; other
// sessions, other stop reasons and other members are the agent's. Off,
// the agent's answer passes as it is.
func TestReportCancelledTurns(t *testing.T) {
	type turn struct {
		StopReason string          `json:"stopReason"`
		Meta       json.RawMessage `json:"_meta,omitempty"`
	}
	prompt := func(ctx context.Context, c *acprpc.Conn, session string, opts ...acprpc.CallOption) <-chan turn {
		out := make(chan turn, 1)
		go func() {
			var r turn
			err := c.Call(ctx, "session/prompt", map[string]string{"sessionId": session}, &r, opts...)
			if err != nil {
				r.StopReason = "error: " + err.Error()
			}
			out <- r
		}()
		return out
	}
	t.Run("off", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
		got := prompt(ctx, c, "s")
		m := p.ExpectRequest(ctx, "session/prompt")
		require.NoError(t, acprpc.CancelSession(ctx, c, "s"))
		p.ExpectNotification(ctx, "session/cancel")
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		assert.Equal(t, "end_turn", wiretest.Recv(t, ctx, got).StopReason)
	})
	t.Run("session cancelled", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{ReportCancelledTurns: true})
		cancelled := prompt(ctx, c, "s")
		first := p.ExpectRequest(ctx, "session/prompt")
		other := prompt(ctx, c, "t")
		second := p.ExpectRequest(ctx, "session/prompt")
		refused := prompt(ctx, c, "s")
		third := p.ExpectRequest(ctx, "session/prompt")
		require.NoError(t, acprpc.CancelSession(ctx, c, "s"))
		p.ExpectNotification(ctx, "session/cancel")
		p.Respond(string(first.ID), `{"stopReason":"end_turn","_meta":{"tokens":3}}`)
		p.Respond(string(second.ID), `{"stopReason":"end_turn"}`)
		p.Respond(string(third.ID), `{"stopReason":"refusal"}`)
		got := wiretest.Recv(t, ctx, cancelled)
		assert.Equal(t, "cancelled", got.StopReason)
		assert.JSONEq(t, `{"tokens":3}`, string(got.Meta), "the answer's other members are kept")
		assert.Equal(t, "end_turn", wiretest.Recv(t, ctx, other).StopReason, "another session's turn is its own")
		assert.Equal(t, "refusal", wiretest.Recv(t, ctx, refused).StopReason, "only end_turn is rewritten")
	})
	t.Run("call cancelled", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{ReportCancelledTurns: true})
		callCtx, cancel := context.WithCancel(ctx)
		got := prompt(callCtx, c, "s", acprpc.WaitAfterCancel(time.Minute))
		m := p.ExpectRequest(ctx, "session/prompt")
		cancel()
		p.ExpectNotification(ctx, "session/cancel")
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		assert.Equal(t, "cancelled", wiretest.Recv(t, ctx, got).StopReason)
	})
	t.Run("shutdown", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{ReportCancelledTurns: true})
		got := prompt(ctx, c, "s", acprpc.WaitAfterCancel(time.Minute))
		m := p.ExpectRequest(ctx, "session/prompt")
		shut := make(chan error, 1)
		go func() { shut <- c.Shutdown(ctx) }()
		p.ExpectNotification(ctx, "session/cancel")
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		assert.Equal(t, "cancelled", wiretest.Recv(t, ctx, got).StopReason)
		assert.NoError(t, wiretest.Recv(t, ctx, shut))
	})
}

// ACP's cancel shape: the agent's session/cancel handler waits for the
// cancelled turn to end; the turn's session/request_permission call (with
// WaitAfterCancel) gets its cancelled marker, which the client wrote after
// session/cancel. The call cannot have the notifications before its answer
// handled (the session/cancel handler waits for the turn), so it waits only
// as long as WaitAfterCancel lets it: the turn ends, the cancel handler
// returns, and a second turn in another session is not held behind it.
func TestSessionCancelHandlerWaitsForTheTurn(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		turnEnded := make(chan struct{})
		cancelHandled := make(chan struct{})
		prompt := func(ctx context.Context, req *acprpc.Request) (any, error) {
			var perm struct {
				Outcome struct {
					Outcome string `json:"outcome"`
				} `json:"outcome"`
			}
			err := acprpc.ConnFromContext(ctx).Call(ctx, "session/request_permission",
				map[string]string{"sessionId": req.SessionID}, &perm, acprpc.WaitAfterCancel(100*time.Millisecond))
			if req.SessionID == "s1" {
				defer close(turnEnded)
			}
			if err != nil {
				return nil, err
			}
			if perm.Outcome.Outcome == "cancelled" {
				return map[string]string{"stopReason": "cancelled"}, nil
			}
			return map[string]string{"stopReason": "end_turn"}, nil
		}
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"session/prompt": prompt,
			"session/cancel": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				select {
				case <-turnEnded:
				case <-ctx.Done():
				}
				close(cancelHandled)
				return nil, nil
			},
		}, &acprpc.Options{CancelGrace: time.Minute}) // no grace timer answers for the turn

		p.Request("1", "session/prompt", `{"sessionId":"s1"}`)
		perm := p.ExpectRequest(ctx, "session/request_permission")
		p.Notify("session/cancel", `{"sessionId":"s1"}`)
		cancel := p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		assert.JSONEq(t, string(perm.ID), string(cancel.ParamMember("requestId")))
		p.Respond(string(perm.ID), `{"outcome":{"outcome":"cancelled"}}`)
		p.Request("2", "session/prompt", `{"sessionId":"s2"}`)

		answers := map[string]wiretest.Msg{}
		for len(answers) < 2 {
			m := p.Expect(ctx)
			switch {
			case m.IsRequest() && m.Method == "session/request_permission":
				p.Respond(string(m.ID), `{"outcome":{"outcome":"selected","optionId":"allow"}}`)
			case m.IsResponse():
				answers[string(m.ID)] = m
			default:
				t.Fatalf("unexpected line %s", m.Raw)
			}
		}
		assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(answers["1"].Result))
		assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(answers["2"].Result))
		wiretest.Recv(t, ctx, cancelHandled)
	})
}

// A session/close that the agent's Router does not serve is answered
// -32601 and cancels nothing, so that the answer tells the client the
// truth: the session and its turn go on, and session/cancel ends the turn.
// Served, by a Router or through a VersionRouter, it cancels the turn.
func TestSessionCloseNotServedCancelsNothing(t *testing.T) {
	for _, serve := range []bool{false, true} {
		for _, versioned := range []bool{false, true} {
			t.Run(fmt.Sprintf("served %v, VersionRouter %v", serve, versioned), func(t *testing.T) {
				ctx := wiretest.Context(t)
				causes := make(chan error, 1)
				r := acprpc.NewRouter()
				r.Register("ping", acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) { return "pong", nil }))
				r.Register("session/prompt", acprpc.HandlerFunc(func(ctx context.Context, _ *acprpc.Request) (any, error) {
					<-ctx.Done()
					causes <- context.Cause(ctx)
					return nil, ctx.Err()
				}))
				if serve {
					r.Register("session/close", acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) { return struct{}{}, nil }))
				}
				var h acprpc.Handler = r
				if versioned {
					h = acprpc.VersionRouter{V1: r}
				}
				_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{PinnedVersion: acprpc.ProtocolV1})
				p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
				expectQuiet(t, ctx, p, "2")
				p.Request("3", "session/close", `{"sessionId":"s"}`)
				if serve {
					assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrSessionCancelled)
					p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
					p.ExpectResult(ctx, "3", `{}`)
					return
				}
				p.ExpectError(ctx, "3", acprpc.CodeMethodNotFound)
				expectQuiet(t, ctx, p, "4") // the prompt is still in flight
				p.Notify("session/cancel", `{"sessionId":"s"}`)
				assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrSessionCancelled)
				p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
			})
		}
	}
}
