package acprpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

type stopReason struct {
	StopReason string `json:"stopReason"`
}

// holdPermission is a client whose session/request_permission handler
// waits for its context, and says why it ended.
// It answers ping (expectQuiet).
func holdPermission(causes chan<- error) wiretest.Mux {
	m := pinged()
	m["session/request_permission"] = func(ctx context.Context, req *acprpc.Request) (any, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}
	return m
}

// pinged is a client that answers ping (expectQuiet) and nothing else.
func pinged() wiretest.Mux {
	return wiretest.Mux{"ping": func(context.Context, *acprpc.Request) (any, error) { return "pong", nil }}
}

// A prompt call whose context ends cancels its turn as ACP's prompt-turn
// page prescribes: session/cancel for its session, and no $/cancel_request,
// with the agent's pending permission request answered cancelled first, as
// CancelSession does. The call then returns the agent's stopReason
// "cancelled" as a result, with no error: for a cancel, and for a deadline.
func TestPromptContextCancelsTheTurn(t *testing.T) {
	for _, version := range []acprpc.ProtocolVersion{acprpc.ProtocolV1, acprpc.ProtocolV2} {
		for _, how := range []string{"cancel", "deadline"} {
			t.Run(fmt.Sprintf("v%d/%s", version, how), func(t *testing.T) {
				ctx := wiretest.Context(t)
				causes := make(chan error, 1)
				c, p := wiretest.Connect(t, wiretest.Transports[0], holdPermission(causes), &acprpc.Options{PinnedVersion: version})
				callCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				var callErr error = context.Canceled
				if how == "deadline" {
					callCtx, cancel = passingDeadline(ctx)
					callErr = context.DeadlineExceeded
				}
				var res stopReason
				done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s", "prompt": []any{}}, &res)
				prompt := p.ExpectRequest(ctx, "session/prompt")
				p.Request("7", "session/request_permission", `{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}`)
				expectQuiet(t, ctx, p, "8") // the permission request is in flight
				cancel()
				require.ErrorIs(t, callCtx.Err(), callErr)
				m := p.ExpectNotification(ctx, "session/cancel")
				assert.JSONEq(t, `{"sessionId":"s"}`, string(m.Params))
				if version == acprpc.ProtocolV1 {
					// v1's client answers its permission requests itself; v2
					// leaves them to the agent's $/cancel_request.
					p.ExpectResult(ctx, "7", `{"outcome":{"outcome":"cancelled"}}`)
					assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrSessionCancelled)
				}
				p.Respond(string(prompt.ID), `{"stopReason":"cancelled"}`)
				require.NoError(t, wiretest.Recv(t, ctx, done), "the agent's cancelled stop reason is a result")
				assert.Equal(t, "cancelled", res.StopReason)
				if version == acprpc.ProtocolV2 {
					p.Cancel("7")
					p.Expect(ctx) // its answer, cancelled
				}
				expectQuiet(t, ctx, p, "9") // and no $/cancel_request before it
				assert.EqualValues(t, 1, c.Stats().CancelsSent)
			})
		}
	}
}

// The agent that does not confirm the cancel within the wait: the call
// returns an error that says so and which cancel was sent, matching
// ErrCancelled and the context's error. The late answer is dropped, and
// the next prompt on the session gets its own answer.
func TestPromptCancelWaitRunsOut(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{TurnCancelWait: 20 * time.Millisecond})
	callCtx, cancel := context.WithCancel(ctx)
	var res stopReason
	done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s", "prompt": []any{}}, &res)
	first := p.ExpectRequest(ctx, "session/prompt")
	cancel()
	p.ExpectNotification(ctx, "session/cancel")
	err := wiretest.Recv(t, ctx, done)
	assertCancelledCall(t, err, context.Canceled, "session/prompt", "1")
	assert.Contains(t, err.Error(), `sent session/cancel for session "s", and the peer had not answered 20ms later`)
	assert.Contains(t, err.Error(), "WaitAfterCancel")

	done = goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "s", "prompt": []any{}}, &res)
	second := p.ExpectRequest(ctx, "session/prompt")
	p.Respond(string(first.ID), `{"stopReason":"cancelled"}`)
	p.Respond(string(second.ID), `{"stopReason":"end_turn"}`)
	require.NoError(t, wiretest.Recv(t, ctx, done))
	assert.Equal(t, "end_turn", res.StopReason, "the late answer is not the next turn's")

	// Any other call's wait names its $/cancel_request.
	callCtx, cancel = context.WithCancel(ctx)
	done = goCall(c, callCtx, "x/slow", nil, nil, acprpc.WaitAfterCancel(20*time.Millisecond))
	slow := p.ExpectRequest(ctx, "x/slow")
	cancel()
	p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
	err = wiretest.Recv(t, ctx, done)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.Contains(t, err.Error(), "sent $/cancel_request for request "+string(slow.ID)+", and the peer had not answered 20ms later")
}

// A call's own WaitAfterCancel overrides TurnCancelWait; a negative
// TurnCancelWait returns at once, with the cancel still sent.
func TestPromptCancelWaitOptions(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{TurnCancelWait: -1})
	callCtx, cancel := context.WithCancel(ctx)
	done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
	p.ExpectRequest(ctx, "session/prompt")
	cancel()
	p.ExpectNotification(ctx, "session/cancel")
	err := wiretest.Recv(t, ctx, done)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.Contains(t, err.Error(), "cancelled: context canceled")
	assert.NotContains(t, err.Error(), "had not answered")

	c2, p2 := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	callCtx, cancel = context.WithCancel(ctx)
	done = goCall(c2, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil, acprpc.WaitAfterCancel(time.Millisecond))
	p2.ExpectRequest(ctx, "session/prompt")
	cancel()
	p2.ExpectNotification(ctx, "session/cancel")
	assert.Contains(t, wiretest.Recv(t, ctx, done).Error(), "had not answered 1ms later")
}

// CancelSession, then the call's context: one session/cancel, which the
// call's wait names.
func TestPromptCancelAfterCancelSession(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], pinged(), &acprpc.Options{TurnCancelWait: 20 * time.Millisecond})
	callCtx, cancel := context.WithCancel(ctx)
	done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
	p.ExpectRequest(ctx, "session/prompt")
	require.NoError(t, acprpc.CancelSession(ctx, c, "s"))
	p.ExpectNotification(ctx, "session/cancel")
	cancel()
	assert.Contains(t, wiretest.Recv(t, ctx, done).Error(), `sent session/cancel for session "s" (by CancelSession)`)
	expectQuiet(t, ctx, p, "1")
}

// Stress: a CancelSession made once the agent has read the prompt always
// counts as the turn's cancel, however the prompt's write races it: the
// call whose context ends afterwards sends no second session/cancel.
func TestPromptCancelAfterCancelSessionStress(t *testing.T) {
	ctx := wiretest.Context(t)
	for i := range 200 {
		c, p := wiretest.Connect(t, wiretest.Transports[0], pinged(), &acprpc.Options{TurnCancelWait: time.Millisecond})
		callCtx, cancel := context.WithCancel(ctx)
		done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
		p.ExpectRequest(ctx, "session/prompt")
		require.NoError(t, acprpc.CancelSession(ctx, c, "s"))
		p.ExpectNotification(ctx, "session/cancel")
		cancel()
		require.Contains(t, wiretest.Recv(t, ctx, done).Error(), "(by CancelSession)", "run %d", i)
		expectQuiet(t, ctx, p, "1")
		require.NoError(t, c.Close())
	}
}

// A prompt whose params name no session cannot be cancelled by
// session/cancel: it gets $/cancel_request.
func TestPromptWithoutSessionGetsCancelRequest(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	callCtx, cancel := context.WithCancel(ctx)
	done := goCall(c, callCtx, "session/prompt", map[string]any{"prompt": []any{}}, nil)
	m := p.ExpectRequest(ctx, "session/prompt")
	cancel()
	assert.True(t, p.ExpectNotification(ctx, acprpc.MethodCancelRequest).IsCancelOf(string(m.ID)))
	p.RespondError(string(m.ID), acprpc.CodeRequestCancelled, "Request cancelled")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled)
}

// Shutdown cancels a turn in flight with session/cancel, and the call gets
// the agent's stop reason; Close sends session/cancel for the turns in
// flight ahead of the transport's end.
func TestShutdownAndCloseCancelTheTurn(t *testing.T) {
	t.Run("shutdown", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
		var res stopReason
		done := goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "s"}, &res)
		m := p.ExpectRequest(ctx, "session/prompt")
		shut := make(chan error, 1)
		go func() { shut <- c.Shutdown(ctx) }()
		p.ExpectNotification(ctx, "session/cancel")
		p.Respond(string(m.ID), `{"stopReason":"cancelled"}`)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, "cancelled", res.StopReason)
		assert.NoError(t, wiretest.Recv(t, ctx, shut))
	})
	t.Run("close", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
		done := goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
		p.ExpectRequest(ctx, "session/prompt")
		other := goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "t"}, nil)
		p.ExpectRequest(ctx, "session/prompt")
		require.NoError(t, c.Close())
		var sessions []string
		for _, m := range p.Rest(ctx) {
			require.Equal(t, "session/cancel", m.Method, m.Raw)
			sessions = append(sessions, string(m.ParamMember("sessionId")))
		}
		assert.ElementsMatch(t, []string{`"s"`, `"t"`}, sessions)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrConnClosed)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, other), acprpc.ErrConnClosed)
	})
}

// A prompt on a session whose cancelled turn the agent has not answered
// yet (its call returned when its wait ran out) goes out only once that
// answer is read, so that nothing of the earlier turn can be taken for the
// new one's; an agent that never answers holds it for TurnCancelWait, after
// which it goes out with a warning.
func TestPromptWaitsForTheCancelledTurnsAnswer(t *testing.T) {
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("ReleaseOnCancel %v", release), func(t *testing.T) {
			var opts []acprpc.CallOption
			if release {
				opts = append(opts, acprpc.ReleaseOnCancel())
			}
			heldUntilAnswered(t, opts...)
		})
	}
	heldAndBounded(t)
}

// heldUntilAnswered: the next prompt goes out once the cancelled turn's
// call, made with opts, is answered.
func heldUntilAnswered(t *testing.T, opts ...acprpc.CallOption) {
	ctx := wiretest.Context(t)
	held := logSignal{msg: "acprpc: holding a prompt until the agent answers the session's cancelled turn", seen: make(chan struct{})}
	c, p := wiretest.Connect(t, wiretest.Transports[0], pinged(), &acprpc.Options{Logger: slog.New(&held), TurnCancelWait: time.Minute})
	callCtx, cancel := context.WithCancel(ctx)
	done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil, append(opts, acprpc.WaitAfterCancel(time.Millisecond))...)
	first := p.ExpectRequest(ctx, "session/prompt")
	cancel()
	p.ExpectNotification(ctx, "session/cancel")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled)

	other := goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "t"}, nil)
	p.ExpectRequest(ctx, "session/prompt") // another session's prompt is not held
	var res stopReason
	done = goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "s"}, &res)
	wiretest.Recv(t, ctx, (<-chan struct{})(held.seen))
	expectQuiet(t, ctx, p, "1") // held: no prompt before the pong
	p.Notify("session/update", `{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}`)
	p.Respond(string(first.ID), `{"stopReason":"cancelled"}`)
	second := p.ExpectRequest(ctx, "session/prompt")
	p.Respond(string(second.ID), `{"stopReason":"end_turn"}`)
	require.NoError(t, wiretest.Recv(t, ctx, done))
	assert.Equal(t, "end_turn", res.StopReason)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, wiretest.Recv(t, ctx, other), acprpc.ErrConnClosed)
}

// heldAndBounded: an agent that never answers holds the next prompt for
// TurnCancelWait, and a held prompt whose context ends is not sent.
func heldAndBounded(t *testing.T) {
	ctx := wiretest.Context(t)
	records := &wiretest.Recorder{}
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{Logger: records.Logger(), TurnCancelWait: 20 * time.Millisecond})
	callCtx, cancel := context.WithCancel(ctx)
	done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
	p.ExpectRequest(ctx, "session/prompt")
	cancel()
	p.ExpectNotification(ctx, "session/cancel")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled)
	done = goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
	second := p.ExpectRequest(ctx, "session/prompt")
	_, warned := records.FindLogged(slog.LevelWarn, "acprpc: the agent has not answered a prompt whose turn was cancelled")
	assert.True(t, warned)
	p.Respond(string(second.ID), `{"stopReason":"end_turn"}`)
	require.NoError(t, wiretest.Recv(t, ctx, done))

	// A held prompt whose context ends is not sent.
	c, p = wiretest.Connect(t, wiretest.Transports[0], pinged(), &acprpc.Options{TurnCancelWait: time.Minute})
	callCtx, cancel = context.WithCancel(ctx)
	done = goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil, acprpc.WaitAfterCancel(time.Millisecond))
	p.ExpectRequest(ctx, "session/prompt")
	cancel()
	p.ExpectNotification(ctx, "session/cancel")
	wiretest.Recv(t, ctx, done)
	callCtx, cancel = context.WithCancel(ctx)
	done = goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
	cancel()
	err := wiretest.Recv(t, ctx, done)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.ErrorIs(t, err, context.Canceled)
	expectQuiet(t, ctx, p, "1")
}

// passingDeadline returns a context whose deadline passes when pass is
// called: its Err is then context.DeadlineExceeded, as a deadline's is,
// at a moment the test chooses rather than the clock.
func passingDeadline(parent context.Context) (ctx context.Context, pass func()) {
	d := &deadlineCtx{Context: parent, done: make(chan struct{})}
	var once sync.Once
	return d, func() { once.Do(func() { close(d.done) }) }
}

type deadlineCtx struct {
	context.Context
	done chan struct{}
}

func (d *deadlineCtx) Deadline() (time.Time, bool) { return time.Now(), true }
func (d *deadlineCtx) Done() <-chan struct{}       { return d.done }
func (d *deadlineCtx) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// logSignal is a log handler that closes seen once a message containing
// msg is logged.
type logSignal struct {
	msg  string
	seen chan struct{}
	once sync.Once
}

func (h *logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h *logSignal) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logSignal) WithGroup(string) slog.Handler            { return h }
func (h *logSignal) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.msg) {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

// An idle cancel changes nothing, on either side: a prompt's context
// ending as the agent answers (its session/cancel then reaches an agent
// with no turn), and a CancelSession just after the answer (a timer firing
// late, a double click), are ignored by the acprpc agent, cost the client
// nothing, and the next prompt on the session gets a normal turn. The
// cancels race the answer: the client cancels from the turn's own update.
func TestIdleCancelChangesNothing(t *testing.T) {
	for _, version := range []acprpc.ProtocolVersion{acprpc.ProtocolV1, acprpc.ProtocolV2} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			ctx := wiretest.Context(t)
			var cancelTurn func()
			var mu sync.Mutex
			client := wiretest.Mux{"session/update": func(context.Context, *acprpc.Request) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				if cancelTurn != nil {
					cancelTurn()
				}
				return nil, nil
			}}
			agent := wiretest.Mux{
				"session/prompt": func(ctx context.Context, req *acprpc.Request) (any, error) {
					if err := acprpc.ConnFromContext(ctx).Notify(ctx, "session/update", map[string]any{"sessionId": req.SessionID}); err != nil {
						return nil, err
					}
					if ctx.Err() != nil {
						return stopReason{"cancelled"}, nil
					}
					return stopReason{"end_turn"}, nil
				},
				"session/cancel": func(context.Context, *acprpc.Request) (any, error) { return nil, nil },
			}
			opts := &acprpc.Options{PinnedVersion: version, ReportCancelledTurns: true}
			l := wiretest.NewWire(t, wiretest.Side{Handler: client, Options: opts}, wiretest.Side{Handler: agent, Options: &acprpc.Options{PinnedVersion: version}})
			c := l.A
			params := map[string]any{"sessionId": "s", "prompt": []any{}}
			for round := range 200 {
				callCtx, cancel := context.WithCancel(ctx)
				mu.Lock()
				cancelTurn = cancel
				mu.Unlock()
				var res stopReason
				err := c.Call(callCtx, "session/prompt", params, &res)
				mu.Lock()
				cancelTurn = nil
				mu.Unlock()
				cancel()
				// The answer may be read before the update's handler has
				// run: the call then ends cancelled, with the answer in it.
				if err != nil {
					require.ErrorIs(t, err, acprpc.ErrCancelled, "round %d", round)
				}
				require.Contains(t, []string{"end_turn", "cancelled"}, res.StopReason, "round %d", round)
				if round%2 == 0 {
					require.NoError(t, acprpc.CancelSession(ctx, c, "s"), "round %d: a cancel after the answer", round)
				}
				res = stopReason{}
				require.NoError(t, c.Call(ctx, "session/prompt", params, &res), "round %d", round)
				require.Equal(t, "end_turn", res.StopReason, "round %d: the turn after an idle cancel is a normal one", round)
			}
			assert.Zero(t, c.Stats().OutgoingInFlight)
			assert.Zero(t, c.Stats().IncomingInFlight)
			assert.Zero(t, l.B.Stats().IncomingInFlight)
		})
	}
}

// CancelSession for a session whose prompt is being called at that moment:
// the turn is cancelled or not, and the call returns its stop reason
// either way; under -race, the turn the call records and the cancel that
// looks for it do not race.
func TestCancelSessionRacesPromptCall(t *testing.T) {
	ctx := wiretest.Context(t)
	agent := wiretest.Mux{"session/prompt": func(ctx context.Context, req *acprpc.Request) (any, error) {
		return stopReason{"end_turn"}, nil
	}}
	l := wiretest.NewWire(t, wiretest.Side{Options: &acprpc.Options{ReportCancelledTurns: true}}, wiretest.Side{Handler: agent})
	for round := range 200 {
		cancelled := make(chan error, 1)
		go func() { cancelled <- acprpc.CancelSession(ctx, l.A, "s") }()
		var res stopReason
		require.NoError(t, l.A.Call(ctx, "session/prompt", map[string]any{"sessionId": "s"}, &res), "round %d", round)
		require.Contains(t, []string{"end_turn", "cancelled"}, res.StopReason, "round %d", round)
		require.NoError(t, wiretest.Recv(t, ctx, cancelled))
	}
}
